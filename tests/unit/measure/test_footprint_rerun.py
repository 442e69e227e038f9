"""When the footprint evidence makes one more call under tracemalloc: where what tracing it
would cost fits the evidence's time; what it would cost, as data (the text says why a call
was not traced): the call, its new interpreter blocks at the peak, and the stretch it held
the interpreter in one C call, which tracing cannot cut short."""

from __future__ import annotations

import numpy as np

from pytest_membudget.evidence.composition import MemoryReading
from pytest_membudget.measure.footprint import (
    EVIDENCE_SECONDS,
    HELD_SLOWDOWN,
    TRACE_BLOCK_SECONDS,
    traced_cost,
)
from pytest_membudget.measure.watch import WatchReport

MIB = 1024 * 1024


def report(new_blocks: float, held: float = 0.0) -> WatchReport:
    start = MemoryReading(rss=100 * MIB, blocks=10_000)
    peak = MemoryReading(rss=250 * MIB, blocks=10_000 + new_blocks)
    return WatchReport(start=start, peak=peak, end=start, highest=peak.rss, seconds=0.5,
                       rose=[], timeline=np.zeros((0, 3)), held=held)


def test_a_call_of_few_blocks_costs_its_own_time() -> None:
    cost = traced_cost(report(1_000), 0.6)
    assert cost["seconds"] < EVIDENCE_SECONDS  # a numpy or pandas call of 0.6 s is traced
    assert cost["call_seconds"] == 0.6 and cost["blocks"] == 1_000


def test_a_peak_of_many_new_blocks_costs_more_than_the_evidence_has() -> None:
    cost = traced_cost(report(1_000_000), 0.3)
    assert cost["seconds"] == round(0.3 + 1_000_000 * TRACE_BLOCK_SECONDS, 3)
    assert cost["seconds"] > EVIDENCE_SECONDS


def test_a_call_that_held_the_interpreter_throughout_costs_its_slowdown() -> None:
    """json.dumps of millions of numbers: one C call, few blocks left at its end; traced,
    nothing stops it before it returns."""
    cost = traced_cost(report(10, held=0.3), 0.3)
    assert cost["held"] == 0.3
    assert cost["seconds"] == round(0.3 * HELD_SLOWDOWN, 3) > EVIDENCE_SECONDS
