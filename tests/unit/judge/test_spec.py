"""Budget values, units and marker arguments."""

from __future__ import annotations

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.spec import (
    Budget,
    SpecError,
    build_spec,
    parse_budget_line,
    parse_quantity,
    split_budget_key,
)
from pytest_membudget.settings import default_run

DEFAULTS = default_run()
W = "in test"


@pytest.mark.parametrize(("text", "expected"), [
    ("0", 0.0), (0, 0.0), (512, 512.0), ("4 KiB/iter", 4096.0), ("4KiB/iter", 4096.0),
    ("1.5 MB/iter", 1.5e6), ("2 GiB/it", 2 * 1024**3), ("10 B/iter", 10.0), ("1e3/iter", 1e3),
])
def test_slope_sizes(text: object, expected: float) -> None:
    assert parse_quantity(PROBES["rss"], "slope", text, W) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("2 GiB", 2 * 1024**3), ("500 MB", 5e8), ("1 KB", 1000.0), (1024, 1024.0),
])
def test_peak_sizes(text: object, expected: float) -> None:
    assert parse_quantity(PROBES["rss"], "peak", text, W) == expected


def test_time_units_for_iter_time() -> None:
    assert parse_quantity(PROBES["iter_time"], "slope", "2 us/iter", W) == pytest.approx(2e-6)
    assert parse_quantity(PROBES["iter_time"], "peak", "5 ms", W) == pytest.approx(5e-3)


def test_counts() -> None:
    assert parse_quantity(PROBES["threads"], "slope", 0, W) == 0
    assert parse_quantity(PROBES["threads"], "peak", "64", W) == 64
    assert parse_quantity(PROBES["fds"], "slope", "1/iter", W) == 1


@pytest.mark.parametrize(("probe", "kind", "value", "match"), [
    ("rss", "slope", "10 XB/iter", "unknown unit 'XB'"),
    ("rss", "slope", "lots", "cannot read"),
    ("rss", "slope", "4 KiB", "this is a size, but rss is a slope budget"),
    ("rss", "peak", "4 KiB/iter", "this is a slope .* expects a size"),
    ("rss", "slope", -1, ">= 0"),
    ("rss", "slope", [1], "expected a number or a string"),
    ("rss", "slope", True, "expected a number or a string"),
    ("threads", "slope", "1 KiB/iter", "unknown unit"),
    ("iter_time", "slope", "1 KiB/iter", "unknown unit"),
])
def test_bad_values_say_what_and_where(probe: str, kind: str, value: object, match: str) -> None:
    with pytest.raises(SpecError, match=match) as info:
        parse_quantity(PROBES[probe], kind, value, "in the membudget marker of test_x")
    assert "test_x" in str(info.value)
    assert repr(value) in str(info.value)


def test_budget_keys() -> None:
    assert split_budget_key("rss") == ("rss", "slope")
    assert split_budget_key("heap_peak") == ("heap", "peak")
    assert split_budget_key("gc_objects_growth") == ("gc_objects", "growth")
    with pytest.raises(SpecError, match=r"unknown budget 'rsss'.*rss"):
        split_budget_key("rsss")


def test_marker_overrides_defaults_and_none_removes_one() -> None:
    defaults = (Budget("rss", "slope", 0.0, "ini"), Budget("threads", "slope", 0.0, "ini"))
    spec = build_spec(DEFAULTS, defaults, {"rss": "1 KiB/iter", "threads": None,
                                           "iterations": 50, "warmup": 2}, W)
    assert spec.for_probe("rss")["slope"].limit == 1024
    assert "threads" not in spec.probes
    assert spec.run.iterations == 50 and spec.run.warmup == 2


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"iterations": 0}, "iterations=0"),
    ({"iterations": -3}, "iterations=-3"),
    ({"iterations": "many"}, "iterations='many'"),
    ({"warmup": -1}, "warmup=-1 .* must be >= 0"),
    ({"warmup": 2.5}, "warmup=2.5"),
    ({"max_seconds": 0}, "max_seconds=0"),
    ({"gc": "sometimes"}, "gc='sometimes'"),
    ({"evidence": "maybe"}, "evidence='maybe'"),
    ({"confidence": 2}, "confidence=2"),
    ({"min_iterations": 500, "max_iterations": 100}, "min_iterations=500 is above"),
])
def test_bad_run_settings(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(SpecError, match=match):
        build_spec(DEFAULTS, (), kwargs, W)


def test_budget_lines() -> None:
    assert parse_budget_line("rss=4 KiB/iter", W) == Budget("rss", "slope", 4096.0, W)
    assert parse_budget_line(" rss_peak = 1 GiB ", W).limit == 1024**3
    with pytest.raises(SpecError, match="write budgets as <probe>=<value>"):
        parse_budget_line("rss 0", W)
