"""From a real run to a dashboard's file: pytest --membudget-json, then membudget export."""

from __future__ import annotations

import json

import pytest
from support.dashboard_formats import bmf_problems, custom_benchmark_problems
from support.gating_workloads import RUN, make, read_json

from pytest_membudget.cli import main


def test_a_report_of_a_real_run_exports_to_both_formats(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    make(pytester, 2, failing=True)
    pytester.runpytest(*RUN, "--membudget-json=report.json").assert_outcomes(passed=3, failed=1)
    report = pytester.path / "report.json"
    tests = read_json(report)["tests"]
    capsys.readouterr()

    bmf = pytester.path / "bmf.json"
    assert main(["export", str(report), "--format", "bencher", "--out", str(bmf)]) == 0
    data = json.loads(bmf.read_text())
    assert bmf_problems(data) == []
    assert sorted(n.split("::")[-1] for n in data) == ["test_flat", "test_grows", "test_over"]
    for nodeid, measures in data.items():
        probe = tests[nodeid]["probes"]["gc_objects"]
        slope = measures["gc_objects slope (objects/iter)"]
        assert slope["value"] == probe["slope"]
        assert [slope.get("lower_value"), slope.get("upper_value")] == probe["ci"]
        assert measures["gc_objects peak (objects)"]["value"] == probe["peak"]

    gab = pytester.path / "gab.json"
    assert main(["export", str(report), "--format", "github-action-benchmark",
                 "--out", str(gab)]) == 0
    entries = json.loads(gab.read_text())
    assert custom_benchmark_problems(entries) == []
    over = next(e for e in entries if "test_over" in e["name"])
    assert "verdict: fail (test over budget)" in over["extra"]
    assert over["unit"] == "objects/iter"
