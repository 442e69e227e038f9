"""The clean verdict: every budget passes and the exact counters beside each coarse probe are
flat beyond doubt; such a verdict lets an auto run stand once CLEAN_SECONDS of work are spent,
and lets a coarse probe pass before its floor's tail (the exact counters see what it cannot
yet). Scripted series and readings: no workload, no clock."""

from __future__ import annotations

import numpy as np
import pytest
from support import series

from pytest_membudget.judge.policy import (
    CLEAN_SECONDS,
    FEWEST_CALLS,
    MIN_VERDICT_ITERATIONS,
    SHORTEST_SECONDS,
    Reading,
    RunPolicy,
    StopReason,
    reading_of,
)
from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.judge.verdict import AMBIGUOUS, PASS, judge
from pytest_membudget.judge.witness import hold_back
from pytest_membudget.settings import default_run

AUTO = default_run()
N = 40  # a short window: a heavy step's first seconds; the rss floor wants 256 calls
X = series.x(N)
FLAT = {"rss": np.full(N, 50e6), "py_blocks": np.full(N, 2e5), "malloc": np.full(N, 3e6)}


def held(values: dict[str, np.ndarray], present: tuple[str, ...] = ("py_blocks", "malloc")):
    spec = BudgetSpec((Budget("rss", "slope", 0.0, "test"),), AUTO)
    verdict = judge(spec, X, {"rss": values["rss"]}, {}, longest_tail=300.0)
    return hold_back(verdict, X, values, {"rss": present}, AUTO.confidence, 300.0)


def test_a_short_flat_window_is_open_without_witnesses() -> None:
    spec = BudgetSpec((Budget("rss", "slope", 0.0, "test"),), AUTO)
    verdict = judge(spec, X, {"rss": FLAT["rss"]}, {}, longest_tail=300.0)
    assert verdict.probes["rss"].outcomes[0].status is AMBIGUOUS and not verdict.clean


def test_flat_exact_counters_vouch_for_a_short_flat_window() -> None:
    verdict = held(FLAT)
    assert verdict.probes["rss"].outcomes[0].status is PASS and verdict.clean
    assert reading_of(verdict) is Reading.CLEAN


def test_a_growing_counter_vouches_for_nothing() -> None:
    grows = {**FLAT, "malloc": 3e6 + 4096.0 * X}  # 4 KiB a call that RSS does not show yet
    verdict = held(grows)
    assert verdict.probes["rss"].outcomes[0].status is AMBIGUOUS and not verdict.clean


def test_a_missing_counter_vouches_for_nothing() -> None:
    verdict = held({"rss": FLAT["rss"], "py_blocks": FLAT["py_blocks"]})
    assert verdict.probes["rss"].outcomes[0].status is AMBIGUOUS and not verdict.clean


def test_rss_that_grows_is_not_passed_by_flat_counters() -> None:
    verdict = held({**FLAT, "rss": 50e6 + 65536.0 * X})  # mapped outside malloc, say
    assert verdict.probes["rss"].outcomes[0].status is not PASS and not verdict.clean


def test_exact_budgets_alone_are_clean_when_they_pass() -> None:
    spec = BudgetSpec((Budget("py_blocks", "slope", 0.0, "test"),), AUTO)
    assert judge(spec, X, {"py_blocks": FLAT["py_blocks"]}, {}, longest_tail=300.0).clean


POLICY = RunPolicy(fixed=None, min_iterations=64, max_iterations=None)


def drive_timed(reading: Reading, per_call: float) -> tuple[list[int], StopReason, float]:
    checkpoint = POLICY.first()
    measured, seen = 0, []
    while True:
        measured += 1
        while not checkpoint.due(measured, measured * per_call):
            measured += 1
        seen.append(measured)
        step = POLICY.after(checkpoint, measured, False, reading, measured * per_call)
        if isinstance(step, StopReason):
            return seen, step, measured * per_call
        checkpoint = step


@pytest.mark.parametrize("per_call", [0.01, 0.05, 0.1, 0.5])
def test_a_clean_heavy_step_stands_once_the_clean_seconds_are_spent(per_call: float) -> None:
    seen, stop, seconds = drive_timed(Reading.CLEAN, per_call)
    assert stop is StopReason.CLEAR and seen[-1] >= FEWEST_CALLS
    assert CLEAN_SECONDS <= seconds < SHORTEST_SECONDS or seen[-1] == FEWEST_CALLS
    _, _, passed = drive_timed(Reading.PASS, per_call)
    # A pass that is not beyond doubt takes the longer rule (both stand on the fewest calls
    # where those take longer than either rule's seconds).
    assert seconds < passed or seen[-1] == FEWEST_CALLS


@pytest.mark.parametrize("per_call", [0.0003, 0.004])
def test_fast_steps_keep_the_shortest_verdict_in_calls(per_call: float) -> None:
    seen, stop, _ = drive_timed(Reading.CLEAN, per_call)
    assert stop is StopReason.CLEAR and seen[-1] == MIN_VERDICT_ITERATIONS
