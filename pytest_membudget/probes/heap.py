"""The Python heap as tracemalloc traces it."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

from pytest_membudget.probes import Probe
from pytest_membudget.probes.marks import TRACED_PEAK, Mark


class HeapProbe(Probe):
    """Bytes of Python allocations alive now. Exact for Python objects and buffers allocated
    through Python's allocators (numpy arrays too); blind to plain C malloc. Tracing slows
    allocation, so it runs only when a heap budget asks for it, and is left as it was found."""

    name = "heap"
    read_first = True

    def start(self) -> None:
        self._started = not tracemalloc.is_tracing()
        self._mark: Mark | None = None
        if self._started:
            # One frame per allocation (tracemalloc's default), as in the evidence's rerun: the
            # innermost frame names the line, and each frame kept makes tracing slower.
            tracemalloc.start()  # with its peak at zero
            self._mark = TRACED_PEAK.open()

    def before_window(self) -> None:
        # The window's peak is its own: what the warm-up reached is not measured.
        if self._mark is not None:
            self._mark.reopen()

    def read(self) -> float:
        # The workload's peak since the latest sample, taken before the other probes' reads
        # (gc_objects lists every object): they are never the workload's peak.
        current, peak = tracemalloc.get_traced_memory()
        mark = self._mark
        if mark is not None and peak > mark.folded:
            TRACED_PEAK.fold(peak)
        return float(current)

    def after_sample(self) -> None:
        # The readings since this sample's first are the plugin's, not the workload's: the
        # peak starts again (TRACED_PEAK's discard, inlined: this is the sampling path).
        if self._mark is not None:
            tracemalloc.reset_peak()

    @property
    def owns_tracer(self) -> bool:
        """Whether this probe started tracemalloc (and may have it restarted)."""
        return self._started

    def peak(self) -> float | None:
        # A tracer someone else started has a peak from before this test: not ours to use.
        return self._mark.folded if self._mark is not None else None

    def stop(self) -> None:
        if self._mark is not None:
            self._mark.close()
            self._mark = None
        if self._started and tracemalloc.is_tracing():
            tracemalloc.stop()
        self._started = False


def traced_reader() -> Callable[[], tuple[float, float]]:
    """A reader of tracemalloc's traced bytes now and its peak since the last reset ((0, 0)
    while it is not tracing)."""

    def read() -> tuple[float, float]:
        if not tracemalloc.is_tracing():
            return 0.0, 0.0
        now, peak = tracemalloc.get_traced_memory()
        return float(now), float(peak)

    return read


PROBE_CLASSES: dict[str, type[Probe]] = {"heap": HeapProbe}
