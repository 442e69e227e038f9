"""Operating-system resources: threads and file descriptors."""

from __future__ import annotations

import os
import time

import psutil

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import NUM_THREADS, ProcFile, has_procfs, stat_fields


class ThreadsProbe(Probe):
    """OS threads of the process, native ones included (torch, BLAS, executors).

    ``Thread.join()`` returns when the thread's Python state is gone, a moment before the OS
    thread has exited: sampled right after a join, a count can still include the joined
    threads for a fraction of a millisecond (docs/design/probes.md). A reading above the
    previous one is therefore re-read for up to
    :attr:`REREAD_SECONDS` and the lowest count kept. A steady count costs one read; a count
    that keeps rising, as in a leak, costs the full re-read time per sample.
    """

    name = "threads"
    #: How long a rise is re-read before it is believed.
    REREAD_SECONDS = 0.002

    def start(self) -> None:
        # psutil's handle only where there is no /proc: making one reads the process's
        # start time (18 us, once per screen of the sweep).
        self._stat = ProcFile("/proc/self/stat") if has_procfs() else None
        self._process = None if self._stat is not None else psutil.Process()
        self._last = self._count()

    def _count(self) -> float:
        if self._stat is not None:
            return float(stat_fields(self._stat.read(1024))[NUM_THREADS])
        assert self._process is not None
        return float(self._process.num_threads())

    def read(self) -> float:
        count = self._count()
        if count > self._last:
            deadline = time.perf_counter() + self.REREAD_SECONDS
            while count > self._last and time.perf_counter() < deadline:
                time.sleep(0.00005)
                count = min(count, self._count())
        self._last = count
        return count

    def stop(self) -> None:
        if self._stat is not None:
            self._stat.close()


class FdsProbe(Probe):
    """Open file descriptors (handles on Windows)."""

    name = "fds"

    def start(self) -> None:
        self._fd_dir = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None
        self._process = None if self._fd_dir is not None else psutil.Process()

    def read(self) -> float:
        if self._fd_dir is not None:
            return float(len(os.listdir(self._fd_dir)))
        assert self._process is not None
        if hasattr(self._process, "num_fds"):
            return float(self._process.num_fds())
        return float(self._process.num_handles())  # type: ignore[attr-defined]


PROBE_CLASSES: dict[str, type[Probe]] = {"threads": ThreadsProbe, "fds": FdsProbe}
