"""Comparing a run with a baseline: the regression rule. Pure: no pytest.

Two kinds of figure, two rules of one shape ("above the baseline by more than the margin"):

*Slopes* come with each run's one-sided bounds. A slope *regressed* when the new run's lower
bound is above the baseline's upper bound by more than the margin, and the growth over the
whole measured window (per iteration) is above the baseline's by more than the margin too,
and by more than the probe's run floor (catalog) over the new window::

    regressed  <=>  new.lower > base.upper + margin(base.upper)  and  new.lower > 0
                    and  new.rate > base.rate + max(margin(base.rate), run_floor / new.count)
    margin(x)  =    max(absolute, relative * |x|)

so run-to-run noise that the intervals already span never fails; only a change that both runs'
data support does. The second condition keeps a run that is not shown to grow at all (a
series that shrank less than before) from counting. The third asks the whole window to
agree: an allocator that reuses memory freed before the run moves growth between the halves
of the window, so that the judged half's slope of a leak reads 0 in one run and its full rate
in the next while the window grew alike in both; and a page probe can miss a small leak over
the whole window where freed memory serves it (its run floor). A bound that could not be
established (too few samples) never counts as a regression; a report without the window's
growth is judged on the bounds alone.

*Rises and peaks* (a footprint budget's figures, and every phase's rise) are one reading of
one call, without bounds: one regressed when it is above the baseline's by more than the
margin, whose default covers what repeated runs of unchanged code spread over::

    regressed  <=>  new > base + margin
    margin     =    max(absolute, relative * |base|)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_membudget.catalog import PHASE_PROBE, PROBES
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.judge.tolerance import Tolerance, Tolerances, figure_key
from pytest_membudget.vocabulary import BudgetKind, Change

REGRESSED, WORSE, BETTER, SAME, UNJUDGED = (
    Change.REGRESSED, Change.WORSE, Change.BETTER, Change.SAME, Change.UNJUDGED)
SLOPE, RISE, PEAK = BudgetKind.SLOPE, BudgetKind.RISE, BudgetKind.PEAK


def classify(base_ci: Any, new_ci: Any, tolerance: Tolerance,
             rates: tuple[Any, Any] = (None, None), floor: float = 0.0) -> Change:
    """The rule for one probe's slope intervals ``[lower, upper]``; ``rates``: the growth over
    each run's window per iteration, baseline first (None where a report has none);
    ``floor``: the probe's run floor spread over the new window, per iteration."""
    try:
        base_low, base_up = finite_or_none(base_ci[0]), finite_or_none(base_ci[1])
        new_low, new_up = finite_or_none(new_ci[0]), finite_or_none(new_ci[1])
    except (TypeError, IndexError, KeyError):
        return UNJUDGED
    if new_low is not None and base_up is not None and new_low > base_up:
        regressed = (tolerance.gated and new_low > 0
                     and new_low > base_up + tolerance.margin(base_up)
                     and _window_agrees(rates, tolerance, floor))
        return REGRESSED if regressed else WORSE
    if new_up is not None and base_low is not None and new_up < base_low:
        return BETTER
    if None in (base_low, base_up, new_low, new_up):
        return UNJUDGED
    return SAME


def _window_agrees(rates: tuple[Any, Any], tolerance: Tolerance, floor: float) -> bool:
    base_rate, new_rate = finite_or_none(rates[0]), finite_or_none(rates[1])
    if base_rate is None or new_rate is None:
        return True
    return new_rate > base_rate + max(tolerance.margin(base_rate), floor)


def classify_once(base: Any, new: Any, tolerance: Tolerance) -> Change:
    """The rule for a figure of one reading (a rise, a peak): ``worse`` is above the margin
    with the figure not gated (``off``), ``better`` below the baseline by more than it."""
    base_value, new_value = finite_or_none(base), finite_or_none(new)
    if base_value is None or new_value is None:
        return UNJUDGED
    margin = tolerance.margin(base_value)
    if new_value > base_value + margin:
        return REGRESSED if tolerance.gated else WORSE
    if new_value < base_value - margin:
        return BETTER
    return SAME


@dataclass(frozen=True)
class Reading:
    """One run's figure: a slope with its bounds and the growth over the window per
    iteration, or a rise or peak (no bounds)."""

    value: float | None
    lower: float | None = None
    upper: float | None = None
    rate: float | None = None
    #: The measured iterations the slope and the rate are of.
    count: float | None = None


@dataclass(frozen=True)
class ProbeChange:
    """One figure of one test, in both runs, and how it changed."""

    nodeid: str
    probe: str
    base: Reading
    new: Reading
    tolerance: Tolerance
    status: Change
    kind: BudgetKind = SLOPE
    #: The phase whose figure this is; None for the test's run.
    phase: str | None = None

    @property
    def key(self) -> str:
        """The figure's word, as tolerances name it: ``rss``, ``rss_rise``."""
        return figure_key(self.probe, self.kind)

    @property
    def change(self) -> float | None:
        """Relative change of the estimate, or None when the baseline's is 0."""
        b, n = self.base.value, self.new.value
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

    def count(self, status: Change, *, footprint: bool | None = None) -> int:
        """Figures of this status; ``footprint``: only rises and peaks (True) or slopes."""
        return sum(1 for c in self.changes if c.status == status
                   and (footprint is None or c.kind.footprint == footprint))


