"""An interpreter that breaks what the plugin assumes of it gets a line, not a wrong verdict:
the header says what differs, and a test whose gc policy cannot be honoured is skipped with
the reason. Simulated (the interpreter's facts replaced), as no such interpreter is installed
where these tests run."""

from __future__ import annotations

import pytest

from pytest_membudget import interpreter
from pytest_membudget.interpreter import GcFacts

SUITE = """
import pytest

@pytest.mark.membudget(gc_objects=0, iterations=12, warmup=2)
def test_collected(membudget):
    membudget.run(lambda: None)

@pytest.mark.membudget(gc_objects=0, iterations=12, warmup=2, gc="off")
def test_left_alone(membudget):
    membudget.run(lambda: None)
"""

ARGS = ("-p", "no:cacheprovider", "-p", "no:randomly", "-rs")


def test_a_collect_that_leaves_cycles_skips_gc_collect_tests_with_the_reason(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "_FACTS", GcFacts(collects=False, freezes=True,
                                                   kind="generational"))
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess(*ARGS)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "membudget: tests with gc='collect' are skipped: gc.collect() left a fresh *",
        "SKIPPED * membudget: gc='collect' cannot be honoured here: gc.collect() left *",
    ])


def test_a_usual_interpreter_adds_no_header_line(pytester: pytest.Pytester,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "free_threaded", lambda: False)
    monkeypatch.setattr(interpreter, "_FACTS", GcFacts(collects=True, freezes=True,
                                                   kind="generational"))
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess(*ARGS)
    result.assert_outcomes(passed=2)
    assert "membudget:" not in result.stdout.str().split("collected")[0]


def test_a_free_threaded_build_runs_with_a_header_line(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every probe this suite uses still runs; the header says what they mean there."""
    monkeypatch.setattr(interpreter, "free_threaded", lambda: True)
    monkeypatch.setattr(interpreter, "gil_enabled", lambda: False)
    monkeypatch.setattr(interpreter, "_FACTS", GcFacts(collects=True, freezes=True,
                                                   kind="free-threaded"))
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess(*ARGS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["membudget: free-threaded build (GIL disabled): *"])


def test_an_incremental_collector_is_named_in_the_header(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "free_threaded", lambda: False)
    monkeypatch.setattr(interpreter, "_FACTS", GcFacts(collects=True, freezes=True,
                                                   kind="incremental"))
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_inprocess(*ARGS)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["membudget: incremental garbage collector (Python 3.14.0*"])
