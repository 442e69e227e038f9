"""Baselines: save, autosave, compare with tolerances, and every bad-file path."""

from __future__ import annotations

import pytest
from support.gating_workloads import RUN, make, no_internal_error, read_json, saved, write_baseline


def test_save_then_a_regression_fails_the_run_and_lists_the_test(
        pytester: pytest.Pytester) -> None:
    make(pytester, 1)
    pytester.runpytest(*RUN, "--membudget-save=main").assert_outcomes(passed=3)
    [path] = saved(pytester)
    assert path.name == "main.json" and read_json(path)["name"] == "main"
    assert path.parent.name == read_json(path)["machine"]["fingerprint"]
    make(pytester, 3)  # within its budget, but three times the slope
    result = pytester.runpytest(*RUN, "--membudget-compare")
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*membudget: compared with baseline *main.json: 2 slope(s) and 0 rise(s) or peak(s) "
        "in 2 test(s): 1 regressed*",
        "MEMORY REGRESSIONS*",
        "*test_work.py::test_grows*gc_objects*1 objects/iter*3 objects/iter*regressed",
    ])
    assert "every compared figure" not in result.stdout.str()  # all rows only at -v
    no_internal_error(result)


@pytest.mark.parametrize("tolerance", [
    ["--membudget-compare-fail=gc_objects:5", "--membudget-compare-fail=fds:off"],
    "ini",
])
def test_tolerances_let_a_small_regression_pass(pytester: pytest.Pytester,
                                                tolerance: list[str] | str) -> None:
    write_baseline(pytester, "main", grows=1.0)
    make(pytester, 3)
    if tolerance == "ini":  # membudget_compare_fail is read
        pytester.makeini("[pytest]\nmembudget_compare_fail =\n    all:300%\n")
        tolerance = []
    result = pytester.runpytest(*RUN, "--membudget-compare=main", "-v", *tolerance)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*0 regressed, 1 worse within tolerance, 1 same*",
                                 "every compared figure:", "*test_grows*gc_objects*worse"])


def test_save_refuses_an_existing_name_unless_overwrite(pytester: pytest.Pytester) -> None:
    path = write_baseline(pytester, "main")
    before = path.read_text()
    make(pytester, 1)
    result = pytester.runpytest(*RUN, "--membudget-save=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*a baseline named 'main' already exists: *main.json; "
                                 "choose another name, or add --membudget-save-overwrite*"])
    assert path.read_text() == before
    pytester.runpytest(*RUN, "--membudget-save=main", "--membudget-save-overwrite")
    assert path.read_text() != before and read_json(path)["name"] == "main"


def test_autosave_from_ini_and_compare_takes_the_latest(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmembudget_autosave = true\nmembudget_storage = baselines\n")
    write_baseline(pytester, "old", grows=5.0, folder="baselines")  # older: would be better
    make(pytester, 1)
    pytester.runpytest(*RUN).assert_outcomes(passed=3)
    [auto] = [p for p in saved(pytester, "baselines") if p.name.startswith("auto-")]
    make(pytester, 3)
    result = pytester.runpytest(*RUN, "--membudget-compare")
    result.stdout.fnmatch_lines([f"*compared with baseline {auto}:*1 regressed*"])
    assert len(saved(pytester, "baselines")) == 3  # compared with the latest, then saved


def test_storage_flag_and_compare_by_path(pytester: pytest.Pytester) -> None:
    path = write_baseline(pytester, "ci", path=pytester.path / "downloaded" / "ci.json")
    make(pytester, 1)
    result = pytester.runpytest(*RUN, "--membudget-storage=elsewhere", "--membudget-save=b",
                                f"--membudget-compare={path}")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*compared with baseline {path}: *0 regressed*"])
    assert [p.name for p in saved(pytester, "elsewhere")] == ["b.json"]


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "is not valid JSON*damaged or truncated*"),
    ('{"benchmarks": []}', "is not a pytest-membudget report or baseline*"),
    ('{"format": "pytest-membudget", "schema": 99, "tests": {}}',
     "was written by a newer pytest-membudget (schema 99*upgrade*"),
])
def test_bad_baseline_files_are_usage_errors_and_stay_untouched(
        pytester: pytest.Pytester, content: str, message: str) -> None:
    path = write_baseline(pytester, "main")
    path.write_text(content)
    make(pytester, 1)
    result = pytester.runpytest(*RUN, "--membudget-compare=main", "--membudget-autosave")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-membudget: {path} {message}"])
    no_internal_error(result)
    assert path.read_text() == content and len(saved(pytester)) == 1


@pytest.mark.parametrize(("args", "message"), [
    (["--membudget-compare"], "*no saved baseline for this machine*--membudget-save=NAME*"),
    (["--membudget-compare=nope"], "*no baseline named 'nope'*"),
    (["--membudget-compare=gone.json"], "*--membudget-compare=gone.json: no such file*"),
    (["--membudget-compare-fail=rss:10%"],
     "*--membudget-compare-fail sets the tolerances of --membudget-compare, which is not*"),
    (["--membudget-compare", "--membudget-compare-fail=rss:lots"],
     "*tolerance 'rss:lots'*from --membudget-compare-fail*"),
    (["--membudget-save=../up"], "*baseline name '../up' from --membudget-save cannot be*"),
])
def test_compare_and_save_usage_errors(pytester: pytest.Pytester, args: list[str],
                                       message: str) -> None:
    make(pytester, 1)
    result = pytester.runpytest(*RUN, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    no_internal_error(result)


def test_a_run_without_gating_writes_nothing(pytester: pytest.Pytester) -> None:
    make(pytester, 1)
    pytester.runpytest(*RUN).assert_outcomes(passed=3)
    # Python's own bytecode cache aside (written unless PYTHONDONTWRITEBYTECODE is set).
    written = sorted(p.name for p in pytester.path.iterdir() if p.name != "__pycache__")
    assert written == ["test_work.py"]
