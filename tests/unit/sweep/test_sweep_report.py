"""The sweep's views of its records: the ranked table, the lists, the JSON section."""

from __future__ import annotations

import json
from typing import Any

from pytest_membudget.sweep.table import (
    evidence_text,
    leak_rows,
    reason_text,
    summary_lines,
    sweep_document,
)
from pytest_membudget.vocabulary import SweepMode


def leak(probe: str, slope: float, bytes_per_call: float | None,
         evidence: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"verdict": "leak", "flagged": {probe: slope * 8}, "calls": 700, "seconds": 0.5,
            "screen_seconds": 0.01, "first_call": 0.001, "allowed": 10.0,
            "bound": "sweep_seconds",
            "leaks": {"probes": [{"probe": probe, "unit": "x", "slope": slope,
                                  "lower": slope * 0.9, "upper": slope * 1.1}],
                      "bytes_per_call": bytes_per_call, "evidence": evidence}}


RECORDS: dict[str, dict[str, Any]] = {
    "t.py::test_small": leak("py_blocks", 1.0, 64.0,
                             {"kind": "site", "file": "t.py", "line": 3, "bytes": 6400,
                              "per_iter": 64.0, "code": "KEEP.append(1.5)"}),
    "t.py::test_big": leak("rss", 65536.0, 65536.0, {"kind": "native"}),
    "t.py::test_thread": leak("threads", 1.0, None,
                              {"kind": "thread", "name": "Thread-3", "target": "wait"}),
    "t.py::test_clean": {"verdict": "clean", "flagged": {}, "calls": 10, "seconds": 0.01,
                         "screen_seconds": 0.01, "first_call": 0.001},
    "t.py::test_once": {"verdict": "not repeatable", "flagged": {}, "calls": 0,
                        "reason": "raised", "detail": "AssertionError: assert 2 == 1",
                        "failed_call": 1, "seconds": 0.0, "screen_seconds": 0.0,
                        "first_call": 0.0},
    "t.py::test_slow": {"verdict": "cut short", "flagged": {}, "calls": 0, "seconds": 0.0,
                        "screen_seconds": 0.0, "first_call": 2.5, "allowed": 10.0,
                        "bound": "sweep_seconds"},
}


def test_leaks_are_ranked_by_bytes_per_call_then_by_slope() -> None:
    rows = leak_rows(RECORDS)
    assert [row[0] for row in rows] == ["t.py::test_big", "t.py::test_small",
                                        "t.py::test_thread"]
    assert rows[0][2] == "64 KiB/call"
    assert rows[1][4] == "t.py:3: +6.25 KiB (64 B/call)  KEEP.append(1.5)"
    assert rows[2][4] == "thread Thread-3 (target wait) still alive"


def test_evidence_lines() -> None:
    assert evidence_text(None) == "-"
    assert evidence_text({"kind": "fd", "target": "7 -> /dev/null"}) == (
        "descriptor still open: 7 -> /dev/null")
    assert evidence_text({"kind": "error", "text": "it raised"}) == "no evidence: it raised"
    assert "called from u.py:9" in evidence_text({
        "kind": "site", "file": "lib.py", "line": 1, "bytes": 10, "per_iter": 1.0,
        "via_file": "u.py", "via_line": 9})


def test_summary_counts_the_table_and_the_lists() -> None:
    lines = summary_lines(RECORDS, SweepMode.FAIL, 0)
    assert lines[0] == ("membudget sweep (fail): 5 test(s) repeated in place, 3 flagged by the "
                        "screen, 3 found leaking, 1 cut short, 1 not repeatable")
    text = "\n".join(lines)
    assert ("3 leaking tests, ranked by growth per call, one row per failing probe: 3 found by "
            "the sweep, failed") in text
    assert "t.py::test_once: repeat 1 raised AssertionError: assert 2 == 1" in text
    assert "t.py::test_slow: not screened: one call takes 2.5 s, too long for the screen" in text
    # -q keeps the table and the cut-short tests, not the list of tests not repeated.
    assert "test_once" not in "\n".join(summary_lines(RECORDS, SweepMode.REPORT, -1))
    assert summary_lines(RECORDS, SweepMode.REPORT, -2) == []
    assert summary_lines({}, SweepMode.REPORT, 0) == []


