"""Tolerances of the comparison with a baseline: how far a figure may rise before it is a
regression. Pure: no pytest.

A tolerance has a relative part (a share of the baseline's figure) and an absolute part (in
the figure's unit: per iteration for a slope, a size or a count for a rise or a peak); the
larger margin of the two applies. Tolerances are written with the budgets' words: ``rss``
for the slope of RSS, ``rss_rise`` and ``rss_peak`` for its footprint figures, ``all`` for
every figure without its own. A part a tolerance leaves unset comes from the one beneath it:
the figure's own, then ``all``, then the figure's default (:func:`default_tolerance`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.spec import SpecError, parse_quantity, split_budget_key
from pytest_membudget.vocabulary import BudgetKind, ProbeKind

ALL = "all"
#: The figures the comparison judges.
COMPARED = (BudgetKind.SLOPE, BudgetKind.RISE, BudgetKind.PEAK)
_PERCENT = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


class ToleranceError(ValueError):
    """A tolerance that cannot be used; the message says where and what to write."""


@dataclass(frozen=True)
class Tolerance:
    """How far a figure may rise above the baseline's before it is a regression. A part left
    ``None`` is taken from the tolerance beneath (:meth:`over`); it counts as 0 alone."""

    relative: float | None = None
    #: In the figure's unit: per iteration for a slope; bytes or a count for a rise or peak.
    absolute: float | None = None
    gated: bool = True

    def margin(self, base: float) -> float:
        return max(self.absolute or 0.0, (self.relative or 0.0) * abs(base))

    def merge(self, other: Tolerance) -> Tolerance:
        """Two tolerances for one figure: the larger of each part applies; ``off`` wins."""
        if not (self.gated and other.gated):
            return Tolerance(gated=False)
        return Tolerance(_larger(self.relative, other.relative),
                         _larger(self.absolute, other.absolute))

    def over(self, under: Tolerance) -> Tolerance:
        """This tolerance, with the parts it leaves unset taken from ``under``."""
        return Tolerance(under.relative if self.relative is None else self.relative,
                         under.absolute if self.absolute is None else self.absolute,
                         self.gated)


def _larger(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


#: A rise or a peak is one reading of one call, without bounds: its default tolerance is the
#: share of the baseline's figure that repeated runs of unchanged code spread over (a rise of
#: Python objects in a shared process moves with what earlier tests freed, the more so when
#: their order changes), and at least a floor: for sizes ONE_SHOT_FLOOR (a small footprint
#: moves by more than its share), for counts the probe's resolution (catalog).
ONE_SHOT_SPREAD = 0.30
ONE_SHOT_FLOOR = 4.0 * 1024 * 1024


def default_tolerance(probe: str, kind: BudgetKind) -> Tolerance:
    """A slope's default margin comes on top of the two runs' bounds: the probe's run spread
    (catalog), the share by which its slope for unchanged code moves between runs beyond
    them. A rise's or a peak's is the spread of one reading (ONE_SHOT_SPREAD, and a floor)."""
    info = PROBES.get(probe)
    if BudgetKind(kind) is BudgetKind.SLOPE:
        return Tolerance(info.run_spread if info is not None else 0.0, 0.0)
    if info is None:
        return Tolerance(ONE_SHOT_SPREAD, 0.0)
    floor = ONE_SHOT_FLOOR if info.kind is ProbeKind.BYTES else 0.0
    return Tolerance(ONE_SHOT_SPREAD, max(floor, info.resolution))


def figure_key(probe: str, kind: BudgetKind) -> str:
    """The word that names a figure in tolerances: ``rss``, ``rss_rise``, ``rss_peak``."""
    return probe + BudgetKind(kind).suffix


@dataclass(frozen=True)
class Tolerances:
    """The tolerances given, by figure (``rss``, ``rss_rise``) and ``all``."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)

    def for_figure(self, probe: str, kind: BudgetKind = BudgetKind.SLOPE) -> Tolerance:
        """The figure's own tolerance over ``all`` over the default of its kind."""
        default = default_tolerance(probe, kind)
        under = self.tolerances[ALL].over(default) if ALL in self.tolerances else default
        own = self.tolerances.get(figure_key(probe, kind))
        return own.over(under) if own is not None else under

    def for_probe(self, probe: str) -> Tolerance:
        """The tolerance of a probe's slope."""
        return self.for_figure(probe, BudgetKind.SLOPE)


EXAMPLE = "e.g. rss:10%, heap:64 KiB/iter, rss_rise:32 MiB, rss_peak:5% or iter_time:off"


def parse_tolerance(text: str, where: str) -> tuple[str, Tolerance]:
    """``rss:10%``, ``heap:64 KiB/iter``, ``rss_rise:32 MiB``, ``iter_time:off``,
    ``all:5%``: the figure's word and its tolerance."""
    key, sep, value = text.partition(":")
    key, value = key.strip(), value.strip()
    if not sep or not key or not value:
        raise ToleranceError(f"tolerance {text!r} {where}: write <figure>:<tolerance>, "
                             f"{EXAMPLE}")
    probe, kind = _figure(key, text, where)
    if value.lower() == "off":
        return key, Tolerance(gated=False)
    percent = _PERCENT.match(value)
    if percent:
        return key, Tolerance(relative=float(percent["num"]) / 100.0)
    if key == ALL:
        raise ToleranceError(
            f"tolerance {text!r} {where}: {ALL!r} takes a relative tolerance (e.g. all:10%) or "
            "off, since figures have different units; give absolute tolerances per figure")
    try:
        absolute = parse_quantity(PROBES[probe], kind, value, where)
    except SpecError as exc:
        raise ToleranceError(f"tolerance {text!r}: {exc}; or a percentage such as "
                             f"{key}:10%") from None
    return key, Tolerance(absolute=absolute)


def _figure(key: str, text: str, where: str) -> tuple[str, BudgetKind]:
    if key == ALL:
        return ALL, BudgetKind.SLOPE
    try:
        probe, kind = split_budget_key(key)
    except SpecError:
        raise ToleranceError(
            f"tolerance {text!r} {where}: unknown figure {key!r}; use a probe for its slope "
            f"({', '.join(sorted(PROBES))}), <probe>_rise or <probe>_peak for a footprint, "
            f"or {ALL!r} for every figure") from None
    if kind not in COMPARED:
        raise ToleranceError(
            f"tolerance {text!r} {where}: the comparison judges slopes, rises and peaks, not "
            f"{kind.value}; use {probe}: (its slope), {probe}_rise: or {probe}_peak:")
    return probe, kind


def parse_tolerances(lines: Iterable[str], where: str) -> Tolerances:
    tolerances: dict[str, Tolerance] = {}
    for line in lines:
        if not line.strip():
            continue
        key, tolerance = parse_tolerance(line, where)
        tolerances[key] = tolerances[key].merge(tolerance) if key in tolerances else tolerance
    return Tolerances(tolerances)
