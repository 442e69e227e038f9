"""Pure statistics on synthetic series: slopes, bounds, floors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import series

from pytest_membudget.judge.fit import block_floors, pairwise_slopes, sen_bounds, theil_sen, trend


def test_theil_sen_recovers_a_line_through_outliers() -> None:
    x = series.x(100)
    y = 3.0 * x + 7.0
    y[::10] += 1e9  # every tenth point is a huge spike
    assert theil_sen(x, y) == pytest.approx(3.0)


def test_sen_bounds_bracket_the_slope() -> None:
    x = series.x()
    y = series.linear_leak(256.0)
    slope, lower, upper = sen_bounds(x, y, 0.99)
    assert lower <= slope <= upper
    assert lower < 256.0 < upper


def test_too_few_points_claim_nothing() -> None:
    x = np.arange(4.0)
    slope, lower, upper = sen_bounds(x, x * 10, 0.99)
    assert slope == pytest.approx(10.0)
    assert lower == -math.inf and upper == math.inf


def test_six_monotone_floors_are_significant_at_99_percent() -> None:
    x = np.arange(6.0)
    _, lower, _ = sen_bounds(x, x * 5, 0.99)
    assert lower > 0


def test_block_floors_ignore_spikes() -> None:
    x = series.x(80)
    y = np.zeros(80)
    y[3::7] = 1e9
    _, fy = block_floors(x, y, 8)
    assert np.all(fy == 0)


def test_pairwise_slopes_skip_equal_x() -> None:
    x = np.array([0.0, 0.0, 1.0])
    y = np.array([0.0, 5.0, 1.0])
    assert list(pairwise_slopes(x, y)) == [-4.0, 1.0]


def test_trend_of_a_short_window_is_not_judged() -> None:
    t = trend(np.arange(5.0), np.arange(5.0), 0.99)
    assert not t.judged


@pytest.mark.parametrize("rate", [64.0, 256.0, 4096.0])
def test_trend_lower_bound_positive_for_leaks(rate: float) -> None:
    t = trend(series.x(), series.linear_leak(rate, seed=3), 0.99)
    assert t.lower > 0
    assert t.slope == pytest.approx(rate, rel=0.5)


def test_trend_of_plateau_is_flat_after_fill() -> None:
    t = trend(series.x(), series.plateau(10_000.0, fill=120), 0.99)
    assert t.lower <= 0 < t.upper or t.lower <= 0
    assert abs(t.late_slope) < 100


finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-10**9, 10**9), min_size=16, max_size=80),
       st.integers(-10**9, 10**9), st.integers(1, 1000))
def test_slope_is_shift_invariant_and_scales(values: list[int], shift: int, scale: int) -> None:
    # integers, like the byte counts the probes return: exact under shifting
    y = np.array(values, dtype=np.float64)
    x = np.arange(len(y), dtype=np.float64)
    base = trend(x, y, 0.99)
    shifted = trend(x, y + shift, 0.99)
    scaled = trend(x, y * scale, 0.99)
    assert shifted.slope == pytest.approx(base.slope, rel=1e-9, abs=1e-6)
    assert scaled.slope == pytest.approx(base.slope * scale, rel=1e-6, abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(finite, min_size=16, max_size=80))
def test_bounds_are_ordered(values: list[float]) -> None:
    y = np.array(values)
    t = trend(np.arange(len(y), dtype=np.float64), y, 0.99)
    assert t.lower <= t.slope <= t.upper


@settings(max_examples=40, deadline=None)
@given(finite, st.floats(-1e4, 1e4), st.integers(16, 200))
def test_an_exact_line_has_exact_slope_and_bounds(intercept: float, rate: float, n: int) -> None:
    x = np.arange(n, dtype=np.float64)
    t = trend(x, intercept + rate * x, 0.99)
    tol = 1e-6 * (1 + abs(intercept) + abs(rate))
    assert t.slope == pytest.approx(rate, abs=tol)
    assert t.lower == pytest.approx(rate, abs=tol)
    assert t.upper == pytest.approx(rate, abs=tol)
