"""--membudget-json: every budgeted test's results in one JSON file."""

from __future__ import annotations

import pytest
from support.gating_workloads import RUN, make, no_internal_error, read_json


def test_json_holds_every_budgeted_test_failed_ones_too(pytester: pytest.Pytester) -> None:
    make(pytester, 1, failing=True)
    result = pytester.runpytest(*RUN, "--membudget-json=out/report.json")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*membudget: wrote 3 budgeted test(s) to *report.json"])
    document = read_json(pytester.path / "out" / "report.json")
    assert document["format"] == "pytest-membudget" and document["schema"] == 2
    tests = document["tests"]
    assert sorted(n.split("::")[-1] for n in tests) == ["test_flat", "test_grows", "test_over"]
    over = next(t for n, t in tests.items() if n.endswith("test_over"))
    assert over["outcome"] == "failed" and over["passed"] is False
    assert over["probes"]["gc_objects"]["verdict"] == "fail"
    grows = next(t for n, t in tests.items() if n.endswith("test_grows"))
    assert grows["outcome"] == "passed" and grows["probes"]["gc_objects"]["slope"] > 0
    assert "samples" not in grows["probes"]["gc_objects"] and document["samples"] is False
    assert document["exitstatus"] == 1
    assert document["machine"]["cpu_count"] >= 1 and document["machine"]["fingerprint"]
    assert document["versions"]["pytest"] == pytest.__version__


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_samples_on_request(pytester: pytest.Pytester, how: str) -> None:
    make(pytester, 1)
    if how == "ini":  # both ini keys are read
        pytester.makeini("[pytest]\nmembudget_json = ini-report.json\n"
                         "membudget_json_samples = true\n")
        pytester.runpytest(*RUN).assert_outcomes(passed=3)
        path = pytester.path / "ini-report.json"
    else:
        pytester.runpytest(*RUN, "--membudget-json=r.json", "--membudget-json-samples")
        path = pytester.path / "r.json"
    document = read_json(path)
    probe = next(iter(document["tests"].values()))["probes"]["gc_objects"]
    assert document["samples"] is True
    assert len(probe["samples"]) == len(probe["sample_iterations"]) > 20


def test_json_path_that_is_a_directory_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make(pytester, 1)
    pytester.mkdir("reports")
    result = pytester.runpytest(*RUN, "--membudget-json=reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--membudget-json: *reports is a directory*"])
    no_internal_error(result)


def test_write_failure_at_the_end_is_reported_not_raised(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.artifacts import files as storage

    def full_disk(path: object, document: object) -> None:
        raise storage.ReportFileError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(storage, "write_json", full_disk)
    make(pytester, 1)
    result = pytester.runpytest(*RUN, "--membudget-json=r.json")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*membudget error: cannot write *r.json: No space left*"])
    no_internal_error(result)
