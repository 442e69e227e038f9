"""What the process's memory is made of at one moment: resident pages by kind (anonymous,
file-backed, shared; /proc/self/status), glibc's bytes in use and free (mallinfo2), pymalloc's
blocks in use and free (the interpreter's own statistics), tracemalloc's traced bytes and its
own tables, and the threads' stacks (reserved and resident, /proc/self/smaps). Readings only:
evidence/composition.py says what they add up to.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import sys
import threading
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, replace

from pytest_membudget.catalog import PAGE_SLACK
from pytest_membudget.probes.allocators import Pool, pools
from pytest_membudget.probes.malloc import mallinfo2
from pytest_membudget.probes.procfs import HeldReader, ProcFile, has_procfs, libc_function
from pytest_membudget.probes.reading import NAN, MemoryReading

_STATUS_FIELDS = {b"VmRSS:": "rss", b"RssAnon:": "anon", b"RssFile:": "file",
                  b"RssShmem:": "shmem"}


def parse_status(raw: bytes) -> dict[str, float]:
    """Resident figures (bytes) and the thread count from /proc/self/status."""
    found: dict[str, float] = {}
    for line in raw.split(b"\n"):
        key = _STATUS_FIELDS.get(line.split(b"\t", 1)[0].split(b" ", 1)[0])
        if key is not None:
            found[key] = float(int(line.split()[1]) * 1024)
        elif line.startswith(b"Threads:"):
            found["threads"] = float(line.split()[1])
    return found


#: A capture is made again where the resident memory moved by more than the plugin's own
#: work moves it (catalog.PAGE_SLACK) while it was read (C code that let go of the GIL freed
#: or touched memory meanwhile), at most CAPTURE_TRIES times in all.
CAPTURE_TRIES = 3
_PYMALLOC_USED = re.compile(rb"# bytes in allocated blocks\s*=\s*([\d,]+)")
_PYMALLOC_TOTAL = re.compile(rb"\nTotal\s*=\s*([\d,]+)")


def parse_pymalloc(text: bytes) -> tuple[float, float]:
    """(bytes in pymalloc's blocks in use, bytes its arenas hold besides them: free blocks,
    unused pools, headers, rounding) from the interpreter's allocator statistics."""
    used = _PYMALLOC_USED.search(text)
    total = _PYMALLOC_TOTAL.search(text)
    if used is None or total is None:
        return NAN, NAN
    in_use = float(int(used.group(1).replace(b",", b"")))
    return in_use, float(int(total.group(1).replace(b",", b""))) - in_use


@functools.lru_cache(maxsize=1)
def _pymalloc_stats() -> Callable[[], bytes] | None:
    """The interpreter's allocator statistics as text, written into memory (glibc's
    open_memstream) rather than to a descriptor: no redirection, safe from any thread that
    holds the GIL. None where either function is missing."""
    stats = getattr(ctypes.pythonapi, "_PyObject_DebugMallocStats", None)
    memstream = libc_function("open_memstream", keep_gil=True)
    close, free = libc_function("fclose", keep_gil=True), libc_function("free", keep_gil=True)
    if stats is None or memstream is None or close is None or free is None:
        return None
    stats.argtypes, stats.restype = [ctypes.c_void_p], ctypes.c_int
    memstream.restype = ctypes.c_void_p
    memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t)]
    close.argtypes, free.argtypes = [ctypes.c_void_p], [ctypes.c_void_p]

    def read() -> bytes:
        buffer, size = ctypes.c_void_p(), ctypes.c_size_t()
        stream = memstream(ctypes.byref(buffer), ctypes.byref(size))
        if not stream:
            return b""
        # Nothing is written where pymalloc is not the allocator (PYTHONMALLOC=malloc).
        stats(stream)
        close(stream)
        try:
            return ctypes.string_at(buffer.value, size.value) if buffer.value else b""
        finally:
            free(buffer)

    return read


