"""Resident and unique set size of the test process."""

from __future__ import annotations

import os

import psutil

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import ProcFile, has_procfs


class RssProbe(Probe):
    """RSS: every page the process holds, native and Python alike. Allocators rarely give
    memory back, so RSS rises in steps and seldom falls."""

    name = "rss"

    def start(self) -> None:
        if has_procfs():
            self._statm: ProcFile | None = ProcFile("/proc/self/statm")
            self._page = os.sysconf("SC_PAGE_SIZE")
        else:
            self._statm = None
            self._process = psutil.Process()

    def read(self) -> float:
        if self._statm is not None:
            return float(int(self._statm.read(128).split()[1]) * self._page)
        return float(self._process.memory_info().rss)

    def stop(self) -> None:
        if self._statm is not None:
            self._statm.close()


class UssProbe(Probe):
    """USS: pages private to the process. Exact but costly (it walks the page maps)."""

    name = "uss"

    def start(self) -> None:
        self._process = psutil.Process()

    def read(self) -> float:
        return float(self._process.memory_full_info().uss)


PROBE_CLASSES: dict[str, type[Probe]] = {"rss": RssProbe, "uss": UssProbe}
