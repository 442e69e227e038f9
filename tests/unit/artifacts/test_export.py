"""Exports for dashboards: Bencher Metric Format and github-action-benchmark's
customSmallerIsBetter, checked against the formats' published descriptions."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from support.dashboard_formats import bmf_problems, custom_benchmark_problems

from pytest_membudget.artifacts import exporters
from pytest_membudget.artifacts.document import build_document, upgrade

FACTS = {"fingerprint": "Linux-x86_64-CPython-3.11-2cpu", "cuda_device": None}


def probe(slope: float | None, ci: list[float | None], peak: float | None = 1e6,
          verdict: str = "pass", unit: str = "B", budget: float | None = 0.0) -> dict[str, Any]:
    return {"unit": unit, "slope": slope, "ci": ci, "peak": peak, "growth": 0.0,
            "verdict": verdict, "budgets": {"slope": budget, "peak": None, "growth": None},
            "outcomes": []}


def result(probes: dict[str, Any], **fields: Any) -> dict[str, Any]:
    data = {"passed": True, "complete": True, "iterations": 640, "warmup": 5,
            "stopped": "clear", "settings": {"confidence": 0.99}, "probes": probes}
    return data | fields


def document(*tests: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return build_document(list(tests), {}, samples=False, machine_facts=FACTS)


RUN = document(
    ("t.py::test_clean", result({"rss": probe(1.5, [-40.0, 48.0], peak=5.5e7),
                                 "gc_objects": probe(0.0, [0.0, 0.0], unit="objects")})),
    ("t.py::test_leak", result({"rss": probe(192.0, [176.0, 198.0], verdict="fail")},
                               passed=False)),
    ("t.py::test_unsure", result({"rss": probe(40.0, [None, 90.0], verdict="inconclusive")},
                                 stopped="cap")),
    ("t.py::test_raised", result({"rss": probe(9.0, [1.0, 20.0])}, complete=False,
                                 stopped="running")),
    ("t.py::test_disabled", result({}, stopped="disabled", iterations=1, warmup=0)),
    ("t.py::test_short", result({"rss": probe(None, [None, None], peak=4e7)})),
)


# -- the checks follow the published descriptions, and can fail ------------------------------

def test_the_bmf_check_takes_the_documented_shape_and_catches_what_breaks_it() -> None:
    good = {"my_bench": {"latency": {"value": 3.0, "lower_value": 2.5, "upper_value": 3.5},
                         "size": {"value": 42}}}
    assert bmf_problems(good) == []
    bad: list[Any] = [[], {"": {}}, {"b": []}, {"b": {"m": {"lower_value": 1.0}}},
                      {"b": {"m": {"value": "3"}}}, {"b": {"m": {"value": True}}},
                      {"b": {"m": {"value": 1.0, "upper_value": 0.5}}},
                      {"b": {"m" * 65: {"value": 1.0}}}, {"b" * 1025: {"m": {"value": 1.0}}},
                      {"b": {"m": {"value": float("nan")}}}]
    for data in bad:
        assert bmf_problems(data), data


def test_the_custom_benchmark_check_takes_the_documented_shape_and_catches_what_breaks_it(
) -> None:
    good = [{"name": "a - cpu", "unit": "Percent", "value": 50},
            {"name": "a - memory", "unit": "Megabytes", "value": 100, "range": "3",
             "extra": "tooltip line\nanother"}]
    assert custom_benchmark_problems(good) == []
    bad: list[Any] = [{}, [], [{"name": "a", "value": 1}], [{"name": "a", "unit": "B"}],
                      [{"name": "a", "unit": "B", "value": "1"}],
                      [{"name": "a", "unit": "B", "value": 1, "range": 3}],
                      [{"name": "a", "unit": "B", "value": 1, "note": "x"}],
                      [{"name": "a", "unit": "B", "value": 1}] * 2]
    for data in bad:
        assert custom_benchmark_problems(data), data


# -- Bencher ----------------------------------------------------------------------------------

def test_bencher_one_benchmark_per_test_with_slope_bounds_and_peak() -> None:
    out = exporters.export(RUN, "bencher")
    assert bmf_problems(out.data) == []
    clean = out.data["t.py::test_clean"]
    assert clean["rss slope (B/iter)"] == {"value": 1.5, "lower_value": -40.0,
                                           "upper_value": 48.0}
    assert clean["rss peak (B)"] == {"value": 5.5e7}
    assert clean["gc_objects slope (objects/iter)"]["value"] == 0.0
    # failed and inconclusive runs are figures too; an unestablished bound is left out
    assert out.data["t.py::test_leak"]["rss slope (B/iter)"]["lower_value"] == 176.0
    assert out.data["t.py::test_unsure"]["rss slope (B/iter)"] == {"value": 40.0,
                                                                   "upper_value": 90.0}
    # no slope: the peak alone
    assert out.data["t.py::test_short"] == {"rss peak (B)": {"value": 4e7}}
    assert "t.py::test_raised" not in out.data and "t.py::test_disabled" not in out.data
    assert out.figures == 9


def test_what_is_left_out_is_named_with_the_reason() -> None:
    reasons = dict(exporters.export(RUN, "bencher").left_out)
    assert "did not finish" in reasons["t.py::test_raised"]
    assert "disabled" in reasons["t.py::test_disabled"]
    assert "rss has no slope" in reasons["t.py::test_short"]


def test_a_node_id_longer_than_bencher_takes_is_shortened_and_stays_distinct() -> None:
    base = "t.py::test_param[" + "x" * 1100
    run = document((base + "a]", result({"rss": probe(1.0, [0.0, 2.0])})),
                   (base + "b]", result({"rss": probe(1.0, [0.0, 2.0])})))
    out = exporters.export(run, "bencher")
    assert bmf_problems(out.data) == [] and len(out.data) == 2
    assert all(len(name) == exporters.BENCHER_NAME_LIMIT for name in out.data)


def test_a_bound_on_the_wrong_side_of_the_slope_is_not_written() -> None:
    run = document(("t.py::test_odd", result({"rss": probe(5.0, [6.0, 4.0])})))
    assert exporters.export(run, "bencher").data["t.py::test_odd"]["rss slope (B/iter)"] \
        == {"value": 5.0}
    entry = exporters.export(run, "github-action-benchmark").data[0]
    assert "range" not in entry and custom_benchmark_problems([entry]) == []


# -- github-action-benchmark -----------------------------------------------------------------

def test_custom_smaller_is_better_one_entry_per_test_and_probe() -> None:
    out = exporters.export(RUN, "github-action-benchmark")
    assert custom_benchmark_problems(out.data) == []
    entries = {e["name"]: e for e in out.data}
    assert sorted(entries) == ["t.py::test_clean - gc_objects slope",
                               "t.py::test_clean - rss slope", "t.py::test_leak - rss slope",
                               "t.py::test_unsure - rss slope"]
    clean = entries["t.py::test_clean - rss slope"]
    assert clean["value"] == 1.5 and clean["unit"] == "B/iter"
    assert clean["range"] == "[-40, 48]"
    assert "verdict: pass" in clean["extra"] and "budget: 0 B/iter" in clean["extra"]
    assert "peak: 52.5 MiB" in clean["extra"] and "one-sided at 99%" in clean["extra"]
    leak = entries["t.py::test_leak - rss slope"]
    assert leak["range"] == "[176, 198]" and "verdict: fail (test over budget)" in leak["extra"]
    assert entries["t.py::test_unsure - rss slope"]["range"] == "(-inf, 90]"
    assert out.figures == 4


def test_no_bound_at_all_leaves_range_out() -> None:
    run = document(("t.py::test_open", result({"rss": probe(3.0, [None, None])})))
    entry = exporters.export(run, "github-action-benchmark").data[0]
    assert "range" not in entry and entry["value"] == 3.0


def test_a_schema_1_document_exports_like_today_s() -> None:
    old = copy.deepcopy(RUN)
    old["schema"] = 1
    for test in old["tests"].values():
        test.pop("window_start", None)
        test.pop("complete", None)
    old = upgrade(old)
    out = exporters.export(old, "bencher")
    assert bmf_problems(out.data) == []
    assert out.data["t.py::test_leak"]["rss slope (B/iter)"]["value"] == 192.0
    assert "t.py::test_raised" not in out.data  # stopped "running": it did not finish


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown export format 'csv'"):
        exporters.export(RUN, "csv")
