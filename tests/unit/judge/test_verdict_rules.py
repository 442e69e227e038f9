"""Each rule of the verdict, pinned: every test here fails when its rule alone is removed or
weakened (bench/mutation.py applies those mutants one at a time and lists the tests that kill
them)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from support import series

from pytest_membudget.judge.fit import sen_bounds, trend
from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.judge.verdict import AMBIGUOUS, FAIL, PASS, judge
from pytest_membudget.settings import default_run

RUN = default_run()
KIB = 1024.0
N = 400
X = series.x(N)


def status(y: np.ndarray, probe: str = "rss", limit: float = 0.0,
           longest_tail: float = 1000.0) -> str:
    spec = BudgetSpec((Budget(probe, "slope", limit, "test"),), RUN)
    verdict = judge(spec, series.x(len(y)), {probe: y}, {}, longest_tail=longest_tail)
    return verdict.probes[probe].outcomes[0].status


def tail_blocks(floors: list[float], head: float) -> np.ndarray:
    """A window of N samples whose judged tail (the second half) is 8 flat blocks at
    ``floors`` KiB above 50 MB; the first half sits at ``head`` KiB."""
    y = np.full(N, head)
    block = N // 2 // 8
    for k, level in enumerate(floors):
        y[N // 2 + k * block : N // 2 + (k + 1) * block] = level
    return 50e6 + KIB * y


# -- the lower confidence bound ----------------------------------------------------------


def test_flat_noise_far_above_the_resolution_never_fails() -> None:
    # sd 60 KiB against a resolution of 32 KiB. Failing on the upper bound instead of the
    # lower one flags 43 of these 300 series.
    flagged = [seed for seed in range(300)
               if status(50e6 + np.random.default_rng(seed).normal(0, 60 * KIB, N)) == FAIL]
    assert flagged == []


def test_noise_too_wide_to_rule_out_growth_is_not_a_clear_pass() -> None:
    # The same noise: the slope estimate is near zero, but the upper bound allows growth
    # that would add up over a long run, so an auto run must go on rather than pass.
    statuses = {status(50e6 + np.random.default_rng(seed).normal(0, 60 * KIB, N))
                for seed in range(30)}
    assert statuses == {AMBIGUOUS}


# -- the resolution ------------------------------------------------------------------------


def test_a_steady_rise_finer_than_the_resolution_is_not_growth() -> None:
    # 1 byte per iteration, exactly: certain, still growing, and 200 bytes over the tail,
    # far below RSS's 8 pages.
    assert status(50e6 + X) == PASS
    # The same rise in a probe whose resolution is one unit fails.
    assert status(12.0 + X, probe="threads") == FAIL


def test_iter_time_resolution_is_relative_to_the_iteration_time() -> None:
    # Slowing by 2 % of the iteration time over the tail: real, but machine noise.
    assert status(1e-3 * (1 + 0.02 * X / N), probe="iter_time") != FAIL
    assert status(1e-3 * (1 + 0.5 * X / N), probe="iter_time") == FAIL


# -- still growing at the end --------------------------------------------------------------


def test_growth_that_stops_before_the_end_is_not_a_leak() -> None:
    # 4 KiB per iteration until iteration 340 of 400: the lower bound is far above zero,
    # but the last two blocks rise by less than half the tail's pace.
    assert status(50e6 + 4096 * np.minimum(X, 340)) == AMBIGUOUS


def test_growth_that_slows_to_a_third_is_not_called_a_leak_yet() -> None:
    # The later half of the tail grows, but the latest stretch at a third of the pace.
    y = 50e6 + np.where(X < 300, 4096 * X, 4096 * 300 + 1000 * (X - 300))
    assert status(y) == AMBIGUOUS


def test_a_later_half_that_falls_back_is_not_still_growing() -> None:
    # Floors rise, fall back (a cache cleared) and jump at the very end: the last two blocks
    # rise, but the later half as a whole does not.
    assert status(tail_blocks([-70, -60, -50, -40, 20, 0, -5, 25], head=-80)) != FAIL


def test_a_leak_keeps_its_pace_to_the_end() -> None:
    assert status(50e6 + 4096 * X) == FAIL


# -- block floors ---------------------------------------------------------------------------


def test_spikes_that_grow_more_frequent_are_not_a_leak() -> None:
    # 50 MB spikes in 0 % of the tail's first block up to 40 % of its last: the block means
    # rise, the block floors stay on the baseline.
    y = np.full(N, 50e6)
    for k in range(8):
        count = round(0.4 * 25 * (k + 1) / 8)
        y[N // 2 + 25 * k + np.linspace(0, 24, count).astype(int)] += 50e6
    assert status(y) == PASS


@pytest.mark.parametrize(("period", "phase"), [(40, 0), (50, 0), (50, 5)])
def test_a_sawtooth_longer_than_a_block_is_not_a_leak(period: int, phase: int) -> None:
    # Judged sample by sample, the teeth read as growth.
    assert status(50e6 + 4096 * ((X + phase) % period)) != FAIL


@pytest.mark.parametrize("period", [20, 24, 25])
def test_a_sawtooth_within_a_block_passes_clearly(period: int) -> None:
    assert status(50e6 + 4096 * (X % period)) == PASS


# -- Sen's bounds -------------------------------------------------------------------------


def test_sen_ranks_at_eight_floors_are_the_4th_and_25th_of_28_slopes() -> None:
    # Eight points with 28 distinct pairwise slopes.
    x = np.arange(8.0)
    y = np.array([0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0])
    slopes = sorted((y[j] - y[i]) / (x[j] - x[i]) for i in range(8) for j in range(i + 1, 8))
    assert len(set(slopes)) == 28
    slope, lower, upper = sen_bounds(x, y, 0.99)
    assert lower == slopes[3] and upper == slopes[24]
    assert slope == pytest.approx((slopes[13] + slopes[14]) / 2)


def test_sen_ranks_at_95_percent() -> None:
    x = np.arange(8.0)
    y = np.array([0.0, 1.0, 3.0, 7.0, 15.0, 31.0, 63.0, 127.0])
    slopes = sorted((y[j] - y[i]) / (x[j] - x[i]) for i in range(8) for j in range(i + 1, 8))
    _, lower, upper = sen_bounds(x, y, 0.95)
    # z = 1.645, var S = 65.33: ranks floor((28 - 13.3) / 2) = 7 and ceil(20.65) + 1 = 22.
    assert lower == slopes[6] and upper == slopes[21]


def test_the_judged_tail_is_the_second_half() -> None:
    t = trend(X, 50e6 + 4096 * np.minimum(X, 150), 0.99)
    assert t.tail_start == N // 2 and t.slope == 0.0 and t.growth > 0


# -- growth budgets are floor to floor -------------------------------------------------------


def test_a_spike_at_the_end_is_not_growth() -> None:
    y = np.full(N, 50e6)
    y[-1] += 500e6
    assert trend(X, y, 0.99).growth == 0.0
    assert not math.isnan(trend(X, y, 0.99).growth)
