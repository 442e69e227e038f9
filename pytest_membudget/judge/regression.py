"""Comparing a run with a baseline: tolerances and the regression rule. Pure: no pytest.

A probe's slope *regressed* when the new run's lower bound is above the baseline's upper
bound by more than the tolerance::

    regressed  <=>  new.lower > base.upper + margin  and  new.lower > 0
    margin     =    max(absolute, relative * |base.upper|)

Both bounds are the one-sided bounds of each run's own slope interval, so run-to-run noise
that the intervals already span never fails; only a change that both runs' data support does.
The second condition keeps a run that is not shown to grow at all (a series that shrank
less than before) from counting. A bound that could not be established (too few samples)
never counts as a regression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.judge.spec import SpecError, parse_quantity
from pytest_membudget.vocabulary import BudgetKind, Change

ALL = "all"
REGRESSED, WORSE, BETTER, SAME, UNJUDGED = (
    Change.REGRESSED, Change.WORSE, Change.BETTER, Change.SAME, Change.UNJUDGED)
_PERCENT = re.compile(r"^\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


class ToleranceError(ValueError):
    """A tolerance that cannot be used; the message says where and what to write."""


@dataclass(frozen=True)
class Tolerance:
    """How far a probe's slope may rise above the baseline before it is a regression."""

    relative: float = 0.0
    #: In the probe's unit per iteration (bytes, objects, seconds).
    absolute: float = 0.0
    gated: bool = True

    def margin(self, base_upper: float) -> float:
        return max(self.absolute, self.relative * abs(base_upper))

    def merge(self, other: Tolerance) -> Tolerance:
        """Two tolerances for one probe: the larger margin of the two applies."""
        if not (self.gated and other.gated):
            return Tolerance(gated=False)
        return Tolerance(max(self.relative, other.relative), max(self.absolute, other.absolute))


@dataclass(frozen=True)
class Tolerances:
    """Tolerances by probe; ``all`` covers every probe not named. The default is no margin."""

    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)

    def for_probe(self, probe: str) -> Tolerance:
        return self.tolerances.get(probe, self.tolerances.get(ALL, Tolerance()))


def parse_tolerance(text: str, where: str) -> tuple[str, Tolerance]:
    """``rss:10%``, ``heap:64 KiB/iter``, ``gc_objects:2``, ``iter_time:off``, ``all:5%``."""
    probe, sep, value = text.partition(":")
    probe, value = probe.strip(), value.strip()
    example = "e.g. rss:10% or heap:64 KiB/iter or iter_time:off"
    if not sep or not probe or not value:
        raise ToleranceError(f"tolerance {text!r} {where}: write <probe>:<tolerance>, {example}")
    if probe != ALL and probe not in PROBES:
        raise ToleranceError(
            f"tolerance {text!r} {where}: unknown probe {probe!r}; use one of "
            f"{', '.join(sorted(PROBES))}, or {ALL!r} for every probe")
    if value.lower() == "off":
        return probe, Tolerance(gated=False)
    percent = _PERCENT.match(value)
    if percent:
        return probe, Tolerance(relative=float(percent["num"]) / 100.0)
    if probe == ALL:
        raise ToleranceError(
            f"tolerance {text!r} {where}: {ALL!r} takes a relative tolerance (e.g. all:10%) or "
            "off, since probes have different units; give absolute tolerances per probe")
    try:
        absolute = parse_quantity(PROBES[probe], BudgetKind.SLOPE, value, where)
    except SpecError as exc:
        raise ToleranceError(f"tolerance {text!r}: {exc}; or a percentage such as "
                             f"{probe}:10%") from None
    return probe, Tolerance(absolute=absolute)


def parse_tolerances(lines: Iterable[str], where: str) -> Tolerances:
    tolerances: dict[str, Tolerance] = {}
    for line in lines:
        if not line.strip():
            continue
        probe, tolerance = parse_tolerance(line, where)
        tolerances[probe] = tolerances[probe].merge(tolerance) if probe in tolerances \
            else tolerance
    return Tolerances(tolerances)


def classify(base_ci: Any, new_ci: Any, tolerance: Tolerance) -> Change:
    """The rule of this module for one probe's slope intervals ``[lower, upper]``."""
    try:
        base_low, base_up = finite_or_none(base_ci[0]), finite_or_none(base_ci[1])
        new_low, new_up = finite_or_none(new_ci[0]), finite_or_none(new_ci[1])
    except (TypeError, IndexError, KeyError):
        return UNJUDGED
    if new_low is not None and base_up is not None and new_low > base_up:
        regressed = (tolerance.gated and new_low > 0
                     and new_low > base_up + tolerance.margin(base_up))
        return REGRESSED if regressed else WORSE
    if new_up is not None and base_low is not None and new_up < base_low:
        return BETTER
    if None in (base_low, base_up, new_low, new_up):
        return UNJUDGED
    return SAME


@dataclass(frozen=True)
class ProbeChange:
    nodeid: str
    probe: str
    base: Mapping[str, Any]
    new: Mapping[str, Any]
    tolerance: Tolerance
    status: Change

    @property
    def change(self) -> float | None:
        """Relative change of the slope estimate, or None when the baseline slope is 0."""
        b, n = finite_or_none(self.base.get("slope")), finite_or_none(self.new.get("slope"))
        if b is None or n is None or b == 0:
            return None
        return (n - b) / abs(b)


@dataclass(frozen=True)
class Comparison:
    changes: tuple[ProbeChange, ...]
    #: Budgeted tests of the baseline that the new run does not have, and the other way round.
    missing: tuple[str, ...]
    added: tuple[str, ...]

    @property
    def regressions(self) -> tuple[ProbeChange, ...]:
        return tuple(c for c in self.changes if c.status == REGRESSED)

    def count(self, status: Change) -> int:
        return sum(1 for c in self.changes if c.status == status)


def compare(base: Mapping[str, Any], new: Mapping[str, Any], policy: Tolerances) -> Comparison:
    """Every probe that both documents measured for the same test, classified."""
    base_tests: Mapping[str, Any] = base.get("tests", {})
    new_tests: Mapping[str, Any] = new.get("tests", {})
    changes = []
    for nodeid, new_test in new_tests.items():
        base_test = base_tests.get(nodeid)
        if base_test is None:
            continue
        for probe, new_probe in new_test.get("probes", {}).items():
            base_probe = base_test.get("probes", {}).get(probe)
            if base_probe is None:
                continue
            tolerance = policy.for_probe(probe)
            status = classify(base_probe.get("ci"), new_probe.get("ci"), tolerance)
            changes.append(ProbeChange(nodeid, probe, base_probe, new_probe, tolerance, status))
    return Comparison(
        tuple(changes),
        missing=tuple(n for n in base_tests if n not in new_tests),
        added=tuple(n for n in new_tests if n not in base_tests),
    )
