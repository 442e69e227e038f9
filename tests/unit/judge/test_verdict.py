"""The verdict on synthetic series: leaks fail, bounded growth passes."""

from __future__ import annotations

import numpy as np
import pytest
from support import series

from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.judge.verdict import AMBIGUOUS, FAIL, PASS, judge
from pytest_membudget.settings import default_run

RUN = default_run()


def status(y: np.ndarray, limit: float = 0.0, kind: str = "slope", probe: str = "rss",
           longest_tail: float = 1000.0) -> str:
    spec = BudgetSpec((Budget(probe, kind, limit, "test"),), RUN)
    verdict = judge(spec, series.x(len(y)), {probe: y}, {}, longest_tail=longest_tail)
    return verdict.probes[probe].outcomes[0].status


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("rate", [256.0, 1024.0, 1e6])
def test_linear_leaks_fail(rate: float, seed: int) -> None:
    assert status(series.linear_leak(rate, seed)) == FAIL


@pytest.mark.parametrize("every", [2, 5, 10, 16])
def test_bursty_leaks_fail(every: int) -> None:
    assert status(series.staircase(4096.0 * every // 4, every)) == FAIL


@pytest.mark.parametrize("onset", [100, 200, 260])
def test_late_leaks_fail(onset: int) -> None:
    assert status(series.late_leak(2048.0, onset)) == FAIL


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("fill", [20, 80, 150])
def test_caches_that_fill_and_stop_pass(fill: int, seed: int) -> None:
    assert status(series.plateau(10_000.0, fill, seed)) != FAIL


@pytest.mark.parametrize("period", [5, 10, 20])
def test_sawtooth_is_not_a_leak(period: int) -> None:
    assert status(series.sawtooth(50_000.0, period)) != FAIL


@pytest.mark.parametrize("seed", range(5))
def test_large_spikes_are_not_a_leak(seed: int) -> None:
    assert status(series.spikes(50e6, 20, seed)) != FAIL


@pytest.mark.parametrize("seed", range(20))
def test_noise_is_not_a_leak(seed: int) -> None:
    assert status(series.flat_noise(seed)) != FAIL


def test_cache_still_filling_at_the_end_is_ambiguous_not_failed() -> None:
    # grows until 85% of the window: the latest stretch is flat, so no failure yet
    assert status(series.plateau(10_000.0, 340)) in (AMBIGUOUS, PASS)


def test_a_slope_under_the_budget_passes() -> None:
    assert status(series.linear_leak(1000.0), limit=4096.0) == PASS


def test_a_slope_over_a_nonzero_budget_fails() -> None:
    assert status(series.linear_leak(8192.0), limit=4096.0) == FAIL


def test_growth_below_the_probe_resolution_does_not_fail() -> None:
    # one page over the whole tail: real, but finer than RSS can be trusted with
    y = np.full(400, 50e6)
    y[300:] += 4096
    assert status(y) != FAIL


def test_exact_counts_pass_clearly() -> None:
    assert status(np.full(100, 12.0), probe="threads") == PASS


def test_one_thread_per_iteration_fails() -> None:
    assert status(12.0 + series.x(100), probe="threads") == FAIL


def test_peak_and_growth_budgets() -> None:
    y = series.plateau(10_000.0, 50)
    assert status(y, limit=60e6, kind="peak") == PASS
    assert status(y, limit=49e6, kind="peak") == FAIL
    assert status(y, limit=1e6, kind="growth") == PASS
    assert status(y, limit=1e5, kind="growth") == FAIL


def test_iter_time_resolution_is_relative() -> None:
    steady = 1e-3 + series.noise(1, scale=2e-5) * 1e-0
    assert status(np.abs(steady), probe="iter_time") != FAIL
    slowing = 1e-3 + 2e-6 * series.x()
    assert status(slowing, probe="iter_time") == FAIL


def fixed_status(y: np.ndarray, probe: str = "rss") -> str:
    spec = BudgetSpec((Budget(probe, "slope", 0.0, "test"),), default_run(iterations=len(y)))
    verdict = judge(spec, series.x(len(y)), {probe: y}, {}, longest_tail=len(y) / 2)
    return verdict.probes[probe].outcomes[0].status


@pytest.mark.parametrize("n", [64, 144, 216])
def test_auto_rss_does_not_pass_a_flat_window_too_short_to_see_the_floor(n: int) -> None:
    # Eight pages over a tail shorter than 128 iterations hide a leak of 256 B/iter.
    assert status(np.full(n, 50e6)) == AMBIGUOUS


def test_auto_rss_passes_a_flat_window_long_enough_to_see_the_floor() -> None:
    assert status(np.full(324, 50e6)) == PASS


def test_a_fixed_window_is_judged_at_the_length_the_user_chose() -> None:
    assert fixed_status(np.full(64, 50e6)) == PASS


def test_the_floor_applies_to_rss_and_uss_only() -> None:
    assert status(np.full(64, 12.0), probe="threads") == PASS
    assert status(np.full(64, 1e6), probe="heap") == PASS
    assert status(np.full(64, 50e6), probe="uss") == AMBIGUOUS