def test_reasons() -> None:
    assert reason_text({"reason": "doctest"}).startswith("doctest:")
    assert reason_text({"reason": "skipped", "failed_call": 3, "detail": "Skipped: x"}) == (
        "repeat 3 skipped (Skipped: x)")


def test_the_json_section_holds_the_same() -> None:
    document = sweep_document(RECORDS, SweepMode.REPORT)
    json.dumps(document, allow_nan=False)
    assert document["mode"] == "report"
    assert [e["test"] for e in document["leaks"]] == [row[0] for row in leak_rows(RECORDS)
                                                      if row[0]]
    assert document["leaks"][0]["evidence_text"] == "native memory (tracemalloc saw no Python "\
        "growth)"
    assert [e["test"] for e in document["not_repeatable"]] == ["t.py::test_once"]
    assert document["not_repeatable"][0]["reason_text"].startswith("repeat 1 raised")
    assert [e["test"] for e in document["cut_short"]] == ["t.py::test_slow"]
    assert document["counts"] == {"leak": 3, "clean": 1, "not repeatable": 1, "cut short": 1}
    assert document["seconds"]["sweep"] == 1.51


def test_an_inconclusive_test_names_the_bounded_cache_that_holds_its_growth() -> None:
    cache = {"name": "m.entry", "kind": "functools.lru_cache", "currsize": 75, "maxsize": 300,
             "per_call": 1.0, "calls_to_full": 225}
    records = {"t.py::test_fill": {"verdict": "inconclusive", "flagged": {"py_blocks": 16.0},
                                   "calls": 70, "held_by": [cache]},
               "t.py::test_other": {"verdict": "inconclusive", "flagged": {"rss": 1e5},
                                    "calls": 700}}
    text = "\n".join(summary_lines(records, SweepMode.REPORT, 0))
    assert ("t.py::test_fill: growth held by a bounded cache still filling: m.entry "
            "(functools.lru_cache): 75 of 300 entries, +1/call, full in about 225 calls") in text
    assert "t.py::test_other: the full verdict did not settle" in text


def own_budget_failure(probe: str, slope: float) -> dict[str, Any]:
    """A test with its own marker whose budget failed: listed with the sweep's leaks."""
    record = leak(probe, slope, None)
    record.update(verdict="own budgets", flagged={}, calls=0)
    return record


def test_the_table_title_counts_its_tests_and_says_which_failed() -> None:
    # Two leaks the sweep found (one with three failing probes: three rows) and two tests
    # that failed on their own budgets, which fail in report mode too.
    records = {
        "t.py::test_found": leak("py_blocks", 1.0, 65536.0),
        "t.py::test_found_too": leak("py_blocks", 2.0, 128.0),
        "t.py::test_own": own_budget_failure("gc_objects", 3.0),
        "t.py::test_own_too": own_budget_failure("threads", 1.0),
    }
    records["t.py::test_found"]["leaks"]["probes"] += [
        {"probe": "malloc", "unit": "B", "slope": 65536.0, "lower": 65000.0, "upper": 66000.0},
        {"probe": "rss", "unit": "B", "slope": 65536.0, "lower": 65000.0, "upper": 66000.0}]
    report = "\n".join(summary_lines(records, SweepMode.REPORT, 0))
    assert "nothing failed" not in report, report
    assert ("4 leaking tests, ranked by growth per call, one row per failing probe: 2 found by "
            "the sweep, reported only (not failed); 2 failed on their own budgets") in report
    assert "t.py::test_own (own budgets)" in report
    assert "t.py::test_found (own budgets)" not in report
    failing = "\n".join(summary_lines(records, SweepMode.FAIL, 0))
    assert "2 found by the sweep, failed; 2 failed on their own budgets" in failing
    # The sweep's finds alone: the title says what became of them, and how many they are.
    found = {k: v for k, v in records.items() if "own" not in k}
    assert ("2 leaking tests, ranked by growth per call, one row per failing probe: 2 found "
            "by the sweep, reported only (not failed)") in "\n".join(
                summary_lines(found, SweepMode.REPORT, 0))
    one = {"t.py::test_own": records["t.py::test_own"]}
    assert "1 leaking test, ranked by growth per call, one row per failing probe: 1 failed on "\
        "its own budgets" in "\n".join(summary_lines(one, SweepMode.REPORT, 0))
