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
    read_first = True

    def start(self) -> None:
        self._started = not tracemalloc.is_tracing()
        self._peak = 0.0
        if self._started:
            tracemalloc.start(HEAP_FRAMES)  # with its peak at zero

    def read(self) -> float:
        current, peak = tracemalloc.get_traced_memory()
        if self._started and peak > self._peak:
            self._peak = float(peak)
        return float(current)

    def after_sample(self) -> None:
        # The peak is kept per interval between samples, so that the other probes' reads
        # (gc_objects lists every object) never count as the workload's peak.
        if self._started:
            tracemalloc.reset_peak()

    def peak(self) -> float | None:
        # A tracer someone else started has a peak from before this test: not ours to use.
        return self._peak if self._started else None

    def stop(self) -> None:
        if self._started and tracemalloc.is_tracing():
            tracemalloc.stop()
        self._started = False


PROBE_CLASSES: dict[str, type[Probe]] = {"heap": HeapProbe}
