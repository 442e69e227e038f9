"""Operating-system resources: threads and file descriptors."""

from __future__ import annotations

import os

import psutil

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import ProcFile, has_procfs


class ThreadsProbe(Probe):
    """OS threads of the process, native ones included (torch, BLAS, executors)."""

    name = "threads"

    def start(self) -> None:
        self._stat = ProcFile("/proc/self/stat") if has_procfs() else None
        self._process = psutil.Process()

    def read(self) -> float:
        if self._stat is not None:
            raw = self._stat.read(1024)
            # Field 20 (num_threads), counted after the parenthesised command name.
            return float(raw[raw.rindex(b")") + 2 :].split()[17])
        return float(self._process.num_threads())

    def stop(self) -> None:
        if self._stat is not None:
            self._stat.close()


class FdsProbe(Probe):
    """Open file descriptors (handles on Windows)."""

    name = "fds"

    def start(self) -> None:
        self._fd_dir = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None
        self._process = psutil.Process()

    def read(self) -> float:
        if self._fd_dir is not None:
            return float(len(os.listdir(self._fd_dir)))
        if hasattr(self._process, "num_fds"):
            return float(self._process.num_fds())
        return float(self._process.num_handles())  # type: ignore[attr-defined]


PROBE_CLASSES: dict[str, type[Probe]] = {"threads": ThreadsProbe, "fds": FdsProbe}
