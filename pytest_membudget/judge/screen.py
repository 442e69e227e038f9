"""The sweep's screening rule: which tests a short run on exact counters flags for the full
verdict. Pure, plain Python (numpy arrays are read as sequences).

A screen is a fixed, short run sampled after every call, garbage collected before each sample
(see measure/probeset.py). The rule is CPython's leak hunter's (``regrtest -R``), which calls a
leak when every delta after the warm-up is at least one: a leak grows on every call, while a
clean test's counters come back to the same value, or wander up and down. The figures behind
the length and the thresholds are in docs/design/sweep.md (measured with bench/sweep.py).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from pytest_membudget.catalog import PROBES, ScreenRule
from pytest_membudget.judge import fill
from pytest_membudget.judge.policy import MIN_VERDICT_ITERATIONS
from pytest_membudget.vocabulary import Remedy, StopReason, SweepVerdict

if TYPE_CHECKING:  # the rule reads numpy arrays as sequences; it never imports numpy
    import numpy as np
    import numpy.typing as npt

#: Calls after the test's own first call before the screen's first sample (lazy imports,
#: first-call caches), and calls measured (the default of membudget_sweep_screen).
SCREEN_WARMUP = 2
SCREEN_CALLS = 8

#: The probes of the screen, those with a screen rule in the catalog: the exact counters,
#: and RSS as the catch-all for memory none of them sees (mmap, other allocators). Python's
#: exact counter first, RSS last.
RULES: dict[str, ScreenRule] = {name: info.screen for name, info in PROBES.items()
                                if info.screen is not None}
SCREEN_PROBES = tuple(sorted(RULES, key=lambda name: (PROBES[name].coarse,
                                                      not PROBES[name].blind_to_native)))
#: Exact counters whose screen rule asks for growth on every call: growth they show is no
#: page rounding and no wandering free list, and the full verdict confirms it sooner.
STEADY_PROBES = frozenset(name for name, rule in RULES.items()
                          if rule.every and not PROBES[name].coarse)
#: Seconds of measured work on which the full verdict confirms growth the screen saw on
#: STEADY_PROBES for a slow test (see sweep.driver.confirmation_policy), whose confirmation
#: in calls (at CONFIRM_GROWTH times min_iterations) would take longer: judged after half
#: of it, confirmed at twice the calls.
EXACT_SECONDS = 2.0


def flagged(series: Mapping[str, Sequence[float] | npt.NDArray[np.float64]],
            rules: Mapping[str, ScreenRule] = RULES,
            skip: Collection[int] = ()) -> dict[str, float]:
    """The probes whose samples (one per call, the window only) grew by the rule, each with
    its growth over the screen. ``skip``: deltas left out of the rule (those across the
    screen's readings), whose growth still counts in the net; one delta at least is
    judged. Plain Python: a screen's series are a few samples each, for which numpy's calls
    cost more than the arithmetic (docs/design/sweep.md)."""
    found: dict[str, float] = {}
    for name, values in series.items():
        rule = rules.get(name)
        if rule is None or len(values) < 2:
            continue
        deltas = _deltas(values)
        left_out = {i for i in skip if 0 <= i < len(deltas)}
        if left_out and len(left_out) < len(deltas):
            deltas = [d for i, d in enumerate(deltas) if i not in left_out]
        growth = float(values[-1] - values[0])
        if all(d >= rule.least for d in deltas) if rule.every else growth >= rule.least:
            found[name] = growth
    return found


#: A test whose own call took this many seconds or more (a training step, a rollout, a
#: subprocess) is read after its first measured call too: each call it does
#: not make saves more than the screen's sampling costs. The delta after that reading is
#: judged, not left out (see left_out).
SLOW_CALL = 0.01


def reading_points(calls: int, slow: bool = False) -> tuple[int, ...]:
    """Counts of measured calls after which a screen of ``calls`` may stop: every second call
    at the default length (SCREEN_CALLS: after 2, 4 and 6) and below, half of a longer
    screen's. A screen whose calls so far left nothing that more calls could flag (see
    :func:`quiet`) ends at the first of them where that holds; the calls are most of a
    screen's cost, on a suite of 1 ms tests as on one of heavy steps. Each reading that does
    not stop the screen costs its every-delta rule the delta across it (see ``flagged``).

    The first point matters only to ``threads`` and ``fds``, read on their net growth: a probe
    read on every delta can no longer be flagged once one delta missed it, whenever that was: a
    screen of the default length flags at its first reading what it would at the next, and a
    longer one reads first at its half, so that a thread kept on one call in ten is still seen
    (docs/design/sweep.md gives the figures). The later points end the screens of tests whose
    exact counters grow on their first few calls and then stop (a subprocess's, a buffer's first
    growth). A ``slow`` test's screen of the default length or shorter reads after its first
    call as well: a clean one stops there when nothing moved, one call sooner; what it forgoes
    is a thread or descriptor kept on its second call and not its first. A longer screen, asked
    for to see such leaks, does not."""
    first = 2 if calls <= SCREEN_CALLS else calls // 2
    points = tuple(range(first, calls, first))
    if slow and 1 < calls <= SCREEN_CALLS:
        return (1, *points)
    return points


def left_out(reading: int) -> bool:
    """Whether the delta after a screen's reading at this window sample is left out of the
    rule (see :func:`flagged`) when the screen goes on: the delta after each reading is, as
    its own objects can move ``py_blocks`` by one, but not the one after a slow test's
    reading after its first call, which is judged: a screen of a slow test has too few
    deltas to spare it (docs/design/sweep.md)."""
    return reading != 1


@functools.lru_cache(maxsize=8)
def rule_columns(names: tuple[str, ...]) -> tuple[tuple[float, ...], tuple[bool, ...]]:
    """Each probe's ``least`` and ``every`` (RULES) in the order of ``names`` (a probe without
    a rule: never flagged, never keeps a screen going). Made once per set of probes, not
    once per screen."""
    least = tuple(RULES[n].least if n in RULES else math.inf for n in names)
    every = tuple(RULES[n].every if n in RULES else True for n in names)
    return least, every


def quiet(block: Sequence[Sequence[float]] | npt.NDArray[np.float64],
            least: Sequence[float], every: Sequence[bool]) -> bool:
    """Whether more calls could not flag any probe of a screen's samples so far (``block``:
    a row per sample, a column per probe): each probe read by ``every`` delta has a delta
    under its least (the rule can no longer hold), and each probe read on its net growth
    (threads, descriptors) has not moved at all. Plain Python, as :func:`flagged`."""
    if len(block) < 2:
        return False
    rows = block.tolist() if hasattr(block, "tolist") else block
    for column, floor, each in zip(zip(*rows, strict=True), least, every, strict=True):
        deltas = _deltas(column)
        if each and not any(d < floor for d in deltas):
            return False
        if not each and any(d != 0 for d in deltas):
            return False
    return True


def _deltas(values: Sequence[float] | npt.NDArray[np.float64]) -> list[float]:
    """The differences of consecutive samples, as Python floats."""
    row = values.tolist() if hasattr(values, "tolist") else values
    return [later - earlier for earlier, later in pairwise(row)]


def sweep_verdict(failed: bool, stopped: StopReason, measured: int, cap: int | None,
                  unsettled: Sequence[Sequence[Remedy]]) -> SweepVerdict:
    """Where a flagged test ends up after its full verdict: ``failed``, whether a budget
    failed; ``stopped``, why the run stopped, after ``measured`` calls; ``cap``, its
    max_iterations; ``unsettled``, the remedies of each budget that ended inconclusive.

    A leak is a failure the auto run confirmed (it stopped because the verdict was clear).
    A run the sweep's time stopped is cut short, failing or not: growth that has not been
    confirmed at twice its length may be a cache still filling (the interpreter's method
    cache, on calls that make new names)."""
    if failed and stopped is StopReason.CLEAR:
        return SweepVerdict.LEAK
    if failed:
        return SweepVerdict.CUT_SHORT if stopped is StopReason.CAP else (
            SweepVerdict.INCONCLUSIVE)
    shortest = min(MIN_VERDICT_ITERATIONS, cap) if cap is not None else MIN_VERDICT_ITERATIONS
    out_of_time = stopped is StopReason.CAP and measured < shortest
    if out_of_time or any(Remedy.MAX_SECONDS in remedies for remedies in unsettled):
        return SweepVerdict.CUT_SHORT
    return SweepVerdict.INCONCLUSIVE if unsettled else SweepVerdict.PASSED


#: Rounds of the screen's length in a second look (see :func:`look_ends`).
SECOND_LOOK_ROUNDS = 2


def second_look(flagged: Mapping[str, float]) -> str | None:
    """The probe whose growth gets a second look before a full verdict: one probe flagged
    alone whose growth may be a fill that slows down (judge/fill.py). glibc's bytes in use
    rise on every call of many clean tests for a few calls (numpy's caches, an arena's
    bookkeeping under arrays of random sizes), and a full verdict takes far longer to tell."""
    if len(flagged) == 1 and fill.filling(flagged):
        return next(iter(flagged))
    return None


def look_goes_on(probe: str, first: float, rounds: Sequence[float], every: bool) -> bool:
    """Whether the growth goes on after the latest round of a second look (``rounds``: the
    growth per call on each, the latest last; ``first``: the screen's): it grew on every call
    of the round, or it did not slow as a fill does against the slowest growth before it
    (judge.fill.slowing, read on a few calls)."""
    before = min((first, *rounds[:-1]))
    return every or not fill.slowing({probe: before}, {probe: rounds[-1]}, few_calls=True)


def look_ends(rounds: Sequence[float], every: bool, goes_on: bool) -> bool:
    """Whether a second look ends after its latest round: growth on every call goes to the
    full verdict at once, growth that slowed passes the test, and one in between is looked
    at again while fewer than SECOND_LOOK_ROUNDS rounds were made. Most fills of numpy's
    caches under random sizes end within the first round's calls and read flat on the
    second."""
    return every or not goes_on or len(rounds) >= SECOND_LOOK_ROUNDS
