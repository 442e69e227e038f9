"""A run stopped before it takes the machine, as a user meets it: by default a test merely
over its budget is not stopped, a run that would take the machine (here a machine of a few
hundred MiB, or a ceiling set low) is; the stop carries what the watch saw, every output says
``stopped``, and the stopped call's memory is let go before the next test."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from support.footprint_runs import run

MIB = 1024**2

RUNAWAY = """
import numpy as np, pytest

def grow():
    keep = []
    for _ in range(200):
        keep.append(np.ones(2_000_000))  # 16 MB each: 3.2 GB if nothing stops it

def over():
    big = np.ones(12_000_000)  # 96 MB, freed: twice its budget, far from the machine's end
    return float(big.sum())

@pytest.mark.membudget(rss_rise="40 MiB")
def test_over_budget(membudget):
    membudget.run(over)

@pytest.mark.membudget(rss_rise="40 MiB")
def test_runaway(membudget):
    membudget.run(grow)

@pytest.mark.membudget(rss_rise="40 MiB")
def test_next(membudget):
    membudget.run(lambda: np.ones(1000).sum())

@pytest.mark.membudget(rss_rise="40 MiB")
def test_iterate(membudget):
    for _ in membudget.iterate():
        grow()

def test_phase(membudget):
    with membudget.phase("load", rss_rise="400 MiB"):
        np.ones(100).sum()
    with membudget.phase("grow", rss_rise="40 MiB"):
        grow()
"""

#: A machine of 400 MiB above the test process's start: the room falls as the process's own
#: RSS rises (the real readers, the kernel's and the cgroup's, are tested in tests/probes).
SMALL_MACHINE = """
import pytest_membudget.measure.watch as watch
from pytest_membudget.probes.rss import held_rss_reader
from pytest_membudget.probes.room import Room

MIB = 1024 * 1024

class SmallMachine:
    def __init__(self):
        self.rss = held_rss_reader()
        self.total = self.rss() + 400 * MIB

    def read(self):
        return Room(max(self.total - self.rss(), 0.0), self.total, "machine")

    def close(self):
        self.rss.close()

watch.RoomReader = SmallMachine
"""


def test_a_test_over_its_budget_gets_its_evidence_not_a_stop(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, RUNAWAY, only=("test_over_budget",))
    result.assert_outcomes(failed=1)
    assert "was stopped" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*rss rose * MiB above its start*budget 40 MiB*",
                                 "*Evidence at the peak*"])
    assert tests["test_over_budget"]["probes"]["rss"]["verdict"] == "fail"


def test_a_run_that_would_take_the_machine_is_stopped_and_the_next_test_passes(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest(SMALL_MACHINE)
    junit = pytester.path / "junit.xml"
    result, tests = run(pytester, RUNAWAY, f"--junitxml={junit}",
                        only=("test_runaway", "test_next"))
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([
        "*test_runaway was stopped before the machine ran out of memory: * of * was left "
        "(under the reserve of 64 MiB)*",
        "*stopped at *.py:6 in grow*",
        "*Evidence at the peak (the watch's, read up to the stop*",
        "*native heap in use*",
        "*left once the stopped call's frames were let go*",
        "*.py:6: RSS rose * while it ran (in grow); the call's memory: transient*",
        "*test_runaway*rss*rise 40 MiB*stopped*",
    ])
    stopped = tests["test_runaway"]
    assert stopped["stopped"] == "ceiling" and not stopped["passed"]
    rss = stopped["probes"]["rss"]
    assert rss["verdict"] == "stopped" and rss["outcomes"][0]["status"] == "stopped"
    assert rss["rise"] > 250 * MIB
    assert stopped["runaway"]["by"] == "machine"
    assert stopped["peak_evidence"]["composition"]["dominant"] == "native"
    # The stopped call's arrays were let go: the next test starts where this one did.
    after = tests["test_next"]["probes"]["rss"]["run_start"]
    assert after - rss["run_start"] < 32 * MIB, (rss["run_start"], after)
    verdicts = {case.get("name"): prop.get("value")
                for case in ET.parse(junit).getroot().iter("testcase")
                for prop in case.iter("property") if prop.get("name") == "membudget.verdict"}
    assert verdicts == {"test_runaway": "stopped", "test_next": "pass"}


def test_a_ceiling_set_low_stops_the_loop_form_too(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, RUNAWAY, "--membudget-ceiling=3x", only=("test_iterate",))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_iterate was stopped: RSS rose * above its start*past "
                                 "the hard ceiling of 120 MiB (3x*",
                                 "*Evidence at the peak*"])
    assert "FootprintRunaway" not in result.stdout.str()
    assert tests["test_iterate"]["probes"]["rss"]["verdict"] == "stopped"


def test_a_stopped_phase_is_in_the_table_and_the_json(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, RUNAWAY, "--membudget-ceiling=120 MiB", only=("test_phase",))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*test_phase was stopped: RSS rose*",
        "*phases (RSS):*",
        "*load*pass*",
        "*grow*rss_rise 40 MiB*stopped*",
        "*phase 'grow' at its peak:*",
        "*rss ?grow?*rise 40 MiB*stopped*",
    ])
    phases = {p["name"]: p for p in tests["test_phase"]["phases"]}
    assert phases["grow"]["verdict"] == "stopped" and phases["load"]["verdict"] == "pass"
    assert phases["grow"]["failures"][0]["status"] == "stopped"
    assert tests["test_phase"]["stopped"] == "ceiling"
