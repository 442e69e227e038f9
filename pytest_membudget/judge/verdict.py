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
    return Verdict(judged, clean=_clean(judged, vouched=set()))


def stopped(verdict: Verdict) -> Verdict:
    """The verdict of a run stopped at the ceiling inside a call: no budget is judged on a
    call that did not return. Each peak or rise budget is ``stopped``, with how far it went;
    the others are left ambiguous (unjudged)."""
    return Verdict({name: ProbeJudgement(name, p.trend, p.peak, tuple(
        Outcome(o.budget, STOPPED if o.budget.kind.footprint else AMBIGUOUS, o.measured)
        for o in p.outcomes)) for name, p in verdict.probes.items()})


def _clean(judged: dict[str, ProbeJudgement], vouched: set[str]) -> bool:
    """Every budget passes, and every coarse probe with a slope budget is ``vouched`` for."""
    return all(
        o.status is PASS for p in judged.values() for o in p.outcomes
    ) and all(
        name in vouched for name, p in judged.items()
        if PROBES[name].floor > 0 and any(o.budget.kind is BudgetKind.SLOPE for o in p.outcomes))


def witnesses(spec: BudgetSpec) -> dict[str, tuple[str, ...]]:
    """Coarse probe -> its exact witnesses (catalog ``witnesses``), for the slope budgets of
    an auto run. A fixed run reports what it measured; an auto run decides when to stop, and
    a coarse probe must not stop it with a pass that an exact count contradicts."""
    if spec.run.iterations is not None:
        return {}
    return {b.probe: PROBES[b.probe].witnesses for b in spec.budgets
            if b.kind is BudgetKind.SLOPE and PROBES[b.probe].witnesses}


def witness_grows(t: Trend, witness: str, limit: float, longest_tail: float) -> bool:
    """Whether a witness's trend fails the slope rule at a budget of ``limit`` bytes per
    iteration, in its own units and with its own resolution (catalog)."""
    info = PROBES[witness]
    return judge_slope(t, limit / info.least_bytes, info.witness_resolution,
                       longest_tail) is FAIL


def witness_flat(t: Trend, witness: str, longest_tail: float) -> bool:
    """Whether a witness is flat beyond doubt: its slope passes a budget of zero with its
    own resolution over the longest run (the upper bound within it)."""
    return judge_slope(t, 0.0, PROBES[witness].witness_resolution, longest_tail) is PASS


def hold_back(verdict: Verdict, x: FloatArray, series: dict[str, FloatArray],
              witnessed: dict[str, tuple[str, ...]], confidence: float,
              longest_tail: float) -> Verdict:
    """A coarse probe's passing slope budget turns ambiguous while one of its witnesses grows
    clearly (a failure of the witness's slope rule at the budget's rate, with the witness's
    own resolution). RSS moves in pages and the allocators keep free slots in reserve, so a
    window can read flat while Python's blocks grow by one per iteration (a float kept per
    call fills pymalloc's reserve first), or while glibc's bytes in use grow by 80 per call
    (served from the free chunks of a fragmented heap). The run then goes on until RSS shows
    it, the witness stops, or time is up: a witness still growing at the cap leaves the
    budget inconclusive, never a clear pass."""
    held = dict(verdict.probes)
    vouched = set()
    for coarse, names in witnessed.items():
        judgement = held.get(coarse)
        present = [w for w in names if w in series]
        if judgement is None or not present:
            continue
        trends = {w: trend(x, series[w], confidence) for w in present}
        flat = len(present) == len(names) and all(
            witness_flat(t, w, longest_tail) for w, t in trends.items())
        outcomes = tuple(
            _witnessed(o, judgement.trend, trends, flat, coarse, x, series, longest_tail)
            for o in judgement.outcomes)
        held[coarse] = ProbeJudgement(coarse, judgement.trend, judgement.peak, outcomes)
        if flat:
            vouched.add(coarse)
    return Verdict(held, clean=_clean(held, vouched), vouched=frozenset(vouched))


#: Probe -> its judgement at the checkpoint where it settled, whether it was clean there, and
#: the measured iterations there.
Settled = dict[str, tuple[ProbeJudgement, bool, int]]


def settling(verdict: Verdict) -> dict[str, bool]:
    """The probes with a slope budget whose every budget passes in ``verdict``, each with
    whether it is clean on its own (a coarse probe vouched for by its witnesses): the
    probes that may settle here if the run's policy would let them stand alone."""
    return {
        name: _clean({name: p}, set(verdict.vouched))
        for name, p in verdict.probes.items()
        if p.outcomes and all(o.status is PASS for o in p.outcomes)
        and any(o.budget.kind is BudgetKind.SLOPE for o in p.outcomes)
    }


def keep_settled(verdict: Verdict, settled: Settled) -> Verdict:
    """A probe whose budgets all passed at a checkpoint where it would have stood alone keeps
    that judgement while the run goes on for other budgets, unless one of its budgets fails
    now: a late page must not reopen an RSS pass that a run without the other budgets would
    have stopped on (a torch step with ``rss=0, iter_time=0`` ended with ``rss``
    inconclusive at its cap while ``iter_time`` took its time; with ``rss=0`` alone it
    passes clearly in about 3 s). A failure still counts."""
    if not settled:
        return verdict
    merged = dict(verdict.probes)
    vouched = set(verdict.vouched)
    for name, (judgement, clean, _) in settled.items():
        now = merged.get(name)
        if now is None or now.failed:
            continue
        merged[name] = judgement
        if clean:
            vouched.add(name)
    return Verdict(merged, clean=_clean(merged, vouched), vouched=frozenset(vouched))


def _witnessed(o: Outcome, t: Trend, trends: dict[str, Trend], flat: bool, coarse: str,
               x: FloatArray, series: dict[str, FloatArray], longest_tail: float) -> Outcome:
    """One outcome of a coarse probe as its witnesses see it: a slope pass held back while a
    witness grows clearly; a slope left open only for want of a long enough tail (the
    probe's floor) passed when every witness is flat beyond doubt."""
    if o.budget.kind is not BudgetKind.SLOPE:
        return o
    if o.status is PASS and any(witness_grows(wt, w, o.budget.limit, longest_tail)
                                for w, wt in trends.items()):
        return Outcome(o.budget, AMBIGUOUS, o.measured)
    if o.status is AMBIGUOUS and flat and judge_slope(
            t, o.budget.limit, resolution(coarse, series[coarse]), longest_tail) is PASS:
        return Outcome(o.budget, PASS, o.measured)
    return o


def unsettle(verdict: Verdict, probes: set[str]) -> Verdict:
    """The failing slope budgets of ``probes`` turned ambiguous: growth that the evidence
    found held by a bounded cache still filling, which stops when the cache is full (a
    finished run reports them inconclusive, with the cache)."""
    changed = dict(verdict.probes)
    for name in probes & changed.keys():
        judgement = changed[name]
        outcomes = tuple(
            Outcome(o.budget, AMBIGUOUS, o.measured)
            if o.status is FAIL and o.budget.kind is BudgetKind.SLOPE else o
            for o in judgement.outcomes)
        changed[name] = ProbeJudgement(name, judgement.trend, judgement.peak, outcomes)
    return Verdict(changed)


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
