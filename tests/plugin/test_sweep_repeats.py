"""How the sweep repeats a test: the same fixture values, pytest's own records kept flat, the
opt-out marker, tests with their own budgets, and the tests it does not repeat.

The inner runs are subprocesses: in process, the outer pytest's own log capture and probes
would see the inner test's repeats too."""

from __future__ import annotations

import json

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly")


def sweep_section(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-json=out.json", *args)
    document = json.loads((pytester.path / "out.json").read_text())
    return result, document["sweep"]


def records(section: dict) -> dict[str, str]:
    """test name -> sweep verdict, for every test of the run that the sweep listed."""
    found = {e["test"].split("::")[-1]: e["verdict"] for e in section["flagged"]}
    found.update({e["test"].split("::")[-1]: "not repeatable"
                  for e in section["not_repeatable"]})
    return found


def test_repeats_use_the_same_fixture_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import collections
        import pytest
        # Sets and counters: the record stays flat, so the tests themselves are clean.
        SEEN = collections.defaultdict(set)
        CALLS = collections.Counter()

        @pytest.fixture
        def made():
            return object()

        @pytest.fixture(params=["a", "b"])
        def letter(request):
            return request.param

        def test_body(made, letter):
            SEEN[letter].add(id(made))
            CALLS[letter] += 1

        class TestInClass:
            def test_method(self, made):
                SEEN["class"].add((id(self), id(made)))
                CALLS["class"] += 1

        @pytest.mark.no_membudget_sweep
        def test_check():
            # Each test's own call and its repeats saw one fixture value (and one instance).
            assert {key: len(values) for key, values in SEEN.items()} == {
                "a": 1, "b": 1, "class": 1}
            # Its own call, 2 warm-up calls and at least the screen's first 2 measured (a
            # clean test's screen stops there).
            assert min(CALLS.values()) >= 5, CALLS
    """)
    result, section = sweep_section(pytester, "--membudget-sweep")
    result.assert_outcomes(passed=4)
    assert section["counts"] == {"clean": 3, "opted out": 1}


def test_pytest_records_stay_flat_and_output_is_not_repeated(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import logging, os, warnings
        import pytest

        def test_logs(caplog):
            logging.getLogger("t").warning("careful")
            assert [r.getMessage() for r in caplog.records] == ["careful"]

        def test_prints(capsys):
            print("hello")
            assert capsys.readouterr().out == "hello\\n"

        def test_prints_unread():
            print("unread output")
            logging.getLogger("t").error("logged")

        def test_warns(recwarn):
            warnings.warn("old", DeprecationWarning)
            assert len(recwarn) == 1

        def test_warns_uncaught():
            warnings.warn("uncaught", DeprecationWarning)

        def test_patches(monkeypatch):
            monkeypatch.setenv("SWEEP_VAR", "1")
            monkeypatch.setattr(os, "curdir", ".")
            monkeypatch.setitem(os.environ, "SWEEP_OTHER", "2")

        def test_fails_after_output():
            print("first call output")
            assert False
    """)
    result, section = sweep_section(pytester, "--membudget-sweep")
    result.assert_outcomes(passed=6, failed=1)
    assert section["counts"] == {"clean": 6, "not screened": 1}, section
    output = result.stdout.str()
    # pytest shows the first call's records only, once.
    assert result.outlines.count("first call output") == 1, output
    assert output.count("DeprecationWarning: uncaught") == 1, output


def test_the_first_calls_output_and_logs_stay_in_the_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import logging

        def test_reports():
            print("printed by the first call")
            logging.getLogger("t").warning("logged by the first call")
    """)
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep", "-rP")
    result.assert_outcomes(passed=1)
    lines = result.outlines
    assert lines.count("printed by the first call") == 1, lines
    assert len([line for line in lines if line.endswith("logged by the first call")]) == 1


def test_opt_out_marker_and_own_budgets(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []

        @pytest.mark.no_membudget_sweep(reason="measured elsewhere")
        def test_opted_out():
            KEEP.append([])

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_own_budget_leaks():
            KEEP.append([])

        @pytest.mark.membudget(gc_objects="2", iterations=40, warmup=2)
        def test_own_budget_allows_it():
            KEEP.append([])
    """)
    result, section = sweep_section(pytester, "--membudget-sweep=report")
    # Own budgets are judged as without the sweep, even in report mode.
    result.assert_outcomes(passed=2, failed=1)
    assert section["counts"] == {"opted out": 1, "own budgets": 2}
    assert [e["test"].split("::")[-1] for e in section["leaks"]] == ["test_own_budget_leaks"]
    result.stdout.fnmatch_lines(["*1 opted out, 2 own budgets*"])


def test_a_teardown_broken_by_the_repeats_is_not_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.fixture
        def counter():
            calls = [0]  # a count, not a growing list: the test keeps nothing
            yield calls
            assert calls[0] == 1, f"called {calls[0]} times"

        def test_counts(counter):
            counter[0] += 1
    """)
    result, section = sweep_section(pytester, "--membudget-sweep", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    [entry] = section["not_repeatable"]
    assert entry["reason"] == "teardown" and "called 5 times" in entry["detail"], entry
    xml = (pytester.path / "out.xml").read_text()
    assert 'errors="0"' in xml and xml.count('name="membudget.sweep"') == 1
    assert 'name="membudget.sweep.reason" value="its teardown failed after the repeats' in xml
    result.stdout.fnmatch_lines(["*its teardown failed after the repeats*"])
    # Without the sweep the same teardown passes: the failure was the repeats' doing.
    pytester.runpytest_subprocess(*ARGS).assert_outcomes(passed=1)


def test_junit_properties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        KEEP = []
        CALLS = [0]

        def test_leaks():
            KEEP.append([[]])  # three blocks a call: plain on every call of the screen

        def test_once():
            CALLS[0] += 1
            assert CALLS[0] == 1
    """)
    pytester.makeini("[pytest]\nmembudget_evidence = false\n")
    pytester.runpytest_subprocess(*ARGS, "--membudget-sweep", "--junitxml=out.xml")
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="membudget.sweep" value="leak"' in xml
    assert 'name="membudget.sweep" value="not repeatable"' in xml
    assert 'name="membudget.sweep.reason" value="repeat 1 raised AssertionError' in xml
    assert 'name="membudget.verdict" value="fail"' in xml


