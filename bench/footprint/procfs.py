"""The process's own memory figures, read straight from the kernel and the allocators, for the
ground truth: written here, apart from the plugin's readers, so that the benchmark does not
grade the plugin with its own ruler.

- ``/proc/self/status``: RSS split into anonymous, file-backed and shared pages, the kernel's
  high-water mark (VmHWM, reset by writing 5 to ``/proc/self/clear_refs``), virtual size,
  thread count;
- glibc's ``mallinfo2``: bytes in use (``uordblks + hblkhd``) and free (``fordblks``), and
  ``malloc_info``: of the free bytes, those in free chunks (memory handed out and freed:
  touched) and those at the top of each arena (a new thread's arena is mostly untouched);
- pymalloc's arenas (``sys._debugmallocstats``): bytes in blocks in use and free;
- thread stacks: the mappings that hold each thread's stack pointer (read from
  ``/proc/self/task/<tid>/syscall``), their resident bytes from ``/proc/self/smaps``;
- an allocator's own figures where a shape has a reader for them (pyarrow's memory pool).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

#: /proc/self/status fields read, in kB except Threads.
STATUS_FIELDS = {"VmRSS": "rss", "VmHWM": "hwm", "RssAnon": "anon", "RssFile": "file",
                 "RssShmem": "shmem", "VmSize": "vsize", "Threads": "threads"}


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


#: Called with the GIL held (PyDLL), so that the main thread's Python code cannot run in the
#: middle of a reading.
_LIBC = ctypes.PyDLL(None)
_LIBC.mallinfo2.restype = MallInfo2
_LIBC.malloc_trim.argtypes = [ctypes.c_size_t]
_LIBC.open_memstream.restype = ctypes.c_void_p
_LIBC.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_char_p),
                                 ctypes.POINTER(ctypes.c_size_t)]
_LIBC.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
_LIBC.fclose.argtypes = [ctypes.c_void_p]
_LIBC.free.argtypes = [ctypes.c_void_p]


def read_status() -> dict[str, int]:
    found: dict[str, int] = {}
    with open("/proc/self/status", "rb") as status:
        for raw in status:
            name, _, rest = raw.decode().partition(":")
            key = STATUS_FIELDS.get(name)
            if key is not None:
                number = int(rest.split()[0])
                found[key] = number if key == "threads" else number * 1024
    return found


def read_malloc() -> dict[str, int]:
    info = _LIBC.mallinfo2()
    return {"malloc_used": info.uordblks + info.hblkhd, "malloc_free": info.fordblks,
            "malloc_mmapped": info.hblkhd, **read_malloc_info()}


_SIZE_ENTRY = re.compile(r'<(?:size|unsorted) from="\d+" to="\d+" total="(\d+)"')
_REST = re.compile(r'<total type="rest" count="\d+" size="(\d+)"/>')
_FAST = re.compile(r'<total type="fast" count="\d+" size="(\d+)"/>')


def _malloc_info_text() -> str:
    buffer, size = ctypes.c_char_p(), ctypes.c_size_t()
    stream = _LIBC.open_memstream(ctypes.byref(buffer), ctypes.byref(size))
    _LIBC.malloc_info(0, stream)
    _LIBC.fclose(stream)
    text = ctypes.string_at(buffer, size.value).decode()
    _LIBC.free(ctypes.cast(buffer, ctypes.c_void_p))
    return text


def read_malloc_info() -> dict[str, int]:
    """glibc's free bytes by where they lie: in free chunks of any arena (fast bins and
    bins), at the top of the main arena, at the tops of the other arenas. Each heap's "rest"
    is its top chunk plus its non-fast bins; its size entries list every free chunk."""
    chunks = top_main = top_others = 0
    for number, block in enumerate(_malloc_info_text().split("<heap nr=")[1:]):
        block = block.split("</heap>")[0]
        listed = sum(int(total) for total in _SIZE_ENTRY.findall(block))
        fast, rest = _FAST.search(block), _REST.search(block)
        top = max((int(rest.group(1)) if rest else 0)
                  - (listed - (int(fast.group(1)) if fast else 0)), 0)
        chunks += listed
        if number == 0:
            top_main = top
        else:
            top_others += top
    return {"malloc_free_chunks": chunks, "malloc_top_main": top_main,
            "malloc_top_arenas": top_others}


_PYMALLOC_LINES = {
    "pymalloc_used": re.compile(r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
    "pymalloc_available": re.compile(r"# bytes in available blocks\s*=\s*([\d,]+)"),
    "pymalloc_unused_pools": re.compile(r"unused pools \* \d+ bytes\s*=\s*([\d,]+)"),
}


def read_pymalloc() -> dict[str, int]:
    """pymalloc's bytes in use and free (free blocks in used pools plus unused pools).
    ``sys._debugmallocstats`` writes to the C stderr, so fd 2 is pointed at a file for it."""
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(2)
        try:
            os.dup2(sink.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        text = sink.read().decode(errors="replace")
    found = {}
    for key, pattern in _PYMALLOC_LINES.items():
        match = pattern.search(text)
        found[key] = int(match.group(1).replace(",", "")) if match else 0
    return {"pymalloc_used": found["pymalloc_used"],
            "pymalloc_free": found["pymalloc_available"] + found["pymalloc_unused_pools"]}


def _stack_pointers(exclude: frozenset[int]) -> list[int]:
    """Each thread's stack pointer but the main thread's (whose stack is ``[stack]``), the
    reader's own (it is running, so the kernel does not report it) and ``exclude``'s."""
    skip = {os.getpid(), threading.get_native_id(), *exclude}
    found = []
    for tid in os.listdir("/proc/self/task"):
        if int(tid) in skip:
            continue
        try:
            with open(f"/proc/self/task/{tid}/syscall") as syscall:
                fields = syscall.read().split()
        except OSError:  # the thread ended while we looked
            continue
        if len(fields) >= 9:  # "nr arg1..arg6 sp pc"; "running" otherwise
            found.append(int(fields[-2], 16))
    return found


def read_stacks(exclude: frozenset[int] = frozenset()) -> dict[str, int]:
    """Resident and reserved bytes of the mappings that hold the threads' stacks (but those of
    the threads in ``exclude``, by native id)."""
    pointers = sorted(_stack_pointers(exclude))
    resident = reserved = counted = 0
    current: tuple[int, int] | None = None
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                low, high = (int(part, 16) for part in head.split("-"))
                current = (low, high) if any(low <= sp < high for sp in pointers) else None
            elif current is not None and head == "Rss:":
                resident += int(line.split()[1]) * 1024
                reserved += current[1] - current[0]
                counted += 1
                current = None
    return {"stacks_resident": resident, "stacks_reserved": reserved, "stacks_counted": counted}


#: A reader of an allocator's own figures (bytes by name), read beside glibc's.
Extra = Callable[[], dict[str, int]]


def read_extra(extra: Extra | None) -> dict[str, int]:
    """An allocator's own figures, each prefixed ``own_`` (nothing without a reader)."""
    return {} if extra is None else {f"own_{key}": value for key, value in extra().items()}


