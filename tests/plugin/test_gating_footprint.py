"""Footprints in the gate: rises, peaks and phases compared with a baseline, beside slopes.

The footprints are counts of objects a call keeps (gc_objects is exact), so the verdicts are
certain; the rule's figures for RSS are measured in bench/gating_noise.py.
"""

from __future__ import annotations

import pytest
from support.gating_workloads import RUN, no_internal_error

#: The loader keeps ``batches`` batches of 1,000 objects; the phase test builds as many.
LOADER = '''
import pytest
KEPT, LOADED = [], []

def load(batches, into):
    into.extend([] for _ in range(batches * 1000))

@pytest.mark.membudget(gc_objects_rise=1_000_000, evidence=False)
def test_loader(membudget):
    membudget.run(load, {batches}, KEPT)

def test_phases(membudget):
    with membudget.phase("load", gc_objects_rise=1_000_000):
        load({batches}, LOADED)

@pytest.mark.membudget(gc_objects="10/iter", iterations=20, warmup=1, evidence=False)
def test_slope():
    [{{}} for _ in range(5)]
'''


#: Every phase reports its RSS rise, which an in-process run reads in the outer pytest's
#: process: its history moves it by MiBs. These tests gate the exact counts; RSS stays shown.
RSS_OFF = "--membudget-compare-fail=rss_rise:off"


def write(pytester: pytest.Pytester, batches: int) -> None:
    # Each version differs in length, so that its cached bytecode is never taken for it.
    pytester.makepyfile(test_loader=LOADER.format(batches=batches) + "#" * batches)


def test_a_footprint_eight_times_bigger_fails_the_gate_and_the_same_code_passes(
        pytester: pytest.Pytester) -> None:
    write(pytester, 3)
    pytester.runpytest(*RUN, "--membudget-save=main").assert_outcomes(passed=3)
    write(pytester, 24)
    result = pytester.runpytest(*RUN, "--membudget-compare=main", "-v", RSS_OFF)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*compared with baseline *main.json: 1 slope(s) and 3 rise(s) or peak(s) in 3 "
        "test(s): 2 regressed*",
        "MEMORY REGRESSIONS*a rise or peak above the baseline's plus the tolerance*",
        "*test_loader.py::test_loader*gc_objects rise*objects*objects*+*%*regressed",
        "*test_loader.py::test_phases*gc_objects rise, phase load*regressed",
        "every compared figure:",
        "*test_loader.py::test_phases*rss rise, phase load*off*",
        "*test_loader.py::test_slope*gc_objects*objects/iter*same",
    ])
    no_internal_error(result)
    write(pytester, 3)
    result = pytester.runpytest(*RUN, "--membudget-compare=main", RSS_OFF)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 slope(s) and 3 rise(s) or peak(s) in 3 test(s): "
                                 "0 regressed*"])


def test_footprint_tolerances(pytester: pytest.Pytester) -> None:
    write(pytester, 3)
    pytester.runpytest(*RUN, "--membudget-save=main").assert_outcomes(passed=3)
    write(pytester, 5)  # two thirds more: above the default 30 %
    for tolerance, status in [(None, pytest.ExitCode.TESTS_FAILED),
                              ("gc_objects_rise:off", pytest.ExitCode.OK),
                              ("gc_objects_rise:4000", pytest.ExitCode.OK),
                              ("all:150%", pytest.ExitCode.OK)]:
        flags = [f"--membudget-compare-fail={tolerance}"] if tolerance else []
        result = pytester.runpytest(*RUN, "--membudget-compare=main", RSS_OFF, *flags)
        assert result.ret == status, (tolerance, result.stdout.str())


def test_a_quarter_more_is_caught_at_ten_percent(pytester: pytest.Pytester) -> None:
    write(pytester, 4)
    pytester.runpytest(*RUN, "--membudget-save=four").assert_outcomes(passed=3)
    pytester.makepyfile(test_loader=LOADER.format(batches=4).replace("* 1000", "* 1250"))
    result = pytester.runpytest(*RUN, "--membudget-compare=four", RSS_OFF,
                                "--membudget-compare-fail=gc_objects_rise:10%")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*test_loader*gc_objects rise*+2?%*10%*regressed"])
