"""Time per iteration: wall time, which the runner times and hands over, and the CPU time of
the thread that runs the workload, which the runner laps around the workload's iterations."""

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
    """Mean CPU seconds of the calling thread per iteration since the previous sample. The
    runner calls :meth:`resume` when it hands the thread back to the workload after its own
    work (a sample, a judgement) and :meth:`lap` before the next sample, so sampling,
    collection and judgements are not counted; its per-iteration bookkeeping between the two
    is, a constant that moves no slope. Time slices other processes take are not the
    thread's CPU time, so a busy machine does not read as the loop slowing down."""

    name = "iter_cpu_time"
    #: Thread CPU time is a system call (clock_gettime(CLOCK_THREAD_CPUTIME_ID), 0.6-0.8 us
    #: measured in bench/clock_cost.py), ten times perf_counter's: read twice per sample,
    #: never per iteration.
    clock = staticmethod(time.thread_time)

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self.value = math.nan
        self._resumed = 0.0

    def start(self) -> None:
        self.value = math.nan

    def resume(self) -> None:
        """The workload runs on this thread from now until the next :meth:`lap`."""
        self._resumed = self.clock()

    def lap(self, iterations: int) -> None:
        """``iterations`` ran since :meth:`resume`: their mean CPU time is the next value."""
        self.value = (self.clock() - self._resumed) / iterations

    def read(self) -> float:
        return self.value


PROBE_CLASSES: dict[str, type[Probe]] = {"iter_time": IterTimeProbe,
                                         "iter_cpu_time": IterCpuTimeProbe}
