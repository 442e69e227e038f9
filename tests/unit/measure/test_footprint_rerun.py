"""When the footprint evidence makes one more call under tracemalloc: a call of at most
RERUN_SECONDS with a peak of few enough new interpreter blocks; otherwise why not, as data
(the text says "not traced: one call takes ... s")."""

from __future__ import annotations

import numpy as np

from pytest_membudget.evidence.composition import MemoryReading
from pytest_membudget.evidence.peak import CENSUS_BLOCKS
from pytest_membudget.measure.footprint import RERUN_SECONDS, skip_reason
from pytest_membudget.measure.watch import WatchReport

MIB = 1024 * 1024


def report(new_blocks: float) -> WatchReport:
    start = MemoryReading(rss=100 * MIB, blocks=10_000)
    peak = MemoryReading(rss=250 * MIB, blocks=10_000 + new_blocks)
    return WatchReport(start=start, peak=peak, end=start, highest=peak.rss, seconds=0.5,
                       rose=[], timeline=np.zeros((0, 3)))


def test_a_short_call_of_few_blocks_is_run_again() -> None:
    assert skip_reason(report(1_000), RERUN_SECONDS) is None


def test_a_longer_call_is_not_run_again_and_says_how_long_it_took() -> None:
    assert skip_reason(report(1_000), RERUN_SECONDS + 0.14) == {
        "call_seconds": round(RERUN_SECONDS + 0.14, 3)}


def test_a_peak_of_many_new_blocks_is_not_traced() -> None:
    assert skip_reason(report(CENSUS_BLOCKS + 1), 0.01) == {"blocks": CENSUS_BLOCKS + 1}