def full_reading(exclude: frozenset[int] = frozenset(),
                 extra: Extra | None = None) -> dict[str, Any]:
    return {"t": time.perf_counter(), **read_status(), **read_malloc(), **read_pymalloc(),
            **read_stacks(exclude), **read_extra(extra)}


def reset_high_water_mark() -> None:
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")


def trim() -> None:
    _LIBC.malloc_trim(0)


#: Allocator figures that account for resident memory (a reading that accounts for more of
#: the same RSS is taken at a steadier moment).
ACCOUNTED = ("malloc_used", "malloc_free_chunks", "pymalloc_used", "pymalloc_free", "file",
             "shmem", "stacks_resident", "own_in_use")


class PeakSampler(threading.Thread):
    """Reads RSS every ``interval`` seconds and keeps the readings near the highest one
    (within ``near`` of the rise since :meth:`restart`, or 16 KiB), each with glibc's
    figures read at that moment and pymalloc's (slower to read) at most ``slow_every``
    seconds old. A reading across which glibc's bytes in use moved by more than
    ``tolerance``, or RSS fell by more, is dropped. Of the readings kept, :meth:`stop`
    returns the one whose allocator figures account for the most memory: glibc lowers its
    counters before munmap hands the pages back, so a reading inside a free shows RSS the
    allocators no longer account for. The threads' stacks are read (every ``slow_every``)
    while the most threads run, if more than at the start. A thread cannot run while C code
    holds the GIL, so the readings can miss a peak inside one statement: VmHWM, read beside
    them, cannot."""

    def __init__(self, interval: float = 0.001, slow_every: float = 0.005,
                 tolerance: int = 1 << 20, near: float = 0.02,
                 extra: Extra | None = None) -> None:
        super().__init__(name="footprint-peak-sampler", daemon=True)
        self.extra = extra
        self.interval = interval
        self.slow_every = slow_every
        self.tolerance = tolerance
        self.near_share = near
        self.readings = 0
        self.discarded = 0
        self.start_threads = 0
        self.ready = threading.Event()
        self._stop_event = threading.Event()
        self._near: list[dict[str, Any]] = []
        self._top = 0
        self._start_rss = 0
        self._slow: dict[str, Any] = {}
        self._slow_at = 0.0
        self._stacks: dict[str, Any] = {}
        self._stacks_at = 0.0
        self._most_threads = 0

    def restart(self) -> None:
        """Forget the readings so far: the measured call starts now."""
        self._start_rss = read_status()["rss"]
        self._near, self._top = [], 0
        self._stacks, self._most_threads = {}, 0

    def run(self) -> None:
        self.start_threads = read_status()["threads"]
        self.ready.set()
        while not self._stop_event.is_set():
            self.sample()
            time.sleep(self.interval)
        self.sample()

    def _margin(self) -> float:
        return max(self.near_share * (self._top - self._start_rss), 16 << 10)

    def sample(self) -> None:
        status = read_status()
        now = time.perf_counter()
        self.readings += 1
        self._sample_stacks(status["threads"], now)
        if status["rss"] < self._top - self._margin():
            return
        reading = self._reading(status, now)
        if reading is None:
            self.discarded += 1
            return
        self._top = max(self._top, reading["rss"])
        floor = self._top - self._margin()
        self._near = [r for r in self._near[-500:] if r["rss"] >= floor] + [reading]

    def _reading(self, status: dict[str, int], now: float) -> dict[str, Any] | None:
        before = read_malloc()
        slow = self._slow
        if now - self._slow_at >= self.slow_every or not slow:
            slow = read_pymalloc()
        again, allocators = read_status(), read_malloc()
        # Reading /proc lets the main thread run (and C code that released the GIL runs
        # anyway). Pages may fault in meanwhile (a buffer being written), but a reading
        # across which glibc allocated or freed, or RSS fell (a free under way), is not one
        # moment.
        moved = abs(allocators["malloc_used"] - before["malloc_used"])
        if moved > self.tolerance or again["rss"] < status["rss"] - self.tolerance:
            return None
        if slow is not self._slow:
            self._slow, self._slow_at = slow, now
        return {"t": now, **again, **allocators, **self._slow, **read_extra(self.extra)}

    def _sample_stacks(self, threads: int, now: float) -> None:
        if threads <= self.start_threads or threads < self._most_threads:
            return
        if threads == self._most_threads and now - self._stacks_at < self.slow_every:
            return
        stacks = read_stacks()
        self._stacks_at = now
        # A thread that is running has no stack pointer to read: keep the scan that found
        # the most stacks among those taken while the most threads ran.
        if threads > self._most_threads or (
                stacks["stacks_counted"] >= self._stacks.get("stacks_counted", 0)):
            self._stacks = {**stacks, "stacks_threads": threads}
        self._most_threads = threads

    def stop(self) -> dict[str, Any]:
        """The reading that stands for the peak (see the class), with the stacks' figures and
        how many readings were near the highest."""
        self._stop_event.set()
        self.join()
        if not self._near:
            return {}
        chosen = max(self._near, key=lambda r: (r["threads"],
                                                sum(r.get(key, 0) for key in ACCOUNTED)))
        return {**chosen, **self._stacks, "near_readings": len(self._near),
                "highest_rss": self._top}
