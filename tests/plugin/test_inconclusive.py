"""An inconclusive budget is never silent: a line in the terminal summary, the JSON report and
JUnit say what would settle it, and --membudget-strict fails the test."""

from __future__ import annotations

import json

import pytest

# Two lists per iteration against a 1.5/iter budget, under up to 12 lists of noise that
# change every iteration: too close to the budget for a short window to resolve.
AMBIGUOUS = """
import time, pytest
KEEP = []
NOISE = []

def step():
    KEEP.extend(([], []))
    NOISE[:] = [[] for _ in range(len(KEEP) * 7 % 13)]

@pytest.mark.membudget(gc_objects="1.5/iter", iterations=30, warmup=2)
def test_fixed(membudget):
    membudget.run(step)

@pytest.mark.membudget(gc_objects="1.5/iter", min_iterations=20, max_iterations=30)
def test_capped(membudget):
    membudget.run(step)

@pytest.mark.membudget(gc_objects="1.5/iter", min_iterations=20, max_seconds=0.3)
def test_timed(membudget):
    membudget.run(lambda: (step(), time.sleep(0.01)))

@pytest.mark.membudget(gc_objects=0, iterations=30, warmup=2)
def test_clear(membudget):
    membudget.run(lambda: None)
"""


def test_every_inconclusive_budget_gets_a_line_that_says_what_would_settle_it(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AMBIGUOUS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-q", "--membudget-json=r.json",
                                "--junitxml=junit.xml")
    result.assert_outcomes(passed=4)
    header = ("membudget: 3 budget(s) inconclusive (3 in tests that passed all the same; "
              "--membudget-strict fails them):")
    # One line per budget, in the order the tests ran (a reordering plugin may change it).
    for line in (
        "*test_fixed: gc_objects=1.5 objects/iter inconclusive (measured * objects/iter) after "
        "30 iterations, fixed count; settle it with a longer run (iterations=60) or "
        "iterations='auto'",
        "*test_capped: gc_objects=1.5 objects/iter inconclusive *after 30 iterations, auto: "
        "reached the iteration or time cap; settle it with a higher max_iterations (it "
        "stopped at 30), or max_iterations='none' to let max_seconds decide",
        "*test_timed: gc_objects=1.5 objects/iter inconclusive *settle it with more time "
        "(max_seconds=0.6; it ran out of its 0.3 s)",
    ):
        result.stdout.fnmatch_lines([header, line])
    assert "test_clear:" not in result.stdout.str()
    tests = json.loads((pytester.path / "r.json").read_text())["tests"]
    fixed = next(t for n, t in tests.items() if n.endswith("test_fixed"))
    assert fixed["inconclusive"] == [{
        "probe": "gc_objects", "kind": "slope", "limit": 1.5, "status": "ambiguous",
        "measured": fixed["probes"]["gc_objects"]["slope"], "remedies": ["iterations"],
        "exact_probes": []}]
    assert next(t for n, t in tests.items() if n.endswith("test_clear"))["inconclusive"] == []
    xml = (pytester.path / "junit.xml").read_text()
    assert 'name="membudget.inconclusive" value="gc_objects=1.5 objects/iter inconclusive' in xml


def test_the_summary_line_shows_even_at_the_quietest_verbosity(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(AMBIGUOUS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-qq", "-k", "fixed")
    result.stdout.fnmatch_lines(["*test_fixed: gc_objects=1.5 objects/iter inconclusive*"])


@pytest.mark.parametrize("how", ["flag", "ini", "marker"])
def test_strict_fails_an_inconclusive_budget_with_that_line(pytester: pytest.Pytester,
                                                           how: str) -> None:
    source = AMBIGUOUS
    args = ["-p", "no:cacheprovider", "-k", "fixed or clear"]
    if how == "flag":
        args.append("--membudget-strict")
    elif how == "ini":
        pytester.makeini("[pytest]\nmembudget_strict = true\n")
    else:
        source = source.replace('iterations=30, warmup=2)\ndef test_fixed',
                                'iterations=30, warmup=2, strict=True)\ndef test_fixed')
    pytester.makepyfile(source)
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*BudgetExceeded: membudget: 1 budget(s) inconclusive in *test_fixed (strict: an "
        "inconclusive budget fails the test)",
        "*- gc_objects=1.5 objects/iter inconclusive *settle it with a longer run*",
        "*test_fixed: gc_objects=1.5 objects/iter inconclusive*strict: the test failed*",
    ])


def test_the_command_line_lifts_strict_from_the_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmembudget_strict = true\n")
    pytester.makepyfile(AMBIGUOUS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", "fixed",
                                "--no-membudget-strict")
    result.assert_outcomes(passed=1)
