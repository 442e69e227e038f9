"""Reads of /proc/self with a file descriptor kept open: one pread, no new file per sample;
reads of the test's descendants in /proc; and the C library's own functions (glibc's malloc
statistics and trimming)."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
import threading
from typing import Any

from pytest_membudget.catalog import PAGE


class ProcFile:
    def __init__(self, path: str, *, keep_gil: bool = False) -> None:
        """``keep_gil``: read through the C library without letting go of the GIL, into a
        buffer made here (a thread that must read at the moment it got the GIL, before the
        others run on: measure/watch.py)."""
        self.fd = os.open(path, os.O_RDONLY)
        self._pread = _held_pread() if keep_gil else None
        self._buffer = ctypes.create_string_buffer(8192) if self._pread is not None else None

    def read(self, size: int = 4096) -> bytes:
        if self._pread is None or self._buffer is None:
            return os.pread(self.fd, size, 0)
        got = self._pread(self.fd, self._buffer, min(size, len(self._buffer)), 0)
        return self._buffer.raw[: max(got, 0)]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class HeldReader:
    """Whole files read through the C library without letting go of the GIL, into one
    buffer kept for the next read (grown as a file needs). A thread that reads a dozen
    files among busy threads would otherwise wait for the GIL again after each read: a
    walk of the threads' stacks took a quarter of a second beside a pool of eight workers,
    with the watch blind meanwhile."""

    def __init__(self, size: int = 1 << 16) -> None:
        self._open = libc_function("open", keep_gil=True)
        self._read = libc_function("read", keep_gil=True)
        self._close = libc_function("close", keep_gil=True)
        self._buffer = ctypes.create_string_buffer(size)
        self._mincore = libc_function("mincore", keep_gil=True)
        self._pages = ctypes.create_string_buffer(1 << 12)
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        if self._mincore is not None:
            self._mincore.restype = ctypes.c_int
            self._mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        if self._open is not None and self._read is not None:
            self._open.restype, self._open.argtypes = ctypes.c_int, [ctypes.c_char_p,
                                                                     ctypes.c_int]
            self._read.restype = ctypes.c_ssize_t
            self._read.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]

    def resident(self, start: int, end: int) -> int | None:
        """Bytes of the pages from ``start`` to ``end`` (a mapping of this process) that
        are resident, from the kernel (mincore); None where it cannot tell."""
        if self._mincore is None:
            return None
        pages = -(-(end - start) // self._page)
        if pages > len(self._pages):
            self._pages = ctypes.create_string_buffer(pages)
        if self._mincore(start, end - start, self._pages) != 0:
            return None
        return self._pages.raw[:pages].count(1) * self._page

    def read(self, path: bytes) -> bytes | None:
        """The file's contents, or None where it cannot be opened or read."""
        view = self.view(path)
        return None if view is None else bytes(view)

    def view(self, path: bytes) -> memoryview | bytes | None:
        """The file's contents in the reader's buffer (valid until its next read: no copy
        is made), or None where it cannot be opened or read."""
        if self._open is None or self._read is None or self._close is None:
            try:
                with open(path, "rb") as file:
                    return file.read()
            except OSError:
                return None
        fd = self._open(path, os.O_RDONLY)
        if fd < 0:
            return None
        try:
            size = 0
            while True:
                room = len(self._buffer) - size
                if room == 0:
                    grown = ctypes.create_string_buffer(2 * len(self._buffer))
                    ctypes.memmove(grown, self._buffer, size)
                    self._buffer, room = grown, len(grown) - size
                got = self._read(fd, ctypes.byref(self._buffer, size), room)
                if got < 0:
                    return None
                if got == 0:
                    return memoryview(self._buffer).cast("B")[:size]
                size += got
        finally:
            self._close(fd)


def has_procfs() -> bool:
    return os.path.exists("/proc/self/statm")


def libc_function(name: str, *, keep_gil: bool = False) -> Any | None:
    """A function of the C library on Linux (``ctypes``), or None where there is none.
    ``keep_gil``: called without releasing the GIL (a quick call from a thread that must not
    wait for the GIL again after it: see measure/watch.py)."""
    libc = _libc(keep_gil)
    return None if libc is None else getattr(libc, name, None)


@functools.lru_cache(maxsize=2)
def _libc(keep_gil: bool = False) -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.PyDLL(None) if keep_gil else ctypes.CDLL(None)
    except OSError:
        return None


