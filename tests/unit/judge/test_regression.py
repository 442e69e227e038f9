"""The regression rule and tolerances: pure functions of two runs' slope intervals."""

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
    Tolerance,
    ToleranceError,
    Tolerances,
    classify,
    compare,
    parse_tolerance,
    parse_tolerances,
)
from pytest_membudget.render.comparison import describe_tolerance

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


@pytest.mark.parametrize(("text", "expected"), [
    ("rss:10%", ("rss", Tolerance(relative=0.10))),
    ("heap: 64 KiB/iter", ("heap", Tolerance(absolute=65536.0))),
    ("gc_objects:2", ("gc_objects", Tolerance(absolute=2.0))),
    ("iter_time:off", ("iter_time", Tolerance(gated=False))),
    ("all:5%", ("all", Tolerance(relative=0.05))),
    ("iter_time:1 ms/iter", ("iter_time", Tolerance(absolute=0.001))),
])
def test_parse_tolerance(text: str, expected: tuple[str, Tolerance]) -> None:
    assert parse_tolerance(text, "from --x") == expected


@pytest.mark.parametrize(("text", "message"), [
    ("rss", "write <probe>:<tolerance>"),
    ("rsz:10%", "unknown probe 'rsz'"),
    ("all:64 KiB/iter", "'all' takes a relative tolerance"),
    ("rss:64 KiB", "slope budget"),
    ("rss:lots", "cannot read this as a quantity"),
    ("rss:10 XB/iter", "unknown unit"),
])
def test_bad_tolerances_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ToleranceError, match=message) as info:
        parse_tolerance(text, "from --membudget-compare-fail")
    assert "from --membudget-compare-fail" in str(info.value)


def test_policy_names_probes_over_all_and_merges_repeats() -> None:
    policy = parse_tolerances(["all:20%", "rss:10%", "rss:1 KiB/iter", ""], "from ini")
    assert policy.for_probe("rss") == Tolerance(relative=0.10, absolute=1024.0)
    assert policy.for_probe("heap") == Tolerance(relative=0.20)
    assert Tolerances().for_probe("heap") == NONE
    assert describe_tolerance(Tolerance(relative=0.1, absolute=1024), "rss") \
        == "10% or 1 KiB/iter"
    assert describe_tolerance(NONE, "rss") == "0"
    assert describe_tolerance(Tolerance(gated=False), "rss") == "off"


def _doc(**tests: dict[str, list[float]]) -> dict:
    return {"tests": {name: {"probes": {p: {"slope": sum(ci) / 2, "ci": ci}
                                        for p, ci in probes.items()}}
                      for name, probes in tests.items()}}


def test_compare_documents() -> None:
    base = _doc(t_a={"rss": [0, 10], "heap": [100, 110]}, t_gone={"rss": [0, 1]})
    new = _doc(t_a={"rss": [50, 60], "heap": [100, 120], "fds": [1, 1]}, t_new={"rss": [0, 1]})
    result = compare(base, new, parse_tolerances(["heap:off"], "here"))
    assert [(c.nodeid, c.probe, c.status) for c in result.changes] == [
        ("t_a", "rss", REGRESSED), ("t_a", "heap", SAME)]
    assert [c.probe for c in result.regressions] == ["rss"]
    assert result.missing == ("t_gone",) and result.added == ("t_new",)
    assert result.changes[0].change == pytest.approx(10.0)  # 5 -> 55
    loose = compare(base, new, parse_tolerances(["rss:100 B/iter"], "here"))
    assert loose.regressions == () and loose.count(WORSE) == 1
