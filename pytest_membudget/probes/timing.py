"""Time per iteration: wall time, which the runner times and hands over, and the CPU time of
the thread that runs the workload, which the runner laps at the end of each iteration."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes import Probe


class IterTimeProbe(Probe):
    """Mean seconds per iteration since the previous sample (the workload only: sampling and
    collection are not counted). A positive slope means the loop slows down."""

    name = "iter_time"
    value = 0.0

    def read(self) -> float:
        return self.value


class IterCpuTimeProbe(Probe):
    """The CPU seconds of the calling thread in the cheapest iteration since the previous
    sample. Time slices other processes take are not the thread's CPU time, so a busy
    machine does not read as the loop slowing down; what a neighbour still adds (caches it
    evicted, a context switch's own cost) only ever adds, so the least of a sample's
    iterations is the loop's own cost. The runner laps the clock at the end of every
    iteration (:meth:`end_iteration`) and calls :meth:`resume` when it hands the thread back
    to the workload after its own work (a sample, a judgement), which is not counted; a lap
    holds the loop's constant bookkeeping between iterations, which moves no slope."""

    name = "iter_cpu_time"
    #: Thread CPU time is a system call (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), about ten
    #: times perf_counter's cost: read once per iteration and once per sample, and only where
    #: this probe is budgeted.
    clock = staticmethod(time.thread_time)

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self.value = math.nan
        self._last = 0.0
        self._least = math.inf

    def start(self) -> None:
        self.value = math.nan
        self._least = math.inf

    def resume(self) -> None:
        """The workload runs on this thread from now on; the next lap starts here."""
        self._last = self.clock()

    def end_iteration(self) -> float:
        """An iteration ended: lap the CPU clock, keep the least lap, and return the wall
        clock, read first (the runner reads the iteration's end through this call)."""
        wall = time.perf_counter()
        now = self.clock()
        lap = now - self._last
        self._last = now
        if lap < self._least:
            self._least = lap
        return wall

    def take(self) -> None:
        """At a sample: the least lap since the previous sample is the value."""
        self.value = self._least
        self._least = math.inf

    def read(self) -> float:
        return self.value


PROBE_CLASSES: dict[str, type[Probe]] = {"iter_time": IterTimeProbe,
                                         "iter_cpu_time": IterCpuTimeProbe}
