"""The Python heap as tracemalloc traces it."""

from __future__ import annotations

import tracemalloc

from pytest_membudget.probes import Probe

#: Frames kept per allocation while measuring; evidence reruns keep more.
HEAP_FRAMES = 1


class HeapProbe(Probe):
    """Bytes of Python allocations alive now. Exact for Python objects and buffers allocated
    through Python's allocators (numpy arrays too); blind to plain C malloc. Tracing slows
    allocation, so it runs only when a heap budget asks for it, and is left as it was found."""

    name = "heap"

    def start(self) -> None:
        self._started = not tracemalloc.is_tracing()
        if self._started:
            tracemalloc.start(HEAP_FRAMES)
            tracemalloc.reset_peak()

    def read(self) -> float:
        return float(tracemalloc.get_traced_memory()[0])

    def peak(self) -> float | None:
        # A tracer someone else started has a peak from before this test: not ours to use.
        return float(tracemalloc.get_traced_memory()[1]) if self._started else None

    def stop(self) -> None:
        if self._started and tracemalloc.is_tracing():
            tracemalloc.stop()
        self._started = False


PROBE_CLASSES: dict[str, type[Probe]] = {"heap": HeapProbe}
