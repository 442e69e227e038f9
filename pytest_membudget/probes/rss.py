"""Resident and unique set size of the test process."""

from __future__ import annotations

import os

from pytest_membudget.probes import Probe
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


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux 4.0+); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return True


class RssProbe(Probe):
    """RSS: every page the process holds, native and Python alike. Allocators rarely give
    memory back, so RSS rises in steps and seldom falls. Options (set for the sweep's
    screen, which reads values alone): ``peaks`` False keeps no high-water mark,
    ``release_free_memory`` False leaves glibc's free memory in place before the window."""

    name = "rss"

    def before_window(self) -> None:
        if self.options.get("release_free_memory", True):
            release_free_memory()

    def peak(self) -> float | None:
        """The kernel's high-water mark (VmHWM), reset when the probe started."""
        if not self._hwm_reset:
            return None
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return float(int(line.split()[1]) * 1024)
        return None

    def start(self) -> None:
        self._hwm_reset = self.options.get("peaks", True) and reset_peak_rss()
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


PROBE_CLASSES: dict[str, type[Probe]] = {"rss": RssProbe, "uss": UssProbe}
