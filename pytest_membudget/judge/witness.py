"""The witness rule: exact counters sampled beside a coarse probe (rss, uss) vouch for its
flat window or hold its pass back. RSS moves in pages and the allocators keep free slots in
reserve, so a window can read flat while Python's blocks or glibc's bytes in use grow; a pass
of the coarse probe then waits for the exact counters, and their flatness beyond doubt lets
it stand sooner (``Verdict.clean``).
"""

from __future__ import annotations

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.fit import FloatArray, Trend, trend
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.judge.verdict import (
    AMBIGUOUS,
    FAIL,
    PASS,
    Outcome,
    ProbeJudgement,
    Verdict,
    all_clean,
    judge_slope,
    resolution,
)
from pytest_membudget.vocabulary import BudgetKind


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
    return Verdict(held, clean=all_clean(held, vouched), vouched=frozenset(vouched))


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


