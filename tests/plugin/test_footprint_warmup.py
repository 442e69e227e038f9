"""A footprint with a warm-up, as a user writes it: the warm-up runs only where the marker asks
for it, the rise and the peak are the measured call's (from the end of the warm-up), what the
warm-up kept is its own figure, and the ceiling does not count it."""

from __future__ import annotations

import pytest
from support.footprint_runs import run

MIB = 1024**2

WARMED = """
import numpy as np, pytest

CACHE = {}

def load():
    if "table" not in CACHE:  # the first call fills a cache of 120 MB, kept
        CACHE["table"] = np.ones(15_000_000)
    work = np.ones(8_000_000)  # 64 MB at the peak of every call, freed
    return float(work.sum())

@pytest.mark.membudget(rss_rise="40 MiB", warmup=1, iterations=1)
def test_warmed(membudget):
    membudget.run(load)

def count():
    CALLS.append(1)

CALLS = []

@pytest.mark.membudget(rss_rise="1 GiB", iterations=1)
def test_one_call(membudget):
    membudget.run(count)
    assert len(CALLS) == 1
"""


def test_a_rise_is_measured_from_the_end_of_the_warm_up(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, WARMED, only=("test_warmed",))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*1 iteration measured after 1 warm-up*",
        "*rss rose * MiB above its start*budget 40 MiB; the start is the end of the warm-up "
        "(1 call, not measured, which kept 1?? MiB above the run's first reading)*",
    ])
    rss = tests["test_warmed"]["probes"]["rss"]
    # The measured call's own 64 MB, not the warm-up's cache on top of it.
    assert 40 * MIB < rss["rise"] < 100 * MIB, rss
    assert rss["start"] - rss["run_start"] > 100 * MIB, rss  # what the warm-up kept
    evidence = tests["test_warmed"]["peak_evidence"]
    assert evidence["warmup"]["rss_end"] - evidence["warmup"]["rss_start"] > 100 * MIB
    assert evidence["composition"]["rise"] < 100 * MIB


def test_iterations_alone_is_one_call(pytester: pytest.Pytester) -> None:
    result, tests = run(pytester, WARMED, only=("test_one_call",))
    result.assert_outcomes(passed=1)
    assert (tests["test_one_call"]["iterations"], tests["test_one_call"]["warmup"]) == (1, 0)


def test_the_ceiling_does_not_count_the_warm_up(pytester: pytest.Pytester) -> None:
    # 4x the 40 MiB budget is 160 MiB: the warm-up's 120 MB cache and the call's 64 MB add
    # up past it, the measured call alone does not.
    source = WARMED.replace('rss_rise="40 MiB", warmup=1',
                            'rss_rise="40 MiB", ceiling="4x", warmup=1')
    result, tests = run(pytester, source, only=("test_warmed",))
    result.assert_outcomes(failed=1)
    assert "hard ceiling" not in result.stdout.str()
    assert "runaway" not in tests["test_warmed"]
