"""The two time probes, wall time (iter_time) and CPU time (iter_cpu_time), take the same
budgets, units, errors and slope rule."""

from __future__ import annotations

import numpy as np
import pytest
from support import series

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.spec import (
    Budget,
    BudgetSpec,
    SpecError,
    build_spec,
    parse_quantity,
    split_budget_key,
)
from pytest_membudget.judge.verdict import FAIL, PASS, judge
from pytest_membudget.settings import default_run
from pytest_membudget.vocabulary import BudgetKind, ProbeKind

TIME_PROBES = ("iter_time", "iter_cpu_time")
WHERE = "in the membudget marker of test_x"
N = 400
X = series.x(N)


@pytest.mark.parametrize("probe", TIME_PROBES)
def test_both_are_times_with_a_relative_resolution(probe: str) -> None:
    info = PROBES[probe]
    assert info.kind is ProbeKind.SECONDS and info.unit == "s"
    assert info.relative_resolution == PROBES["iter_time"].relative_resolution > 0


@pytest.mark.parametrize("probe", TIME_PROBES)
@pytest.mark.parametrize(("kind", "text", "seconds"), [
    ("slope", "2 us/iter", 2e-6), ("slope", "0.5 ms/iter", 5e-4), ("slope", 0, 0.0),
    ("slope", "300 ns/iter", 3e-7), ("peak", "5 ms", 5e-3), ("growth", "1 s", 1.0),
])
def test_time_units(probe: str, kind: str, text: object, seconds: float) -> None:
    assert parse_quantity(PROBES[probe], kind, text, WHERE) == pytest.approx(seconds)


@pytest.mark.parametrize("probe", TIME_PROBES)
@pytest.mark.parametrize(("kind", "value", "match"), [
    ("slope", "1 KiB/iter", r"unknown unit 'KiB'; use s, ms, us, ns"),
    ("slope", "2 us", r"this is a size, but \w+ is a slope budget.*'2 us/iter'"),
    ("peak", "2 us/iter", "this is a slope"),
    ("slope", "fast", r"cannot read this as a quantity; write it like '1 ms/iter'"),
    ("slope", -1, ">= 0"),
    ("slope", True, "expected a number or a string"),
])
def test_bad_values_name_the_budget_the_value_and_the_test(probe: str, kind: str, value: object,
                                                             match: str) -> None:
    with pytest.raises(SpecError, match=match) as info:
        parse_quantity(PROBES[probe], kind, value, WHERE)
    label = probe + BudgetKind(kind).suffix
    assert f"{label}={value!r}" in str(info.value) and "test_x" in str(info.value)


@pytest.mark.parametrize("probe", TIME_PROBES)
def test_a_time_has_no_rise(probe: str) -> None:
    with pytest.raises(SpecError, match=f"{probe} is a time"):
        split_budget_key(f"{probe}_rise")


def test_the_marker_budgets_cpu_time_beside_wall_time() -> None:
    spec = build_spec(default_run(), (), {"iter_time": "10 us/iter",
                                          "iter_cpu_time": "2 us/iter"}, "in test")
    assert spec.probes == ("iter_time", "iter_cpu_time")
    assert spec.for_probe("iter_cpu_time")[BudgetKind.SLOPE].limit == pytest.approx(2e-6)


def status(y: np.ndarray, probe: str, limit: float = 0.0) -> str:
    spec = BudgetSpec((Budget(probe, "slope", limit, "test"),), default_run())
    verdict = judge(spec, series.x(len(y)), {probe: y}, {}, longest_tail=1000.0)
    return verdict.probes[probe].outcomes[0].status


@pytest.mark.parametrize("probe", TIME_PROBES)
def test_the_same_slope_rule(probe: str) -> None:
    # Slowing by 2 % of the iteration over the tail is below the resolution; by half, not.
    assert status(1e-3 * (1 + 0.02 * X / N), probe) != FAIL
    assert status(1e-3 * (1 + 0.5 * X / N), probe) == FAIL
    # 1 us/iter of slowdown from 0.1 ms, against budgets either side of it.
    assert status(1e-4 + 1e-6 * X, probe, limit=2e-6) == PASS
    assert status(1e-4 + 1e-6 * X, probe, limit=0.5e-6) == FAIL
