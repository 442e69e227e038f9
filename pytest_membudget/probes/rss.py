"""Resident and unique set size of the test process."""

from __future__ import annotations

import os

from pytest_membudget.probes import Probe
from pytest_membudget.probes.marks import RSS_PEAK, Mark
from pytest_membudget.probes.procfs import ProcFile, has_procfs, libc_function
from pytest_membudget.probes.psutil_compat import (
    rss_reader,
    this_process,
    uss_reader,
    uss_unavailable,
)


def release_free_memory() -> None:
    """Hand glibc's free memory back to the system (malloc_trim) before the window.

    Memory freed earlier (by a previous test, say) stays resident in malloc's bins; a leak
    that reuses it does not raise RSS until it is used up, and would pass unseen. Trimmed
    pages are no longer resident, so new use of them shows again.
    """
    trim = libc_function("malloc_trim")
    if trim is not None:
        trim(0)


def open_peak_mark() -> Mark | None:
    """A peak-RSS mark of this process from now (the kernel's VmHWM, Linux 4.0+, shared with
    the phases inside the run: see probes/marks.py); None where it cannot be reset."""
    return RSS_PEAK.open()


class RssProbe(Probe):
    """RSS: every page the process holds, native and Python alike. Allocators rarely give
    memory back, so RSS rises in steps and seldom falls. Options (set for the sweep's
    screen, which reads values alone): ``peaks`` False keeps no high-water mark,
    ``release_free_memory`` False leaves glibc's free memory in place before the window."""

    name = "rss"

    def before_window(self) -> None:
        if self.options.get("release_free_memory", True):
            release_free_memory()
        # The window's peak is its own: what the warm-up reached is not measured.
        if self._mark is not None:
            self._mark.reopen()

    def peak(self) -> float | None:
        """The kernel's high-water mark (VmHWM) since the measured window began."""
        return self._mark.peak() if self._mark is not None else None

    def start(self) -> None:
        peaks = self.options.get("peaks", True)
        # Before the run's first reading, as before the window: free memory an earlier test
        # left would otherwise sit in the start, and a rise from it (peak - start) would
        # read the trimmed pages as memory the run gave back. (A screen keeps no peak.)
        if peaks and self.options.get("release_free_memory", True):
            release_free_memory()
        self._mark = open_peak_mark() if peaks else None
        if has_procfs():
            self._statm: ProcFile | None = ProcFile("/proc/self/statm")
            self._page = os.sysconf("SC_PAGE_SIZE")
        else:
            self._statm = None
            self._rss = rss_reader(this_process())

    def read(self) -> float:
        if self._statm is not None:
            return float(int(self._statm.read(128).split()[1]) * self._page)
        return float(self._rss())

    def stop(self) -> None:
        if self._statm is not None:
            self._statm.close()
        if self._mark is not None:
            self._mark.close()
            self._mark = None


class UssProbe(Probe):
    """USS: pages private to the process. Exact but costly (it walks the page maps)."""

    name = "uss"

    def before_window(self) -> None:
        release_free_memory()

    def unavailable(self) -> str | None:
        return uss_unavailable()

    def start(self) -> None:
        self._uss = uss_reader(this_process())

    def read(self) -> float:
        return float(self._uss())


class HeldStatm:
    """RSS from /proc/self/statm, read without letting go of the GIL (ProcFile's held read).
    After a long call that held the GIL (json.loads of a large text) the peak watch gets it back
    at the interpreter's next check, with the call's result still alive; a read that let go
    of it again would let the workload run on, and free the result, before the figure is
    taken."""

    def __init__(self) -> None:
        self._file = ProcFile("/proc/self/statm", keep_gil=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def __call__(self) -> float:
        return float(int(self._file.read(128).split()[1]) * self._page)

    def close(self) -> None:
        self._file.close()


class PsutilRss:
    def __init__(self) -> None:
        from pytest_membudget.probes.psutil_compat import rss_reader, this_process

        self._read = rss_reader(this_process())

    def __call__(self) -> float:
        return float(self._read())

    def close(self) -> None:
        pass


def held_rss_reader() -> HeldStatm | PsutilRss:
    """RSS read without letting go of the GIL where /proc can tell it (HeldStatm)."""
    return HeldStatm() if has_procfs() else PsutilRss()


PROBE_CLASSES: dict[str, type[Probe]] = {"rss": RssProbe, "uss": UssProbe}
