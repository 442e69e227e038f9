"""Under pytest-xdist the controller alone writes the JSON report, covering every worker."""

from __future__ import annotations

import pytest
from support.gating_workloads import RUN, make, read_json, saved

pytest.importorskip("xdist")


def test_json_and_baseline_hold_every_test_under_two_workers(pytester: pytest.Pytester) -> None:
    make(pytester, 1, failing=True)
    result = pytester.runpytest(*RUN, "-n", "2", "--membudget-json=report.json",
                                "--membudget-save=xdist")
    result.assert_outcomes(passed=3, failed=1)
    document = read_json(pytester.path / "report.json")
    assert sorted(n.split("::")[-1] for n in document["tests"]) == [
        "test_flat", "test_grows", "test_over"]
    assert {t["outcome"] for t in document["tests"].values()} == {"passed", "failed"}
    [baseline] = saved(pytester)
    assert read_json(baseline)["tests"].keys() == document["tests"].keys()
    # Written once, by the controller: no stray temporary files from workers.
    assert sorted(p.name for p in pytester.path.glob("*.json")) == ["report.json"]
    assert not list(pytester.path.glob(".*.tmp"))
