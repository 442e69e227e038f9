"""The sweep beside the plugins users run with it: pytest-timeout (the sweep keeps within its
own time and a share of the test's timeout, and says when it cut a test short) and
pytest-randomly (the same verdicts in a shuffled order). pytest-xdist is in
test_sweep_suite.py. Subprocess runs, as there."""

from __future__ import annotations

import json

import pytest

SUITE = """
import time
KEEP = []

def test_leaks():
    KEEP.append([[]])  # three blocks a call: plain on every call of the screen

def test_clean():
    sum(range(100))

def test_slow_clean():
    time.sleep(0.3)

def test_another_leak():
    KEEP.append({})
"""


def sweep(result: pytest.RunResult, pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / "out.json").read_text())["sweep"]


def test_the_sweep_keeps_within_its_seconds_and_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--membudget-sweep", "--membudget-sweep-seconds=1",
        "--membudget-json=out.json")
    result.assert_outcomes(passed=2, failed=2)
    section = sweep(result, pytester)
    [cut] = section["cut_short"]
    assert cut["test"].endswith("test_slow_clean") and cut["bound"] == "sweep_seconds"
    result.stdout.fnmatch_lines([
        "cut short by the sweep's time:",
        "*test_slow_clean: not screened: one call takes 3*ms, too long for the screen within "
        "1 s (membudget_sweep_seconds)"])


def test_the_sweep_keeps_within_half_the_timeout(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile(SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--timeout=2", "--membudget-sweep",
        "--membudget-json=out.json")
    # No test is timed out: the sweep gives itself at most a second of each test's two.
    result.assert_outcomes(passed=2, failed=2)
    assert "Timeout" not in result.stdout.str()
    [cut] = sweep(result, pytester)["cut_short"]
    assert cut["bound"] == "timeout" and cut["allowed"] <= 1.0
    result.stdout.fnmatch_lines(["*test_slow_clean: not screened*(half its pytest-timeout "
                                 "timeout)"])


def test_a_timeout_marker_bounds_a_flagged_test(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_timeout")
    pytester.makepyfile("""
        import pytest, time
        TABLE = {}

        @pytest.mark.timeout(1)
        def test_fills_slowly():
            # Flagged by the screen (it grows on each of its first 200 calls); its full
            # verdict cannot reach even the 128 calls of an exact counter's confirmation
            # in the half second the timeout leaves.
            time.sleep(0.005)
            if len(TABLE) < 200:
                TABLE[len(TABLE)] = [0]
    """)
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--membudget-sweep", "--membudget-json=out.json")
    result.assert_outcomes(passed=1)
    [cut] = sweep(result, pytester)["cut_short"]
    assert cut["bound"] == "timeout" and cut["flagged"], cut
    result.stdout.fnmatch_lines(["*test_fills_slowly: no verdict within the sweep's 0.* s "
                                 "(half its pytest-timeout timeout) after * repeats*"])


def test_a_shuffled_order_gives_the_same_verdicts(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_randomly")
    pytester.makepyfile(SUITE.replace("time.sleep(0.3)", "time.sleep(0.001)"))
    verdicts = []
    for seed in ("1", "2", "3"):
        result = pytester.runpytest_subprocess(
            "-p", "randomly", "-p", "no:cacheprovider", f"--randomly-seed={seed}",
            "--membudget-sweep",
            "--membudget-json=out.json")
        result.assert_outcomes(passed=2, failed=2)
        result.stdout.fnmatch_lines([f"Using --randomly-seed={seed}"])
        section = sweep(result, pytester)
        verdicts.append(({e["test"] for e in section["leaks"]}, section["counts"]))
    assert verdicts[0][0] == {"test_a_shuffled_order_gives_the_same_verdicts.py::test_leaks",
                              "test_a_shuffled_order_gives_the_same_verdicts.py::"
                              "test_another_leak"}
    assert verdicts[0] == verdicts[1] == verdicts[2]