# Other processes: the test's descendants, read by path (they come and go; no descriptor is
# kept, so the fds probe never sees this one's files).

PROC = "/proc"
#: The smaps_rollup lines that make up USS (pages no other process maps).
PRIVATE_FIELDS = (b"Private_Clean:", b"Private_Dirty:", b"Private_Hugetlb:")


def read_proc(path: str) -> bytes | None:
    """A /proc file's contents, or None when the process has gone (or, for smaps_rollup,
    has exited and not been reaped: the kernel answers ESRCH). PermissionError passes."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, ProcessLookupError):
        return None
    try:
        # A page: smaps_rollup is about 1 KiB, stat a few hundred bytes.
        return os.read(fd, PAGE)
    except ProcessLookupError:
        return None
    finally:
        os.close(fd)


#: Index in stat_fields() of /proc/<pid>/stat's field 20, num_threads (field 3 is index 0).
NUM_THREADS = 17


def stat_fields(raw: bytes) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command name, from field 3 (the state) on.
    The name is in parentheses and may itself hold spaces and parentheses."""
    return raw[raw.rindex(b")") + 2 :].split()


def parse_stat(raw: bytes) -> tuple[bytes, bytes, int, int]:
    """(state, command name, parent pid, start time in clock ticks) from /proc/<pid>/stat."""
    fields = stat_fields(raw)
    return fields[0], raw[raw.index(b"(") + 1 : raw.rindex(b")")], int(fields[1]), int(fields[19])


def parse_rollup(raw: bytes) -> tuple[int, int]:
    """(USS, PSS of anonymous and shared memory) in bytes from /proc/<pid>/smaps_rollup
    (figures in kB). File pages (code, libraries, mapped files) are left out of the PSS:
    their share moves whenever any process on the machine maps or unmaps the same file,
    by megabytes where other Python processes load the same libraries. Kernels before 5.7
    do not split the PSS: there it is the whole PSS."""
    uss = pss = anon = shmem = 0
    split = False
    for line in raw.split(b"\n"):
        if line.startswith(PRIVATE_FIELDS):
            uss += int(line.split()[1])
        elif line.startswith(b"Pss:"):
            pss = int(line.split()[1])
        elif line.startswith(b"Pss_Anon:"):
            anon, split = int(line.split()[1]), True
        elif line.startswith(b"Pss_Shmem:"):
            shmem = int(line.split()[1])
    return uss * 1024, (anon + shmem if split else pss) * 1024


def children_files_exist() -> bool:
    """Whether the kernel lists each thread's children (CONFIG_PROC_CHILDREN): far cheaper
    than reading the parent of every process on the machine."""
    return os.path.exists(f"{PROC}/self/task/{threading.get_native_id()}/children")


def child_pids(pid: int) -> list[int]:
    """The children of ``pid``: each of its threads lists those it forked (and those it
    inherited from a sibling thread that exited)."""
    try:
        tasks = os.listdir(f"{PROC}/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        return []
    found: list[int] = []
    for task in tasks:
        raw = read_proc(f"{PROC}/{pid}/task/{task}/children")
        if raw:
            found.extend(int(child) for child in raw.split())
    return found


def parent_map() -> dict[int, list[int]]:
    """Parent pid -> its children, from every process's stat: the fallback where the kernel
    keeps no per-thread list of children."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir(PROC):
        raw = read_proc(f"{PROC}/{entry}/stat") if entry.isdigit() else None
        if raw:
            children.setdefault(parse_stat(raw)[2], []).append(int(entry))
    return children


def descendants(root: int, per_thread: bool = True) -> list[int]:
    """Every process below ``root`` (children, their children, ...), walking down only; a
    pid met twice (reused while the walk ran) is taken once."""
    tree = None if per_thread else parent_map()
    found: list[int] = []
    seen = {root}
    stack = [root]
    while stack:
        pid = stack.pop()
        for child in child_pids(pid) if tree is None else tree.get(pid, []):
            if child not in seen:
                seen.add(child)
                found.append(child)
                stack.append(child)
    return found


@functools.lru_cache(maxsize=1)
def _held_pread() -> Any | None:
    pread = libc_function("pread", keep_gil=True)
    if pread is not None:
        pread.restype = ctypes.c_ssize_t
        pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long]
    return pread
