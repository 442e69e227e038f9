"""Fits + spec -> a verdict per budget. Pure: numpy and the fit module only.

A slope budget fails only when the probe is still growing at the end of the run faster than
the budget, with confidence: the lower bound of the tail slope is above the budget, the later
half of the tail and its latest block grow too (a cache that has just filled does not), and
the growth above
the budget is at least the probe's resolution. It passes clearly when even the upper bound is
within what the longest allowed run could resolve (and, in an auto run, the judged tail is long
enough to see growth at the probe's floor rate); anything between is ambiguous, which makes
an auto run go on and a finished run report "inconclusive" (not a failure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pytest_membudget.catalog import NATIVE_WATCH, PROBES
from pytest_membudget.judge.fit import FloatArray, Trend, trend
from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.vocabulary import BudgetKind, Status

PASS, FAIL, AMBIGUOUS, STOPPED = Status.PASS, Status.FAIL, Status.AMBIGUOUS, Status.STOPPED


@dataclass(frozen=True)
class Outcome:
    budget: Budget
    status: Status
    measured: float


@dataclass(frozen=True)
class ProbeJudgement:
    probe: str
    trend: Trend
    peak: float
    outcomes: tuple[Outcome, ...]
    #: The measured calls at the checkpoint where this judgement stood while the run went on
    #: for other budgets (judge.decide); None for a judgement of the window as it is.
    settled_at: int | None = None

    @property
    def failed(self) -> bool:
        return any(o.status in (FAIL, STOPPED) for o in self.outcomes)


@dataclass(frozen=True)
class Verdict:
    probes: dict[str, ProbeJudgement]
    #: Beyond doubt: every budget passes, and each coarse probe (rss, uss: a floor in the
    #: catalog) is vouched for by exact counters sampled beside it that are flat (see
    #: hold_back). An auto run may stand on a clean verdict sooner (policy.CLEAN_SECONDS).
    clean: bool = False
    #: The coarse probes whose exact witnesses are flat beyond doubt (see hold_back).
    vouched: frozenset[str] = frozenset()
    #: The probes whose failing slopes the evidence found held by bounded caches still
    #: filling: turned ambiguous (judge.explain.held_by_caches).
    held: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return any(p.failed for p in self.probes.values())

    @property
    def ambiguous(self) -> bool:
        """Whether some budget could still go either way."""
        return any(o.status is AMBIGUOUS for p in self.probes.values() for o in p.outcomes)


def resolution(probe: str, window: FloatArray) -> float:
    """Growth over the judged tail below which a slope is the source's granularity."""
    info = PROBES[probe]
    if info.relative_resolution and len(window):
        return max(info.resolution, info.relative_resolution * float(np.median(window)))
    return info.resolution


def judge_slope(
    t: Trend, limit: float, res: float, longest_tail: float, shortest_pass: float = 0.0
) -> Status:
    """``shortest_pass``: the fewest iterations of judged tail on which a pass may be called
    (auto runs: long enough to see growth at the probe's floor rate)."""
    if not t.judged:
        return AMBIGUOUS
    excess = (t.slope - limit) * t.tail_span
    # A leak keeps its pace to the end; growth that has stopped or is stopping does not.
    still_growing = t.late_slope > limit and t.recent_slope - limit > (t.slope - limit) / 2
    if t.lower > limit and still_growing and excess >= max(res, 0.0) and excess > 0:
        return FAIL
    if t.upper <= limit + res / max(longest_tail, 1.0) and t.tail_span >= shortest_pass:
        return PASS
    return AMBIGUOUS


def judge_probe(
    probe: str,
    budgets: dict[BudgetKind, Budget],
    x: FloatArray,
    y: FloatArray,
    peak: float,
    confidence: float,
    longest_tail: float,
    auto: bool = False,
    start: float = math.nan,
) -> ProbeJudgement:
    """``peak``: the highest value since the run's start; ``start``: the value there (a rise
    budget is their difference)."""
    t = trend(x, y, confidence)
    outcomes = []
    floor = PROBES[probe].floor if auto else 0.0
    for kind, budget in budgets.items():
        if kind is BudgetKind.SLOPE:
            res = resolution(probe, y)
            shortest = min(res / floor, longest_tail) if floor > 0 else 0.0
            status = judge_slope(t, budget.limit, res, longest_tail, shortest)
            outcomes.append(Outcome(budget, status, t.slope))
        elif kind is BudgetKind.PEAK:
            outcomes.append(Outcome(budget, FAIL if peak > budget.limit else PASS, peak))
        elif kind is BudgetKind.RISE:
            rise = peak - start
            # No start read (a run cut short before its first sample): not a pass.
            status = FAIL if rise > budget.limit else PASS if rise <= budget.limit else AMBIGUOUS
            outcomes.append(Outcome(budget, status, rise))
        else:
            status = FAIL if t.growth > budget.limit else PASS
            outcomes.append(Outcome(budget, status, t.growth))
    return ProbeJudgement(probe, t, peak, tuple(outcomes))


def judge(
    spec: BudgetSpec,
    x: FloatArray,
    series: dict[str, FloatArray],
    peaks: dict[str, float],
    longest_tail: float = math.inf,
    starts: dict[str, float] | None = None,
) -> Verdict:
    """Judge every probe's measured window. ``x`` holds the iteration of each sample;
    ``peaks`` and ``starts`` the highest value of each probe since the run's start and the
    value there (for rise budgets)."""
    auto = spec.run.iterations is None
    starts = starts or {}
    judged = {
        probe: judge_probe(probe, spec.for_probe(probe), x, y, peaks.get(probe, float(y.max(
            initial=-math.inf))), spec.run.confidence, longest_tail, auto,
            starts.get(probe, math.nan))
        for probe, y in series.items()
    }
    return Verdict(judged, clean=all_clean(judged, vouched=set()))


def stopped(verdict: Verdict) -> Verdict:
    """The verdict of a run stopped at the ceiling inside a call: no budget is judged on a
    call that did not return. Each peak or rise budget is ``stopped``, with how far it went;
    the others are left ambiguous (unjudged)."""
    return Verdict({name: ProbeJudgement(name, p.trend, p.peak, tuple(
        Outcome(o.budget, STOPPED if o.budget.kind.footprint else AMBIGUOUS, o.measured)
        for o in p.outcomes)) for name, p in verdict.probes.items()})


def all_clean(judged: dict[str, ProbeJudgement], vouched: set[str]) -> bool:
    """Every budget passes, and every coarse probe with a slope budget is ``vouched`` for."""
    return all(
        o.status is PASS for p in judged.values() for o in p.outcomes
    ) and all(
        name in vouched for name, p in judged.items()
        if PROBES[name].coarse and any(o.budget.kind is BudgetKind.SLOPE for o in p.outcomes))


def native_watch(spec: BudgetSpec) -> str:
    """The probe to watch beside a spec whose every budget is blind to native memory (heap,
    py_blocks, gc_objects), or "": such a test passes while a C extension grows the process,
    and a note says so."""
    if spec.budgets and all(PROBES[b.probe].blind_to_native for b in spec.budgets):
        return NATIVE_WATCH
    return ""


def grows_clearly(probe: str, x: FloatArray, y: FloatArray, confidence: float) -> Trend | None:
    """The trend of ``y`` when it fails the slope rule at zero with the probe's resolution
    (growth that a ``probe=0`` budget would fail), else None."""
    if len(y) < 2:
        return None
    t = trend(x, y, confidence)
    return t if judge_slope(t, 0.0, resolution(probe, y), math.inf) is FAIL else None