def slope_reading(probe: Mapping[str, Any], iterations: Any) -> Reading:
    """A probe's slope, its bounds and its growth per iteration over the window they are of:
    the run's, or the checkpoint's where the probe settled while the run went on."""
    ci = probe.get("ci")
    lower = upper = None
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        lower, upper = finite_or_none(ci[0]), finite_or_none(ci[1])
    growth = finite_or_none(probe.get("growth"))
    count = finite_or_none(probe.get("settled_at") or iterations)
    rate = growth / count if growth is not None and count else None
    return Reading(finite_or_none(probe.get("slope")), lower, upper, rate, count)


def footprint_value(probe: Mapping[str, Any], kind: BudgetKind) -> float | None:
    """A probe's rise or peak; a rise from its start and peak where a report has no rise."""
    if kind is PEAK:
        return finite_or_none(probe.get("peak"))
    rise = finite_or_none(probe.get("rise"))
    if rise is None:
        peak, start = finite_or_none(probe.get("peak")), finite_or_none(probe.get("start"))
        rise = peak - start if peak is not None and start is not None else None
    return rise


def _budgeted(probe: Mapping[str, Any]) -> set[BudgetKind]:
    budgets = probe.get("budgets")
    if not isinstance(budgets, Mapping):
        return set()
    return {kind for kind in BudgetKind if budgets.get(kind.value) is not None}


def run_figures(test: Mapping[str, Any]) -> Iterator[tuple[str, BudgetKind, Mapping[str, Any]]]:
    """The figures of a test's run the gate compares: each probe's slope, unless every budget
    of the probe is a rise or a peak (a footprint run's slope is of one call), and the rise
    and peak of the probes budgeted on them."""
    probes = test.get("probes")
    for name, probe in (probes.items() if isinstance(probes, Mapping) else ()):
        if not isinstance(probe, Mapping):
            continue
        budgeted = _budgeted(probe)
        if not budgeted or not all(kind.footprint for kind in budgeted):
            yield name, SLOPE, probe
        for kind in (RISE, PEAK):
            if kind in budgeted:
                yield name, kind, probe


def phase_figures(phase: Mapping[str, Any]) -> Iterator[tuple[str, BudgetKind, float | None]]:
    """The figures of a phase the gate compares: its RSS rise (every phase reports it) and
    the rise or peak of every other probe it budgets."""
    yield PHASE_PROBE, RISE, finite_or_none(phase.get("rise"))
    probes = phase.get("probes") if isinstance(phase.get("probes"), Mapping) else {}
    for budget in phase.get("budgets") or ():
        if not isinstance(budget, Mapping):
            continue
        probe, kind = str(budget.get("probe")), budget.get("kind")
        if kind not in (RISE.value, PEAK.value) or (probe, kind) == (PHASE_PROBE, RISE.value):
            continue
        data = probes.get(probe) if isinstance(probes, Mapping) else None
        value = footprint_value(data, BudgetKind(kind)) if isinstance(data, Mapping) else None
        yield probe, BudgetKind(kind), value


def _phases(test: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    phases = test.get("phases")
    return {str(p.get("name")): p for p in (phases if isinstance(phases, list) else ())
            if isinstance(p, Mapping)}


def compare_test(nodeid: str, base: Mapping[str, Any], new: Mapping[str, Any],
                 policy: Tolerances) -> list[ProbeChange]:
    """Every figure of one test that both runs measured, classified."""
    changes = []
    base_run = {(name, kind): probe for name, kind, probe in run_figures(base)}
    for name, kind, probe in run_figures(new):
        old = base_run.get((name, kind))
        if old is None:
            continue
        tolerance = policy.for_figure(name, kind)
        if kind is SLOPE:
            was = slope_reading(old, base.get("iterations"))
            now = slope_reading(probe, new.get("iterations"))
            floor = PROBES[name].run_floor / now.count if name in PROBES and now.count else 0.0
            status = classify([was.lower, was.upper], [now.lower, now.upper], tolerance,
                              (was.rate, now.rate), floor)
        else:
            was, now = Reading(footprint_value(old, kind)), Reading(footprint_value(probe, kind))
            status = classify_once(was.value, now.value, tolerance)
        changes.append(ProbeChange(nodeid, name, was, now, tolerance, status, kind))
    base_phases = _phases(base)
    for phase_name, phase in _phases(new).items():
        old_phase = base_phases.get(phase_name)
        if old_phase is None:
            continue
        before = {(p, k): v for p, k, v in phase_figures(old_phase)}
        for probe_name, kind, value in phase_figures(phase):
            if (probe_name, kind) not in before:
                continue
            tolerance = policy.for_figure(probe_name, kind)
            old_value = before[(probe_name, kind)]
            changes.append(ProbeChange(
                nodeid, probe_name, Reading(old_value), Reading(value), tolerance,
                classify_once(old_value, value, tolerance), kind, phase_name))
    return changes


def compare(base: Mapping[str, Any], new: Mapping[str, Any], policy: Tolerances) -> Comparison:
    """Every figure that both documents measured for the same test, classified."""
    base_tests: Mapping[str, Any] = base.get("tests", {})
    new_tests: Mapping[str, Any] = new.get("tests", {})
    changes: list[ProbeChange] = []
    for nodeid, new_test in new_tests.items():
        base_test = base_tests.get(nodeid)
        if isinstance(base_test, Mapping) and isinstance(new_test, Mapping):
            changes += compare_test(nodeid, base_test, new_test, policy)
    return Comparison(
        tuple(changes),
        missing=tuple(n for n in base_tests if n not in new_tests),
        added=tuple(n for n in new_tests if n not in base_tests),
    )
