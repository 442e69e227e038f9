"""Rises, peaks and phases against a baseline: one reading each, judged with a margin."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_membudget.judge.regression import (
    BETTER,
    PEAK,
    REGRESSED,
    RISE,
    SAME,
    SLOPE,
    UNJUDGED,
    WORSE,
    classify_once,
    compare,
)
from pytest_membudget.judge.tolerance import Tolerance, parse_tolerances

MIB = 1024.0 * 1024.0
DEFAULTS = parse_tolerances([], "here")


def test_one_reading_regresses_above_the_margin() -> None:
    ten = Tolerance(relative=0.10, absolute=4 * MIB)
    assert classify_once(100 * MIB, 111 * MIB, ten) == REGRESSED
    assert classify_once(100 * MIB, 109 * MIB, ten) == SAME
    assert classify_once(100 * MIB, 89 * MIB, ten) == BETTER
    assert classify_once(10 * MIB, 13 * MIB, ten) == SAME  # within the 4 MiB floor
    assert classify_once(10 * MIB, 15 * MIB, ten) == REGRESSED
    assert classify_once(100 * MIB, 200 * MIB, Tolerance(0.1, gated=False)) == WORSE
    assert classify_once(None, 5.0, ten) == UNJUDGED
    assert classify_once(float("nan"), 5.0, ten) == UNJUDGED


@given(st.floats(0, 1e12), st.floats(0, 1e12), st.floats(0, 10), st.floats(0, 1e9))
def test_once_rule_invariants(base: float, new: float, relative: float,
                              absolute: float) -> None:
    tolerance = Tolerance(relative, absolute)
    status = classify_once(base, new, tolerance)
    assert (status == REGRESSED) == (new > base + max(absolute, relative * base))
    assert classify_once(base, base, tolerance) == SAME
    looser = classify_once(base, new, Tolerance(relative + 1, absolute + 1))
    assert not (looser == REGRESSED and status != REGRESSED)


def probe(*, rise: float | None = None, peak: float | None = None, start: float | None = None,
          budgets: dict[str, float] | None = None, ci: list[float | None] | None = None,
          ) -> dict[str, Any]:
    data: dict[str, Any] = {"slope": 0.0, "ci": ci or [None, None], "peak": peak,
                            "budgets": {"slope": None, "peak": None, "growth": None,
                                        "rise": None, **(budgets or {})}}
    if rise is not None:
        data["rise"] = rise
    if start is not None:
        data["start"] = start
    return data


def doc(**tests: dict[str, Any]) -> dict[str, Any]:
    return {"tests": tests}


def test_a_footprint_eight_times_bigger_regresses_and_its_slope_is_not_compared() -> None:
    base = doc(t={"iterations": 1, "probes": {"rss": probe(rise=25 * MIB, peak=90 * MIB,
                                                           budgets={"rise": 2 * 1024 * MIB})}})
    new = doc(t={"iterations": 1, "probes": {"rss": probe(rise=200 * MIB, peak=270 * MIB,
                                                          budgets={"rise": 2 * 1024 * MIB})}})
    result = compare(base, new, DEFAULTS)
    assert [(c.probe, c.kind, c.status) for c in result.changes] == [("rss", RISE, REGRESSED)]
    assert result.changes[0].change == pytest.approx(7.0)
    assert compare(base, base, DEFAULTS).regressions == ()


def test_peaks_where_budgeted_and_slopes_beside_footprint_budgets() -> None:
    budgets = {"peak": 4 * 1024 * MIB, "slope": 0.0}
    base = doc(t={"iterations": 100, "probes": {"rss": probe(peak=100 * MIB, budgets=budgets,
                                                             ci=[0.0, 10.0])}})
    new = doc(t={"iterations": 100, "probes": {"rss": probe(peak=300 * MIB, budgets=budgets,
                                                            ci=[0.0, 12.0])}})
    result = compare(base, new, DEFAULTS)
    assert [(c.kind, c.status) for c in result.changes] == [(SLOPE, SAME), (PEAK, REGRESSED)]


def test_a_figure_is_compared_only_where_both_runs_budget_it() -> None:
    base = doc(t={"probes": {"rss": probe(rise=1 * MIB, peak=9 * MIB,
                                          budgets={"peak": 1024 * MIB})}})
    new = doc(t={"probes": {"rss": probe(rise=99 * MIB, peak=9 * MIB,
                                         budgets={"rise": 1024 * MIB})}})
    assert compare(base, new, DEFAULTS).changes == ()


def test_a_report_without_rises_has_them_from_peak_and_start() -> None:
    base = doc(t={"probes": {"rss": probe(peak=110 * MIB, start=100 * MIB,
                                          budgets={"rise": 1024 * MIB})}})
    new = doc(t={"probes": {"rss": probe(rise=40 * MIB, budgets={"rise": 1024 * MIB})}})
    [change] = compare(base, new, DEFAULTS).changes
    assert change.base.value == 10 * MIB and change.status == REGRESSED


def phase(name: str, rise: float, **extra: Any) -> dict[str, Any]:
    return {"name": name, "rise": rise, "budgets": [], "probes": {}, **extra}


def test_phases_are_compared_by_name_on_their_rise_and_their_budgets() -> None:
    heap_budget = [{"key": "heap_rise", "probe": "heap", "kind": "rise", "limit": 1e9}]
    base = doc(t={"probes": {}, "phases": [
        phase("load", 25 * MIB), phase("gone", 1 * MIB),
        phase("parse", 30 * MIB, budgets=heap_budget, probes={"heap": {"rise": 20 * MIB}})]})
    new = doc(t={"probes": {}, "phases": [
        phase("load", 200 * MIB), phase("new", 1 * MIB),
        phase("parse", 31 * MIB, budgets=heap_budget, probes={"heap": {"rise": 40 * MIB}})]})
    result = compare(base, new, DEFAULTS)
    assert [(c.phase, c.probe, c.kind, c.status) for c in result.changes] == [
        ("load", "rss", RISE, REGRESSED), ("parse", "rss", RISE, SAME),
        ("parse", "heap", RISE, REGRESSED)]
    assert result.changes[0].key == "rss_rise"


def test_footprint_tolerances_apply_to_runs_and_phases_alike() -> None:
    base = doc(t={"probes": {}, "phases": [phase("load", 100 * MIB)]})
    new = doc(t={"probes": {}, "phases": [phase("load", 125 * MIB)]})
    assert compare(base, new, DEFAULTS).regressions == ()  # within the default 30 %
    assert len(compare(base, new, parse_tolerances(["rss_rise:10%"], "h")).regressions) == 1
    # off: shown, never a regression; "worse" beyond the default margin.
    tripled = doc(t={"probes": {}, "phases": [phase("load", 300 * MIB)]})
    off = compare(base, tripled, parse_tolerances(["rss_rise:10%", "rss_rise:off"], "h"))
    assert off.regressions == () and off.count(WORSE, footprint=True) == 1


def test_malformed_entries_are_left_out_not_fatal() -> None:
    base = doc(t={"probes": {"rss": "?"}, "phases": ["?", {"name": "x", "rise": None}]},
               u="?")
    new = doc(t={"probes": {"rss": probe(rise=1.0, budgets={"rise": 1.0})},
                 "phases": [{"name": "x", "rise": 5.0, "budgets": ["?"]}]}, u={})
    result = compare(base, new, DEFAULTS)
    assert [(c.phase, c.status) for c in result.changes] == [("x", UNJUDGED)]
