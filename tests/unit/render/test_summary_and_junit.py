"""The terminal summary table at each verbosity, and the JUnit properties."""

from __future__ import annotations

from typing import Any

from pytest_membudget.artifacts.junit import junit_properties
from pytest_membudget.render.session import summary_table


def result(passed: bool, verdict: str, slope: float = 2048.0) -> dict[str, Any]:
    return {
        "passed": passed, "iterations": 200, "warmup": 5, "stopped": "clear",
        "probes": {
            "rss": {"slope": slope, "ci": [1024.0, 4096.0], "peak": 3 * 1024**2,
                    "growth": 4096.0, "verdict": verdict,
                    "budgets": {"slope": 0.0, "peak": 2 * 1024**3, "growth": None}},
            "fds": {"slope": 0.0, "ci": [0.0, 0.0], "peak": 12.0, "growth": 0.0,
                    "verdict": "pass", "budgets": {"slope": 0.0}},
        },
    }


RESULTS = [("t.py::test_leak", result(False, "fail")),
           ("t.py::test_ok", result(True, "pass", 0.0)),
           ("t.py::test_unsure", result(True, "inconclusive"))]


def test_default_verbosity_lists_every_probe_of_every_test() -> None:
    lines = summary_table(RESULTS, 0)
    assert lines[0].split() == ["test", "probe", "slope", "bounds/iter", "budget", "peak",
                                "iters", "verdict"]
    assert len(lines) == 1 + 6
    leak = lines[1]
    for part in ("t.py::test_leak", "rss", "2 KiB/iter", "[1 KiB, 4 KiB]",
                 "0 B/iter, peak 2 GiB", "3 MiB", "200", "fail"):
        assert part in leak
    assert lines[2].startswith(" ") and "fds" in lines[2]  # the test's name once


def test_verbose_adds_columns_quiet_keeps_what_did_not_pass() -> None:
    verbose = summary_table(RESULTS, 1)
    assert verbose[0].split()[-3:] == ["growth", "warm-up", "stopped"]
    assert "auto: stopped when the verdict was clear" in verbose[1]
    quiet = "\n".join(summary_table(RESULTS, -1))
    assert "test_leak" in quiet and "test_unsure" in quiet and "test_ok" not in quiet
    assert summary_table(RESULTS, -2) == []
    assert summary_table([], 0) == []


def test_junit_properties_are_readable_per_probe() -> None:
    props = dict(junit_properties(result(False, "fail")))
    assert props["membudget.verdict"] == "fail"
    assert props["membudget.iterations"] == "200 after 5 warm-up (clear)"
    assert props["membudget.rss.slope"] == "2 KiB/iter [1 KiB/iter, 4 KiB/iter]"
    assert props["membudget.rss.budget"] == "0 B/iter, peak 2 GiB"
    assert props["membudget.rss.peak"] == "3 MiB"
    assert props["membudget.rss.verdict"] == "fail"
    assert props["membudget.fds.budget"] == "0 fds/iter"
    assert dict(junit_properties(result(True, "inconclusive")))["membudget.verdict"] \
        == "inconclusive"
    disabled = {"passed": True, "stopped": "disabled", "probes": {}}
    assert dict(junit_properties(disabled))["membudget.verdict"] == "disabled"


def test_a_phase_gets_a_row_for_each_probe_it_budgets() -> None:
    from pytest_membudget.render.session import phase_rows

    phase = {"name": "load", "calls": 1, "rise": 2e6, "verdict": "fail",
             "budgets": [{"key": "gc_objects_rise", "probe": "gc_objects", "kind": "rise",
                          "limit": 100.0}],
             "probes": {"rss": {"peak": 60e6, "rise": 2e6},
                        "gc_objects": {"peak": 50_300.0, "rise": 300.0}}}
    rss, objects = phase_rows("t.py::test", phase)
    assert rss[1] == "rss [load]" and rss[4] == "-"
    assert objects[1] == "gc_objects [load]" and objects[4].startswith("rise 100")
    assert "+300" in objects[5]
