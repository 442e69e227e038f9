"""Tolerances of the comparison: parsing, defaults, and how the layers combine."""

from __future__ import annotations

import pytest

from pytest_membudget.catalog import PAGE_RUN_SPREAD, PROBES
from pytest_membudget.judge.tolerance import (
    ONE_SHOT_FLOOR,
    ONE_SHOT_SPREAD,
    Tolerance,
    ToleranceError,
    Tolerances,
    default_tolerance,
    parse_tolerance,
    parse_tolerances,
)
from pytest_membudget.render.comparison import describe_tolerance
from pytest_membudget.vocabulary import BudgetKind

MIB = 1024.0 * 1024.0


@pytest.mark.parametrize(("text", "expected"), [
    ("rss:10%", ("rss", Tolerance(relative=0.10))),
    ("heap: 64 KiB/iter", ("heap", Tolerance(absolute=65536.0))),
    ("gc_objects:2", ("gc_objects", Tolerance(absolute=2.0))),
    ("iter_time:off", ("iter_time", Tolerance(gated=False))),
    ("all:5%", ("all", Tolerance(relative=0.05))),
    ("iter_time:1 ms/iter", ("iter_time", Tolerance(absolute=0.001))),
    ("rss_rise:32 MiB", ("rss_rise", Tolerance(absolute=32 * MIB))),
    ("rss_peak: 5%", ("rss_peak", Tolerance(relative=0.05))),
    ("gc_objects_rise:1000", ("gc_objects_rise", Tolerance(absolute=1000.0))),
    ("heap_rise:off", ("heap_rise", Tolerance(gated=False))),
])
def test_parse_tolerance(text: str, expected: tuple[str, Tolerance]) -> None:
    assert parse_tolerance(text, "from --x") == expected


@pytest.mark.parametrize(("text", "message"), [
    ("rss", "write <figure>:<tolerance>"),
    ("rsz:10%", "unknown figure 'rsz'"),
    ("all:64 KiB/iter", "'all' takes a relative tolerance"),
    ("rss:64 KiB", "slope budget"),
    ("rss_rise:64 KiB/iter", "expects a size"),
    ("rss_growth:10%", "judges slopes, rises and peaks, not growth"),
    ("rss:lots", "cannot read this as a quantity"),
    ("rss:10 XB/iter", "unknown unit"),
])
def test_bad_tolerances_say_what_to_write(text: str, message: str) -> None:
    with pytest.raises(ToleranceError, match=message) as info:
        parse_tolerance(text, "from --membudget-compare-fail")
    assert "from --membudget-compare-fail" in str(info.value)


def test_defaults_slopes_from_the_catalog_footprints_one_shot() -> None:
    assert default_tolerance("rss", BudgetKind.SLOPE) == Tolerance(PAGE_RUN_SPREAD, 0.0)
    assert default_tolerance("heap", BudgetKind.SLOPE) == Tolerance(PROBES["heap"].run_spread,
                                                                    0.0)
    assert default_tolerance("rss", BudgetKind.RISE) == Tolerance(ONE_SHOT_SPREAD,
                                                                  ONE_SHOT_FLOOR)
    assert default_tolerance("heap", BudgetKind.PEAK) == Tolerance(ONE_SHOT_SPREAD,
                                                                   ONE_SHOT_FLOOR)
    # Counts: the probe's own resolution (a few objects come and go between runs).
    assert default_tolerance("gc_objects", BudgetKind.RISE) == Tolerance(
        ONE_SHOT_SPREAD, PROBES["gc_objects"].resolution)
    assert default_tolerance("threads", BudgetKind.PEAK) == Tolerance(ONE_SHOT_SPREAD, 1.0)
    assert Tolerances().for_probe("rss") == default_tolerance("rss", BudgetKind.SLOPE)


def test_a_tolerance_replaces_the_parts_it_names_over_all_over_the_default() -> None:
    policy = parse_tolerances(["all:20%", "rss:10%", "rss:1 KiB/iter", "rss_rise:10%",
                               "heap_rise:0 B", ""], "from ini")
    assert policy.for_probe("rss") == Tolerance(relative=0.10, absolute=1024.0)
    assert policy.for_probe("heap") == Tolerance(relative=0.20, absolute=0.0)
    floor = ONE_SHOT_FLOOR
    # The figure's own percent; the default's floor stays unless a size is given.
    assert policy.for_figure("rss", BudgetKind.RISE) == Tolerance(0.10, floor)
    assert policy.for_figure("heap", BudgetKind.RISE) == Tolerance(0.20, 0.0)
    assert policy.for_figure("rss", BudgetKind.PEAK) == Tolerance(0.20, floor)


def test_off_and_a_value_for_one_figure() -> None:
    policy = parse_tolerances(["all:off", "rss_rise:5%"], "here")
    assert policy.for_probe("rss").gated is False
    assert policy.for_figure("rss", BudgetKind.PEAK).gated is False
    assert policy.for_figure("rss", BudgetKind.RISE).gated is True
    assert Tolerance(relative=0.1).merge(Tolerance(gated=False)).gated is False
    assert Tolerance(relative=0.1).merge(Tolerance(relative=0.3, absolute=5.0)) == Tolerance(
        0.3, 5.0)


def test_the_larger_margin_applies() -> None:
    merged = Tolerance(relative=0.5).merge(Tolerance(absolute=100.0))
    assert merged.margin(1000.0) == 500.0 and merged.margin(10.0) == 100.0
    assert Tolerance().margin(1000.0) == 0.0


def test_describe() -> None:
    assert describe_tolerance(Tolerance(relative=0.1, absolute=1024), "rss") \
        == "10% or 1 KiB/iter"
    assert describe_tolerance(Tolerance(relative=0.3, absolute=4 * MIB), "rss",
                              per_iter=False) == "30% or 4 MiB"
    assert describe_tolerance(Tolerance(), "rss") == "0"
    assert describe_tolerance(Tolerance(gated=False), "rss") == "off"