def pymalloc_figures() -> tuple[float, float]:
    """(in use, held besides) of pymalloc, or NaNs where it cannot be read."""
    read = _pymalloc_stats()
    return parse_pymalloc(read()) if read is not None else (NAN, NAN)


def stack_pointers(reader: HeldReader) -> list[int]:
    """The stack pointer of every thread of this process blocked in a system call (an idle
    thread waits in one), from /proc/self/task/*/syscall; running threads have none."""
    pointers = []
    try:
        tasks = os.listdir(b"/proc/self/task")
    except OSError:
        return []
    for task in tasks:
        fields = (reader.read(b"/proc/self/task/" + task + b"/syscall") or b"").split()
        if len(fields) >= 3 and fields[0] != b"running":
            pointers.append(int(fields[-2], 16))
    return pointers


#: A mapping's line in /proc/self/maps: "low-high perms offset dev inode [name]".
_MAPS_LINE = re.compile(rb"^([0-9a-f]+)-([0-9a-f]+) [^\n]*$", re.MULTILINE)


def stack_ranges(maps: bytes | memoryview, pointers: list[int]) -> list[tuple[int, int]]:
    """The address ranges of the memory mappings that hold one of ``pointers`` or are the
    main thread's ``[stack]``, from the text of /proc/self/maps (read in place: no line of
    it is copied)."""
    found = []
    for match in _MAPS_LINE.finditer(maps):
        start, end = int(match[1], 16), int(match[2], 16)
        if match[0].endswith(b"[stack]") or any(start <= p < end for p in pointers):
            found.append((start, end))
    return found


def thread_stacks(reader: HeldReader) -> tuple[float, float, int]:
    """(reserved, resident, stacks found) of the threads' stacks; NaNs where /proc cannot
    tell. Every file is read without letting go of the GIL (see HeldReader), into the
    reader's buffer, made before tracing begins, and the resident pages are asked of the
    kernel (mincore): smaps, whose text says it too, takes milliseconds to make and to read
    in a process with numpy, and a copy of it made under tracemalloc would be a peak of its
    own."""
    pointers = stack_pointers(reader)
    maps = reader.view(b"/proc/self/maps")
    if maps is None:
        return NAN, NAN, 0
    ranges = stack_ranges(maps, pointers)
    resident = [reader.resident(start, end) for start, end in ranges]
    if any(pages is None for pages in resident):
        return NAN, NAN, 0
    return (float(sum(end - start for start, end in ranges)),
            float(sum(pages or 0 for pages in resident)), len(ranges))


@dataclass
class Capture:
    """The raw figures of one moment, taken in quick succession without letting go of the
    GIL (see MemoryReader.capture); turned into a reading afterwards."""

    status: bytes = b""
    blocks: int = -1
    malloc: tuple[int, int, int] | None = None
    traced: tuple[int, int] | None = None
    pymalloc: bytes = b""
    pools: tuple[Pool, ...] = ()


