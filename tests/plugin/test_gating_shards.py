"""A suite run in four shards and merged gives the report of the unsharded run, verdict for
verdict; the merged report is shown, compared, exported, plotted and saved as a baseline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.gating_workloads import RUN, read_json, workloads

from pytest_membudget.cli import main

LOADER = '''
import pytest
KEPT, LOADED = [], []

@pytest.mark.membudget(gc_objects_rise=1_000_000, evidence=False)
def test_loader(membudget):
    membudget.run(lambda: KEPT.extend([] for _ in range(3000)))

def test_phases(membudget):
    with membudget.phase("load", gc_objects_rise=1_000_000):
        LOADED.extend([] for _ in range(3000))
'''
#: A footprint over its budget, so that not every verdict compared is a pass.
OVER = '''
@pytest.mark.membudget(gc_objects_rise=100, evidence=False)
def test_loader_over(membudget):
    membudget.run(lambda: KEPT.extend([] for _ in range(3000)))
'''
SHARDS = 4


def verdicts(document: dict[str, Any]) -> dict[str, Any]:
    """Every verdict of a report: each test's outcome, each probe's verdict and budget
    outcomes, each phase's verdict and failures."""
    found = {}
    for nodeid, test in document["tests"].items():
        found[nodeid] = (
            test["outcome"], test["passed"],
            {name: (p["verdict"], [(o["kind"], o["status"]) for o in p["outcomes"]])
             for name, p in test["probes"].items()},
            [(p["name"], p["verdict"], [f["kind"] for f in p["failures"]])
             for p in test.get("phases", [])])
    return found


def test_four_shards_merged_equal_the_unsharded_run(pytester: pytest.Pytester,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makepyfile(test_work=workloads(1, failing=True), test_loader=LOADER + OVER)
    whole = pytester.runpytest(*RUN, "--membudget-json=whole.json")
    whole.assert_outcomes(passed=5, failed=2)
    nodeids = sorted(read_json(pytester.path / "whole.json")["tests"])
    assert len(nodeids) == 6  # test_unbudgeted is not budgeted
    for shard in range(SHARDS):  # as a job matrix would: each its part, named by node id
        part = [n for i, n in enumerate(nodeids) if i % SHARDS == shard]
        pytester.runpytest(*RUN, f"--membudget-json=shards/membudget-{shard}.json",
                           "--membudget-json-samples", *part)
    assert main(["merge", "shards/*.json", "-o", "merged.json"]) == 0
    whole_report, merged = (read_json(pytester.path / name) for name in ("whole.json",
                                                                          "merged.json"))
    assert verdicts(merged) == verdicts(whole_report)
    assert merged["exitstatus"] == whole_report["exitstatus"] == 1
    assert [s["tests"] for s in merged["shards"]] == [2, 2, 1, 1]
    capsys.readouterr()
    # Every command takes it.
    # The phase's RSS rise, read in the outer pytest's process, moves by MiBs between runs.
    assert main(["compare", "whole.json", "merged.json", "--fail", "rss_rise:off"]) == 0
    assert "0 regressed" in capsys.readouterr().out
    assert main(["show", "merged.json"]) == 0
    assert "merged from 4 shard(s)" in capsys.readouterr().out
    assert main(["export", "merged.json", "--format", "github-action-benchmark"]) == 0
    pytest.importorskip("matplotlib")
    assert main(["plot", "merged.json", "--out", "plots"]) == 0
    # One per test: the phases-only test gets its phases on one timeline.
    assert len(list(Path(pytester.path / "plots").glob("*.png"))) == 6


def test_a_baseline_saved_from_merged_shards_gates_a_later_run(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_work=workloads(1), test_loader=LOADER)
    pytester.runpytest(*RUN, "--membudget-json=one.json", "test_work.py")
    pytester.runpytest(*RUN, "--membudget-json=two.json", "test_loader.py")
    assert main(["merge", "one.json", "two.json", "--save", "main"]) == 0
    pytester.makepyfile(test_work=workloads(3))  # three times the slope of test_grows
    result = pytester.runpytest(*RUN, "--membudget-compare=main",
                                "--membudget-compare-fail=rss_rise:off")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*compared with baseline *main.json: *1 regressed*",
                                 "*test_work.py::test_grows*gc_objects*regressed"])