def test_the_ini_key_and_bad_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        KEEP = []

        def test_leaks():
            # Three blocks a call: one empty list a call may come from the interpreter's
            # free list on some calls, and a screen then reads no growth on that call.
            KEEP.append([[]])
    """)
    pytester.makeini("[pytest]\nmembudget_sweep = report\nmembudget_evidence = false\n")
    result = pytester.runpytest_subprocess(*ARGS)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*membudget sweep (report):*1 found leaking*"])
    # The flag outranks the ini key.
    pytester.runpytest_subprocess(*ARGS, "--membudget-sweep=fail").assert_outcomes(failed=1)
    pytester.runpytest_subprocess(*ARGS, "--membudget-sweep=off").assert_outcomes(passed=1)
    bad = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep=loud")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*sweep='loud' from --membudget-sweep: expected fail, report "
                              "or off*"])
    seconds = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep-seconds=never")
    seconds.stderr.fnmatch_lines(["*sweep_seconds='never'*expected a number of seconds*"])


def test_the_screen_length(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        CALLS = [0]  # a count, not a growing list: the test is clean

        def test_four_calls_at_most():
            CALLS[0] += 1
            assert CALLS[0] <= 4
    """)
    # The default screen: its own call, 2 warm-up calls, 8 measured, of which a clean test's
    # screen makes 2; the 5th call, the last of them, raises.
    _, section = sweep_section(pytester, "--membudget-sweep")
    assert [e["failed_call"] for e in section["not_repeatable"]] == [4]
    pytester.makepyfile("""
        KEPT = []
        CALLS = [0]

        def test_seven_calls_at_most():
            CALLS[0] += 1
            if CALLS[0] <= 6:  # growth in sight at the first reading point: the screen goes on
                KEPT.append(object())  # two blocks a call: see SEEN in test_sweep_driver.py
                KEPT.append(object())
            assert CALLS[0] <= 7
    """)
    # The screen reads again after its 4th measured call (the 7th call), sees that the
    # growth stopped, and stops there: no 8th call. A screen of 4 makes 2 + 4 (its last call
    # grows nothing, so it is not flagged; the delta after the reading, the third,
    # is left out).
    _, section = sweep_section(pytester, "--membudget-sweep")
    assert section["counts"] == {"clean": 1}, section
    _, section = sweep_section(pytester, "--membudget-sweep", "--membudget-sweep-screen=4")
    assert section["counts"] == {"clean": 1}
    pytester.makepyfile("""
        KEPT = []
        CALLS = [0]

        def test_ten_calls_at_most():
            CALLS[0] += 1
            if CALLS[0] <= 9:  # growth at every reading point (after 2, 4 and 6 measured)
                KEPT.append(object())
                KEPT.append(object())
            assert CALLS[0] <= 10
    """)
    # A screen that never goes quiet makes all its calls: the default's 2 + 8 repeats reach
    # the 11th call, which raises.
    _, section = sweep_section(pytester, "--membudget-sweep")
    assert [e["failed_call"] for e in section["not_repeatable"]] == [10]
    bad = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep-screen=1")
    bad.stderr.fnmatch_lines(["*sweep_screen='1' from --membudget-sweep-screen: must be >= 2*"])


def test_a_bare_flag_before_a_path_is_the_flag_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="""
        KEEP = []

        def test_leaks():
            KEEP.append([])
    """)
    pytester.makeini("[pytest]\nmembudget_evidence = false\n")
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep", "test_one.py")
    result.assert_outcomes(failed=1)
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep", "report", "test_one.py")
    result.assert_outcomes(passed=1)


def test_disable_turns_the_sweep_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        KEEP = []

        def test_leaks():
            KEEP.append([])
    """)
    result = pytester.runpytest_subprocess(*ARGS, "--membudget-sweep", "--membudget-disable")
    result.assert_outcomes(passed=1)
    assert "membudget sweep" not in result.stdout.str()




def test_tests_not_looked_at_are_counted_by_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        CALLS = []

        def test_fails():
            assert False

        def test_skips():
            pytest.skip("not here")

        @pytest.mark.skip(reason="never")
        def test_skip_marked():
            pass

        @pytest.mark.xfail(reason="known")
        def test_xfails():
            assert False

        @pytest.fixture
        def broken():
            raise RuntimeError("set-up")

        def test_setup_errors(broken):
            pass

        def test_counts_its_calls():
            CALLS.append(1)
            assert len(CALLS) == 1

        def test_clean():
            pass
    """)
    result, section = sweep_section(pytester, "--membudget-sweep=report")
    assert section["not_looked_at"] == {
        "not repeatable": {"raised": 1},
        "not screened": {"skipped": 2, "error in set-up": 1, "failed": 1, "xfailed": 1}}
    assert {e["test"].split("::")[-1] for e in section["not_screened"]} == {
        "test_fails", "test_skips", "test_skip_marked", "test_xfails", "test_setup_errors"}
    result.stdout.fnmatch_lines([
        "*1 test(s) repeated in place*, 1 not repeatable, 5 not screened*",
        "not looked at: not repeatable (1 raised); not screened (2 skipped, 1 error in set-up,"
        " 1 failed, 1 xfailed)"])
