"""How much memory this process can still be given: the machine's available memory, or what
the cgroup it runs in (a container, a CI job, a systemd slice) has left under its limit,
whichever is less. The kernel's OOM killer acts when that runs out; the peak watch
(measure/watch.py) stops a footprint run before it does."""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import sys
from dataclasses import dataclass

from pytest_membudget.probes.procfs import ProcFile

MEMINFO = "/proc/meminfo"
CGROUP_ROOT = "/sys/fs/cgroup"
#: cgroup v1 writes "no limit" as the largest count of pages the kernel keeps times the page
#: size: LONG_MAX rounded down to a page.
NO_LIMIT = sys.maxsize // mmap.PAGESIZE * mmap.PAGESIZE


@dataclass(frozen=True)
class Room:
    """Bytes that can still be had (``available``) out of a limit (``total``), and whose
    limit it is: ``"machine"`` or ``"cgroup <path>"``."""

    available: float
    total: float
    where: str


class _Limit:
    """One cgroup's limit and what is in use under it, read by a pread each. The usage
    counts the page cache of files read; its inactive part is reclaimed before the OOM
    killer acts, so it is room (as container runtimes count a working set)."""

    def __init__(self, where: str, folder: str, limit: str, usage: str, inactive: bytes
                 ) -> None:
        self.where = where
        self._limit = ProcFile(os.path.join(folder, limit))
        self._usage = ProcFile(os.path.join(folder, usage))
        self._stat = ProcFile(os.path.join(folder, "memory.stat"))
        self._inactive = inactive

    def read(self) -> Room | None:
        text = self._limit.read(64).strip()
        if not text or text == b"max":
            return None
        total = float(text)
        if total >= NO_LIMIT:
            return None
        used = float(self._usage.read(64).strip() or b"0")
        for line in self._stat.read(8192).splitlines():
            if line.startswith(self._inactive):
                used -= float(line.split()[1])
                break
        return Room(min(max(total - used, 0.0), total), total, self.where)

    def close(self) -> None:
        for file in (self._limit, self._usage, self._stat):
            file.close()


class RoomReader:
    """Reads the room left (:meth:`read`); files are opened once, here. Where this system
    says nothing (no /proc, no cgroup files), :meth:`read` returns None."""

    def __init__(self, meminfo: str = MEMINFO, cgroups: str = "/proc/self/cgroup",
                 root: str = CGROUP_ROOT) -> None:
        self._meminfo: ProcFile | None = None
        with contextlib.suppress(OSError):
            self._meminfo = ProcFile(meminfo)
        self._limits = _cgroup_limits(cgroups, root)

    def read(self) -> Room | None:
        rooms = [room for room in (self._machine(), *(limit.read() for limit in self._limits))
                 if room is not None]
        return min(rooms, key=lambda room: room.available) if rooms else None

    def _machine(self) -> Room | None:
        if self._meminfo is None:
            return None
        total = available = math.nan
        for line in self._meminfo.read(4096).splitlines():
            if line.startswith(b"MemTotal:"):
                total = float(line.split()[1]) * 1024
            elif line.startswith(b"MemAvailable:"):
                available = float(line.split()[1]) * 1024
                break
        if not (math.isfinite(total) and math.isfinite(available)):
            return None
        return Room(available, total, "machine")

    def close(self) -> None:
        if self._meminfo is not None:
            self._meminfo.close()
        for limit in self._limits:
            limit.close()


def _cgroup_limits(cgroups: str, root: str) -> list[_Limit]:
    """The memory limits over this process (``cgroups``: its table of cgroups, under
    ``root``): its cgroup's and every ancestor's that has one (cgroup v2's memory.max, v1's
    memory.limit_in_bytes)."""
    try:
        with open(cgroups) as lines:
            entries = [line.rstrip("\n").split(":", 2) for line in lines]
    except OSError:
        return []
    limits: list[_Limit] = []
    for _, controllers, path in (entry for entry in entries if len(entry) == 3):
        if controllers == "":
            base = root
            if not os.path.exists(os.path.join(base, "cgroup.controllers")):
                base = os.path.join(root, "unified")
            files = ("memory.max", "memory.current", b"inactive_file ")
        elif "memory" in controllers.split(","):
            base = os.path.join(root, "memory")
            files = ("memory.limit_in_bytes", "memory.usage_in_bytes", b"total_inactive_file ")
        else:
            continue
        limits += _chain(base, path, files)
    return limits


def _chain(base: str, path: str, files: tuple[str, str, bytes]) -> list[_Limit]:
    """The limits of the cgroup at ``path`` under ``base`` and of its ancestors."""
    found = []
    parts = [part for part in path.split("/") if part]
    for depth in range(len(parts), -1, -1):
        try:
            found.append(_Limit(f"cgroup /{'/'.join(parts[:depth])}",
                                os.path.join(base, *parts[:depth]), *files))
        except OSError:
            continue
    return found
