"""When the footprint evidence makes one more call under tracemalloc: where what tracing it
would cost fits the evidence's time; what it would cost, as data (the text says why a call
was not traced): the call, its new interpreter blocks at the peak, and the stretch it held
the interpreter in one C call, which tracing cannot cut short."""

from __future__ import annotations

import numpy as np

from pytest_membudget.evidence.composition import MemoryReading
from pytest_membudget.evidence.steps import COST, EVIDENCE_SECONDS, Deadline
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
    assert cost["seconds"] < EVIDENCE_SECONDS["footprint"]
    assert cost["call_seconds"] == 0.6 and cost["blocks"] == 1_000


def test_a_peak_of_many_new_blocks_costs_more_than_the_evidence_has() -> None:
    cost = traced_cost(report(1_000_000), 0.3, DEADLINE)
    assert cost["seconds"] == round(0.3 + 1_000_000 * COST["trace_block"], 3)
    assert cost["seconds"] > EVIDENCE_SECONDS["footprint"]


def test_a_call_that_held_the_interpreter_throughout_costs_its_slowdown() -> None:
    """json.dumps of millions of numbers: one C call, few blocks left at its end; traced,
    nothing stops it before it returns."""
    cost = traced_cost(report(10, held=0.3), 0.3, DEADLINE)
    assert cost["held"] == 0.3
    assert cost["seconds"] == round(0.3 * COST["held_slowdown"], 3)
    assert cost["seconds"] > EVIDENCE_SECONDS["footprint"]


def test_the_python_share_is_the_most_traced_near_the_highest_reading() -> None:
    from types import SimpleNamespace

    import numpy as np

    from pytest_membudget.measure.footprint import traced_near_highest

    mib = 1024.0 * 1024.0
    start = SimpleNamespace(rss=100 * mib)

    def seen(rows: list[tuple[float, float, float]], peak_traced: float) -> SimpleNamespace:
        timeline = np.array([(t, 100 * mib + rss * mib, traced * mib) for t, rss, traced in rows])
        return SimpleNamespace(timeline=timeline, start=start, highest=timeline[:, 1].max(),
                               peak=SimpleNamespace(traced=peak_traced * mib))

    # A pool's workers filled 152 MiB and let go at once: the capture at the highest RSS
    # came an instant after, with nothing traced; a reading within the step held it all.
    pool = seen([(0.0, 0, 0), (0.1, 111, 152), (0.14, 127, 152), (0.2, 131, 0)], 0.0)
    assert traced_near_highest(pool) == 152 * mib
    # A heap that freed three quarters, then rose on a new array: the readings near the
    # highest hold what was alive then, not the earlier peak of traced bytes.
    fragmented = seen([(0.0, 0, 0), (0.05, 133, 125), (0.06, 133, 31), (0.07, 149, 47)], 47)
    assert traced_near_highest(fragmented) == 47 * mib


def test_a_python_peak_is_the_call_s_last_rise_where_nothing_traced_rose_after_it() -> None:
    import numpy as np

    from pytest_membudget.measure.footprint import last_rise

    mib = 1024.0 * 1024.0

    def rows(traced: list[float]) -> np.ndarray:
        return np.array([(i * 0.01, 0.0, t * mib) for i, t in enumerate(traced)])

    # A pool's workers fill and let go: after the most, the traced bytes only fall.
    assert last_rise(rows([0, 16, 32, 48, 64, 0, 0]), 4 * mib)
    # A heap that freed three quarters of its objects, then made a 16 MiB array.
    assert not last_rise(rows([0, 60, 125, 31, 47]), 7 * mib)
    # Noise under a step after the most is no rise.
    assert last_rise(rows([0, 125, 31, 33]), 7 * mib)
    assert not last_rise(np.zeros((0, 3)), 7 * mib)