class MemoryReader:
    """Reads :class:`MemoryReading`s with /proc/self/status kept open. ``stacks``: also the
    threads' stacks (a walk of smaps: milliseconds in a large process), read again only when
    the number of Python threads changed."""

    def __init__(self) -> None:
        self._status = ProcFile("/proc/self/status", keep_gil=True) if has_procfs() else None
        self._mallinfo = mallinfo2(keep_gil=True)
        self._pymalloc = _pymalloc_stats()
        self._stacks: tuple[float, float, int] | None = None
        self._stack_threads = -1
        self._files = HeldReader()

    def capture(self) -> Capture:
        """The figures of this moment, each read in C without letting go of the GIL, with
        as little Python between them as can be: a thread that got the GIL from a busy
        workload keeps it for the interpreter's switch interval only, and everything must
        describe the same moment (a freed result read by one figure and not another would
        read as memory of the wrong kind). pymalloc's statistics come last: the longest, one
        C call that nothing interrupts.

        The GIL does not stop C code that let go of it (a ctypes call, numpy's loops): such
        code may free memory between two figures, and the status read before the free and
        glibc's figures after it read the freed memory as some other kind (what a compiled
        call malloc'd and freed reads as "other anonymous memory"). So the status is read
        again after the figures; where the resident memory moved by more than PAGE_SLACK
        meanwhile, the capture is made again (up to CAPTURE_TRIES times; the last one
        stands)."""
        taken = self._capture_once()
        for _ in range(CAPTURE_TRIES - 1):
            if self._status is None or self._steady(taken.status):
                break
            taken = self._capture_once()
        return taken

    def _steady(self, status: bytes) -> bool:
        """Whether the resident memory is where ``status`` read it, within
        PAGE_SLACK."""
        assert self._status is not None
        before = parse_status(status).get("rss", NAN)
        after = parse_status(self._status.read(8192)).get("rss", NAN)
        return not abs(after - before) > PAGE_SLACK

    def _capture_once(self) -> Capture:
        taken = Capture()
        if self._status is not None:
            taken.status = self._status.read(8192)
        taken.blocks = sys.getallocatedblocks()
        if self._mallinfo is not None:
            got = self._mallinfo()
            taken.malloc = (got.uordblks + got.hblkhd, got.fordblks, got.keepcost)
        if tracemalloc.is_tracing():
            taken.traced = (tracemalloc.get_traced_memory()[0],
                            tracemalloc.get_tracemalloc_memory())
        if self._pymalloc is not None:
            taken.pymalloc = self._pymalloc()
        taken.pools = pools()
        return taken

    def read(self, *, stacks: bool = True) -> MemoryReading:
        """A reading of this moment (stacks as the class says)."""
        if stacks:
            self.refresh_stacks()
        return self.reading(self.capture(), stacks=stacks)

    def refresh_stacks(self) -> None:
        """Walk the threads' stacks again if the number of threads changed (its files let go
        of the GIL: not a step of a capture)."""
        if not sys.platform.startswith("linux"):
            return
        threads = threading.active_count()
        if self._stacks is None or threads != self._stack_threads:
            self._stacks, self._stack_threads = thread_stacks(self._files), threads

    def reading(self, taken: Capture, *, stacks: bool = True) -> MemoryReading:
        figures = parse_status(taken.status) if taken.status else {}
        rss = figures.get("rss", NAN)
        if self._status is None:
            from pytest_membudget.probes.psutil_compat import rss_reader, this_process

            rss = float(rss_reader(this_process())())
        reading = MemoryReading(rss=rss, anon=figures.get("anon", NAN),
                                file=figures.get("file", NAN), shmem=figures.get("shmem", NAN),
                                threads=int(figures.get("threads", 0)),
                                blocks=float(taken.blocks) if taken.blocks >= 0 else NAN)
        if taken.malloc is not None:
            used, free, trimmable = taken.malloc
            reading = replace(reading, malloc_used=float(used), malloc_free=float(free),
                              malloc_trimmable=float(trimmable))
        if taken.pymalloc:
            used_blocks, held = parse_pymalloc(taken.pymalloc)
            reading = replace(reading, pymalloc_used=used_blocks, pymalloc_free=held)
        if taken.traced is not None:
            reading = replace(reading, traced=float(taken.traced[0]),
                              tracer=float(taken.traced[1]))
        if taken.pools:
            reading = replace(reading, pooled=sum(pool.in_use for pool in taken.pools),
                              pooled_peak=sum(pool.peak for pool in taken.pools),
                              pools=tuple((pool.name, pool.remedy) for pool in taken.pools))
        if stacks and self._stacks is not None:
            reserved, resident, counted = self._stacks
            reading = replace(reading, stacks_reserved=reserved, stacks_resident=resident,
                              stacks_counted=counted)
        return reading

    def close(self) -> None:
        if self._status is not None:
            self._status.close()
