"""When the footprint evidence makes one more call under tracemalloc: where what tracing it
would cost fits the evidence's time; what it would cost, as data (the text says why a call
was not traced): the call, its new interpreter blocks at the peak, and the stretch it held
the interpreter in one C call, which tracing cannot cut short."""

from __future__ import annotations

import numpy as np

from pytest_membudget.evidence.composition import MemoryReading
from pytest_membudget.evidence.steps import COST, FOOTPRINT_EVIDENCE_SECONDS, Deadline
from pytest_membudget.measure.footprint import traced_cost
from pytest_membudget.measure.watch import WatchReport

MIB = 1024 * 1024
DEADLINE = Deadline(0.0, "footprint")


def report(new_blocks: float, held: float = 0.0) -> WatchReport:
    start = MemoryReading(rss=100 * MIB, blocks=10_000)
    peak = MemoryReading(rss=250 * MIB, blocks=10_000 + new_blocks)
    return WatchReport(start=start, peak=peak, end=start, highest=peak.rss, seconds=0.5,
                       rose=[], timeline=np.zeros((0, 3)), held=held)


def test_a_call_of_few_blocks_costs_its_own_time() -> None:
    cost = traced_cost(report(1_000), 0.6, DEADLINE)
    # A numpy or pandas call of 0.6 s is traced.
    assert cost["seconds"] < FOOTPRINT_EVIDENCE_SECONDS
    assert cost["call_seconds"] == 0.6 and cost["blocks"] == 1_000


def test_a_peak_of_many_new_blocks_costs_more_than_the_evidence_has() -> None:
    cost = traced_cost(report(1_000_000), 0.3, DEADLINE)
    assert cost["seconds"] == round(0.3 + 1_000_000 * COST["trace_block"], 3)
    assert cost["seconds"] > FOOTPRINT_EVIDENCE_SECONDS


def test_a_call_that_held_the_interpreter_throughout_costs_its_slowdown() -> None:
    """json.dumps of millions of numbers: one C call, few blocks left at its end; traced,
    nothing stops it before it returns."""
    cost = traced_cost(report(10, held=0.3), 0.3, DEADLINE)
    assert cost["held"] == 0.3
    assert cost["seconds"] == round(0.3 * COST["held_slowdown"], 3)
    assert cost["seconds"] > FOOTPRINT_EVIDENCE_SECONDS
