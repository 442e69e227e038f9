"""The regression rule for slopes: pure functions of two runs' slope intervals (footprints
and tolerances have their own modules)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_membudget.judge.regression import (
    BETTER,
    REGRESSED,
    SAME,
    UNJUDGED,
    WORSE,
    classify,
    compare,
)
from pytest_membudget.judge.tolerance import Tolerance, parse_tolerances

NONE = Tolerance()


def test_separated_intervals_regress_without_margin() -> None:
    assert classify([90, 110], [150, 170], NONE) == REGRESSED


def test_overlapping_intervals_never_regress_however_far_the_estimates_moved() -> None:
    # Run-to-run noise: the new estimate is far higher, but its own lower bound is not.
    assert classify([90, 110], [105, 400], NONE) == SAME


def test_relative_tolerance_is_taken_on_the_baseline_upper_bound() -> None:
    ten = Tolerance(relative=0.10)  # margin 11 over an upper bound of 110
    assert classify([90, 110], [120, 130], ten) == WORSE
    assert classify([90, 110], [122, 130], ten) == REGRESSED


def test_absolute_tolerance_in_probe_units() -> None:
    kib = Tolerance(absolute=1024.0)
    assert classify([0, 0], [1000, 1100], kib) == WORSE
    assert classify([0, 0], [1100, 1200], kib) == REGRESSED


def test_both_tolerances_take_the_larger_margin() -> None:
    merged = Tolerance(relative=0.5).merge(Tolerance(absolute=100.0))
    assert merged.margin(1000.0) == 500.0 and merged.margin(10.0) == 100.0


def test_a_run_that_does_not_grow_is_no_regression() -> None:
    # It shrank before and shrinks less now: slower release is not a memory regression.
    assert classify([-100, -50], [-40, -10], NONE) == WORSE


def test_better_and_unjudged() -> None:
    assert classify([150, 170], [90, 110], NONE) == BETTER
    assert classify([None, None], [150, 170], NONE) == UNJUDGED
    assert classify([90, 110], [None, 200], NONE) == UNJUDGED
    assert classify(None, [1, 2], NONE) == UNJUDGED
    assert classify([0, math.inf], [5, 6], NONE) == UNJUDGED


def test_off_never_regresses() -> None:
    assert classify([0, 0], [100, 200], Tolerance(gated=False)) == WORSE
    assert Tolerance(relative=0.1).merge(Tolerance(gated=False)).gated is False


@given(st.floats(-1e6, 1e6), st.floats(0, 1e6), st.floats(-1e6, 1e6), st.floats(0, 1e6),
       st.floats(0, 10), st.floats(0, 1e6))
def test_rule_invariants(b_low: float, b_width: float, n_low: float, n_width: float,
                         relative: float, absolute: float) -> None:
    base, new = [b_low, b_low + b_width], [n_low, n_low + n_width]
    tol = Tolerance(relative, absolute)
    regressed = classify(base, new, tol) == REGRESSED
    # Exactly the documented rule.
    assert regressed == (n_low > 0 and n_low > base[1] + max(absolute, relative * abs(base[1])))
    # A looser tolerance never turns a pass into a regression.
    looser = classify(base, new, Tolerance(relative + 1, absolute + 1)) == REGRESSED
    assert not (looser and not regressed)
    # Overlapping intervals never regress.
    if n_low <= base[1]:
        assert not regressed


def test_the_window_must_agree_with_the_slope() -> None:
    # The judged half read 0 in the baseline while the whole window grew as fast as now: the
    # allocator reused memory in one run and not in the other.
    ten = Tolerance(relative=0.10)
    assert classify([0, 0], [4096, 4200], ten, (3700.0, 3750.0)) == WORSE
    assert classify([0, 0], [4096, 4200], ten, (0.0, 3750.0)) == REGRESSED
    assert classify([4000, 4200], [8192, 8300], ten, (3700.0, 7400.0)) == REGRESSED
    assert classify([4000, 4200], [8192, 8300], ten, (3700.0, None)) == REGRESSED


def _doc(**tests: dict[str, list[float]]) -> dict:
    return {"tests": {name: {"iterations": 100,
                             "probes": {p: {"slope": sum(ci) / 2, "ci": ci,
                                            "growth": 100 * sum(ci) / 2}
                                        for p, ci in probes.items()}}
                      for name, probes in tests.items()}}


def test_compare_documents() -> None:
    base = _doc(t_a={"rss": [0, 10_000], "heap": [100, 110]}, t_gone={"rss": [0, 1]})
    new = _doc(t_a={"rss": [50_000, 60_000], "heap": [100, 120], "fds": [1, 1]},
               t_new={"rss": [0, 1]})
    result = compare(base, new, parse_tolerances(["heap:off"], "here"))
    assert [(c.nodeid, c.probe, c.status) for c in result.changes] == [
        ("t_a", "rss", REGRESSED), ("t_a", "heap", SAME)]
    assert [c.probe for c in result.regressions] == ["rss"]
    assert result.missing == ("t_gone",) and result.added == ("t_new",)
    assert result.changes[0].change == pytest.approx(10.0)  # 5 -> 55
    loose = compare(base, new, parse_tolerances(["rss:50 KiB/iter"], "here"))
    assert loose.regressions == () and loose.count(WORSE) == 1
    assert loose.count(WORSE, footprint=False) == 1 and loose.count(WORSE, footprint=True) == 0


def test_the_default_margin_is_the_probe_s_run_spread() -> None:
    # rss counts pages (run spread 50 %); heap is exact (25 %).
    base = _doc(t={"rss": [40_000, 47_000], "heap": [1000, 1010]})
    new = _doc(t={"rss": [65_000, 66_000], "heap": [1300, 1310]})
    result = compare(base, new, parse_tolerances([], "here"))
    assert {c.probe: c.status for c in result.changes} == {"rss": WORSE, "heap": REGRESSED}


def test_a_page_probe_must_grow_by_its_run_floor_over_the_window() -> None:
    # The baseline's RSS read a leak of 1 KiB a call as no growth at all (freed memory served
    # it): 100 KiB more over a window of 100 calls is no regression; 2 MiB more is.
    base = _doc(t={"rss": [0, 0], "malloc": [0, 0]})
    small = _doc(t={"rss": [1000, 1100], "malloc": [1000, 1100]})
    result = compare(base, small, parse_tolerances([], "here"))
    assert {c.probe: c.status for c in result.changes} == {"rss": WORSE, "malloc": REGRESSED}
    big = _doc(t={"rss": [20_000, 21_000]})
    assert compare(base, big, parse_tolerances([], "here")).changes[0].status == REGRESSED


def test_a_probe_settled_early_is_compared_over_its_own_window() -> None:
    # heap settled at 640 calls while the run went on to 1,440: its growth is of 640.
    base = _doc(t={"heap": [4100, 4150]})
    new = _doc(t={"heap": [8200, 8250]})
    new["tests"]["t"]["iterations"] = 1440
    new["tests"]["t"]["probes"]["heap"].update(growth=8225 * 640, settled_at=640)
    base["tests"]["t"]["probes"]["heap"]["growth"] = 4125 * 100
    assert compare(base, new, parse_tolerances([], "here")).changes[0].status == REGRESSED
