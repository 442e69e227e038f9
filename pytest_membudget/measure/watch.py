"""The peak watch: a thread that reads the process's RSS every millisecond while a footprint is
measured (a run with a ``_peak`` or ``_rise`` budget, a phase, the evidence's rerun).

Sampling between calls cannot see a peak inside one; the kernel's high-water mark sees its
height but not what it was made of. At each new high the watch notes the line the measured
thread is running (the rise is attributed to it: "memory rose while this line ran"), and
every few percent of the rise it reads what the memory is made of (probes/memory.py), so the
last reading is the composition at the highest moment it saw. When the rise passes a hard
ceiling it stops the workload with an exception raised in the measured thread, before the
kernel's OOM killer takes the machine.

It needs the GIL to run: while the measured thread runs Python it gets it within the
interpreter's switch interval (5 ms); C code that releases the GIL (numpy's large loops,
torch's ops, ctypes calls, file reads) leaves it free to run; C code that holds it (one
json.loads, one bytes concatenation) is seen after it returns.
"""

from __future__ import annotations

import ctypes
import math
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from pytest_membudget.evidence.composition import MAJOR_SHARE
from pytest_membudget.evidence.peakrecords import WatchedLine
from pytest_membudget.evidence.records import SMALL_BYTES
from pytest_membudget.frames import is_library, is_own
from pytest_membudget.measure.lines import Lines, Seen
from pytest_membudget.measure.results import FootprintRunaway
from pytest_membudget.measure.stacks import (
    ThreadStack,
    frames_of,
    own_stack,
    running_line,
)
from pytest_membudget.measure.starts import announcing, start_announced
from pytest_membudget.measure.timeline import Timeline
from pytest_membudget.probes.heap import traced_reader
from pytest_membudget.probes.memory import MemoryReader
from pytest_membudget.probes.reading import MemoryReading
from pytest_membudget.probes.room import RoomReader
from pytest_membudget.probes.rss import held_rss_reader
from pytest_membudget.vocabulary import most_of

if TYPE_CHECKING:
    from pytest_membudget.measure.records import RunawayRecord

#: Seconds between readings.
INTERVAL = 0.001
#: A rise is attributed to the running line in steps of at least the least a line the
#: evidence names holds: a finer step walks the stacks more often for parts too small to name.
RISE_STEP = SMALL_BYTES
#: What the memory is made of is read again once RSS passed the last reading by this share
#: of the rise so far (at least LEAST_COMPOSITION_STEP): the last reading is within a few
#: percent of the highest moment, and a rise of gigabytes takes a few dozen readings.
COMPOSITION_SHARE = 0.05
LEAST_COMPOSITION_STEP = 256 * 1024
#: Seconds within which memory the workload lets go shows in RSS (the kernel unmaps a freed
#: block's pages; a stopped workload's frames let go of what they held): the watch waits this
#: long before it concludes the workload holds it. A capture whose glibc bytes in use fell by
#: MAJOR_SHARE of the rise while RSS rose (pages still being unmapped would make a major kind
#: of "other" memory) stands unless RSS, read again every INTERVAL, falls within it
#: (PeakWatch._unmapping); a workload still above the ceiling this long after a stop caught
#: it (code that catches every exception) and is stopped again.
FALL_WAIT = 0.05
#: The interpreter's switch interval while a watch runs (seconds): how long the watch may wait
#: for the GIL after each read, while the workload runs Python.
SWITCH_INTERVAL = 0.0002
#: The machine's guard (Ceiling.machine): the memory left to the machine, or the cgroup,
#: below which a run is stopped, as a share of its total (at least LEAST_RESERVE): the
#: kernel's OOM killer acts when it runs out. Read again whenever RSS rose ROOM_STEP.
RESERVE_SHARE = 0.05
LEAST_RESERVE = 64 * 1024 * 1024
ROOM_STEP = 16 * 1024 * 1024


@dataclass
class WatchReport:
    """What the watch saw: the readings at its start, at the highest moment it read, and at
    its end; the rise by the line that ran; the timeline; whether it stopped the workload."""

    start: MemoryReading
    peak: MemoryReading
    end: MemoryReading
    #: The highest RSS read (the composition's reading is within a step of it).
    highest: float
    seconds: float
    #: Per line that ran while RSS rose: bytes of the rise, largest first.
    rose: list[WatchedLine]
    timeline: npt.NDArray[np.float64]
    #: Seconds from the start to the highest reading.
    peak_at: float = math.nan
    #: The lines of the user's code that were running when threads appeared, most first.
    threads: list[WatchedLine] = field(default_factory=list)
    stopped: bool = False
    samples: int = 0
    #: Where a warm-up ran before the measured window: the RSS at the run's start, the
    #: highest the warm-up reached and the RSS where the window began (its start); empty
    #: where none ran. The rise, the peak and the lines above are the window's.
    warmup: dict[str, float] = field(default_factory=dict)
    #: Seconds from the watch's start to the window's (the timeline's clock).
    window_at: float = 0.0
    #: The longest stretch of the window without a reading (seconds): the workload held
    #: the interpreter throughout (one C call), or other threads kept the watch waiting.
    held: float = 0.0


@dataclass
class PeakWatch:
    """``ceiling``: the RSS rise above the start at which the workload is stopped (inf: never).
    ``ticks``: called from the watch's thread at every reading (the evidence's census)."""

    ceiling: float = math.inf
    ticks: list[Callable[[], None]] = field(default_factory=list)
    #: What the runaway's failure says beside the figures (the budget that set the ceiling).
    budget: RunawayRecord = field(default_factory=cast("Callable[[], RunawayRecord]", dict))
    #: Whether the workload is stopped before the machine, or its cgroup, runs out of
    #: memory (see RESERVE_SHARE), whatever ``ceiling`` says.
    machine: bool = False

    def start(self) -> None:
        """Begin watching the calling thread (:meth:`prepare`, then :meth:`begin`)."""
        self.prepare()
        self.begin()

    def prepare(self) -> None:
        """Everything the watch allocates, and its thread, before the run's probes start:
        tracemalloc (a heap budget) then never sees them, and the thread's stack is in the
        start of every other probe."""
        self._target = threading.get_ident()
        self._stack = ThreadStack(self._target)
        # The measured thread's own stack, read by itself when it starts a thread (another
        # file: the watch's thread reads the other one meanwhile).
        self._own_stack = ThreadStack(self._target)
        self._reader = MemoryReader()
        self._reader.refresh_stacks()
        self._room = RoomReader() if self.machine else None
        # Opened here, not in the watch's thread once the run has begun: opening a file lets
        # go of the GIL, and a workload that then holds it in one long C call (json.loads)
        # would run to its end before the watch's first reading.
        self._read_rss = held_rss_reader()
        self._lines, self._started = Lines(), Lines()
        # Threads the measured thread started through Thread.start, by the dump of its stack
        # at each start (written by that thread alone, read once the watch stops), and the
        # threads the watch has counted.
        self._announced: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self._announced_dumps: dict[bytes, int] = {}
        self._seen: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self._timeline = Timeline()
        self._samples = 0
        self._fired = -math.inf
        self._stopped = False
        self._halt = threading.Event()
        self._begin = threading.Event()
        # Held by the watch's thread over each reading, and by rebase(): a reading is of
        # one start, never half of each.
        self._lock = threading.Lock()
        self._epoch = 0
        self._warmup: dict[str, float] = {}
        self._thread = threading.Thread(target=self._watch, name="membudget-peak-watch",
                                        daemon=True)
        self._thread.start()
        self._switch = sys.getswitchinterval()

    def begin(self) -> None:
        """Read the start and let the watch's thread read on."""
        self._start = self._peak = self._reader.read()
        self._highest = self._start.rss
        self._peak_at = 0.0
        # The machine's guard counts from the run's start, warm-up and all.
        self._room_start = self._room.read() if self._room is not None else None
        self._run_start, self._room_next = self._start.rss, self._start.rss + ROOM_STEP
        # Each read of /proc lets go of the GIL, and the watch waits for it again: within
        # the default 5 ms that is tens of milliseconds a reading while the workload runs
        # Python. Restored at the end.
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL))
        # The threads there are now, the watch's own among them, are not the workload's.
        self._seen.update(threading.enumerate())
        announcing(self)
        self._began = self._window_began = time.perf_counter()
        self._held, self._last_reading = 0.0, 0.0
        self._begin.set()

    def rebase(self) -> None:
        """The measured window begins after a warm-up: the rise, the highest reading, the
        lines and the ceiling count from here on (the warm-up is not measured), and what
        the warm-up reached is kept as its own figures (WatchReport.warmup)."""
        with self._lock:
            reading = self._reader.read()
            self._warmup = {"rss_start": self._start.rss, "highest": self._highest,
                            "rss_end": reading.rss}
            self._start = self._peak = reading
            self._highest = reading.rss
            self._window_began = time.perf_counter()
            self._peak_at = self._window_began - self._began
            self._lines, self._started = Lines(), Lines()
            self._announced_dumps = {}
            self._held, self._last_reading = 0.0, self._peak_at
            self._epoch += 1

    @property
    def prepared(self) -> bool:
        return hasattr(self, "_thread")

    @property
    def start_rss(self) -> float:
        return self._start.rss

    def stop(self) -> WatchReport:
        """Stop watching; the report."""
        self._halt.set()
        began = self._begin.is_set()
        self._begin.set()
        self._thread.join()
        announcing(self, False)
        sys.setswitchinterval(self._switch)
        if not began:  # stopped before it began (a probe could not start)
            self._start = self._peak = self._reader.read(stacks=False)
            self._highest, self._peak_at = self._start.rss, 0.0
            self._began = self._window_began = time.perf_counter()
            self._held = 0.0
        end = self._reader.read()
        self._reader.close()
        if self._room is not None:
            self._room.close()
        self._stack.close()
        self._own_stack.close()
        self._started.merge(self._announced_lines())
        return WatchReport(
            start=self._start, peak=self._peak, end=end, highest=self._highest,
            seconds=time.perf_counter() - self._window_began, rose=self._lines.rose(),
            timeline=self._timeline.rows(), peak_at=self._peak_at,
            stopped=self._stopped, samples=self._samples, warmup=dict(self._warmup),
            window_at=self._window_began - self._began, held=self._held,
            threads=self._started.threads())

    # -- the watch's thread -----------------------------------------------------------------

    def _watch(self) -> None:
        read_rss, traced = self._read_rss, traced_reader()
        self._begin.wait()
        if self._halt.is_set():
            read_rss.close()
            return
        start = attributed = next_reading = 0.0
        epoch = -1
        sleep, clock, halted = time.sleep, time.perf_counter, self._halt.is_set
        count = threading.active_count
        threads = count()
        try:
            while not halted():
                with self._lock:
                    if epoch != self._epoch:  # begun, or the window began after a warm-up
                        epoch = self._epoch
                        start = attributed = self._start.rss
                        next_reading = start + LEAST_COMPOSITION_STEP
                    attributed, next_reading, threads = self._read_once(
                        read_rss, traced, start, attributed, next_reading, threads, clock,
                        count)
                sleep(INTERVAL)
        finally:
            read_rss.close()

    def _read_once(self, read_rss: Callable[[], float],
                   traced: Callable[[], tuple[float, float]],
                   start: float, attributed: float, next_reading: float, threads: int,
                   clock: Callable[[], float], count: Callable[[], int]
                   ) -> tuple[float, float, int]:
        """One reading of the watch's thread: RSS, the running line and, at a new step of
        the rise, the raw figures, before anything else (see MemoryReader.capture). The
        first reading comes straight after the start, not after a sleep: a workload that
        enters one long C call at once (json.loads) keeps the GIL from the watch's start,
        which gets it back when that call returns and must read then, before a sleep lets
        the workload run on. Returns the bookkeeping for the next reading."""
        rss, (held, peak) = read_rss(), traced()
        if rss > self._highest:
            where = self._frames() if rss - attributed >= RISE_STEP else None
            taken = self._reader.capture() if rss >= next_reading else None
            self._highest, self._peak_at = rss, clock() - self._began
            if where is not None:
                self._lines.add(where, rss - attributed)
                attributed = rss
            if taken is not None:
                # The stacks after the capture (their files let go of the GIL): threads
                # come and go slowly beside the rest.
                self._reader.refresh_stacks()
                reading = self._reader.reading(taken)
                # A capture made again after C code freed memory meanwhile is of a lower
                # moment than the one it replaces: that one stands. So does it where this
                # one fell inside such a free (see _unmapping).
                if not reading.rss < self._peak.rss and not self._unmapping(reading):
                    self._peak = reading
                next_reading = rss + max(LEAST_COMPOSITION_STEP,
                                         COMPOSITION_SHARE * (rss - start))
        now_threads = count()
        if now_threads > threads:
            # Threads' stacks are reserved where they are started: the line that started
            # them, not the one running when their pages were touched. The measured
            # thread's own starts say so themselves (announce); the others (started by
            # other threads, or not through Thread.start) go to the line running now.
            fresh = self._unannounced()
            if fresh:
                self._started.add(self._frames(), fresh, threads=True)
        now = clock() - self._began
        self._held = max(self._held, now - self._last_reading)
        self._last_reading = now
        self._samples += 1
        self._timeline.record(now, rss, held, peak)
        for tick in self.ticks:
            tick()
        if now - self._fired > FALL_WAIT:
            if rss - start > self.ceiling:
                self._stop_workload(rss, now, {"by": "ceiling"})
            elif self._room is not None and rss >= self._room_next:
                self._room_next = rss + ROOM_STEP
                short = self._short_of_room(rss)
                if short is not None:
                    self._stop_workload(rss, now, short)
        return attributed, next_reading, now_threads

    def _short_of_room(self, rss: float) -> RunawayRecord | None:
        """Why the run must stop for the machine's sake, as data; None while the machine,
        or the cgroup, has room: under RESERVE_SHARE of its total left, with this run's
        rise holding MOST_OF what it lost since the run began (memory other processes took is
        theirs)."""
        assert self._room is not None
        room, began = self._room.read(), self._room_start
        if room is None or began is None:
            return None
        reserve = max(RESERVE_SHARE * room.total, LEAST_RESERVE)
        lost = began.available - room.available
        if room.available >= reserve or not most_of(rss - self._run_start, lost):
            return None
        return {"by": "machine", "room": room.available, "room_total": room.total,
                "room_where": room.where, "reserve": reserve,
                "run_rise": rss - self._run_start}

    def _unmapping(self, reading: MemoryReading) -> bool:
        """Whether a capture fell inside a free that C code made without the GIL (a ctypes
        call), so that the reading it would replace stands for the peak: glibc takes a freed
        mapped block out of its figures before the kernel has unmapped its pages, and a
        capture in between reads the pages resident and glibc's bytes gone. Such a capture
        reads glibc's bytes in use fallen by a large share of the rise since the reading it
        would replace, while RSS rose; RSS, read again every INTERVAL (the GIL let go, the
        unmapping going on) for up to FALL_WAIT, then falls by half as much. Memory freed
        and kept by the allocators does not fall: where RSS rose on past it (a fragmented
        heap), the capture is the highest moment's."""
        fell = self._peak.malloc_used - reading.malloc_used
        if not fell > max(MAJOR_SHARE * (reading.rss - self._start.rss),
                          LEAST_COMPOSITION_STEP):
            return False
        deadline = time.perf_counter() + FALL_WAIT
        while time.perf_counter() < deadline:
            time.sleep(INTERVAL)
            if self._read_rss() < reading.rss - fell / 2:
                return True
        return False

    def _frames(self) -> Seen:
        """Where the measured thread is now (see :func:`frames_of`), read now: a frame's
        line moves on with the workload. Where it waits for other threads, the line the
        threads at work run (a pool's workers: see running_line), with the line that waits
        beside it."""
        stack, others = self._stack.read_all()
        inner, user, waiting = frames_of(stack)
        if waiting:
            worker = running_line(others)
            if worker is not None:
                return worker[0], worker[1], False, user
        return inner, user, waiting, None

    def announce(self, thread: threading.Thread) -> bool:
        """Before ``thread`` starts: whether the measured thread starts it (its line is
        then noted by :meth:`started`)."""
        if threading.get_ident() != self._target:
            return False
        self._announced.add(thread)
        return True

    def started(self) -> None:
        """In the measured thread, after a thread it announced started: its stack's dump,
        by itself, counted by its bytes (a loop's starts are one dump) and read into the
        line that started it once the watch stops. Exact where the count read from the
        watch's thread is late: while the started threads run, the watch may not get the
        interpreter until the starting loop is over. Only the dump is made here: the
        measured thread's Python work waits behind the workload's busy threads at every
        switch of the interpreter."""
        dump = self._own_stack.dump_own()
        self._announced_dumps[dump] = self._announced_dumps.get(dump, 0) + 1

    def _announced_lines(self) -> Lines:
        """The lines that started the announced threads, from their dumps: the plugin's
        frames come first (the dump, started, the wrapped Thread.start); where more of them
        call that (another watch starting its thread), the thread is the plugin's, not the
        workload's."""
        lines = Lines()
        for dump, count in self._announced_dumps.items():
            stack = own_stack(dump)
            own = 0
            while own < len(stack) and is_own(stack[own][0]):
                own += 1
            if not 0 < own < len(stack) or stack[own - 1][2] != start_announced.__name__:
                continue
            del stack[:own]
            inner, user, _ = frames_of(stack, waits=False)
            lines.add((inner, user, False, None), float(count), threads=True)
        return lines

    def _unannounced(self) -> int:
        """Threads the watch has not counted yet that the measured thread did not announce."""
        fresh = 0
        for thread in threading.enumerate():
            if thread not in self._seen:
                self._seen.add(thread)
                fresh += thread not in self._announced
        return fresh

    def _stop_workload(self, rss: float, now: float, why: RunawayRecord) -> None:
        """Raise FootprintRunaway in the measured thread while it runs the workload: its
        first frame beneath the libraries is the user's own. In this plugin's code (its
        bookkeeping between calls) or pytest's (the failure being reported) the next reading
        tries again."""
        first = next((where for where in self._stack.read() if not is_library(where[0])), None)
        if first is None or is_own(first[0]):
            return
        FootprintRunaway.pending = {
            "rise": rss - self._start.rss, "ceiling": self.ceiling, "rss_start": self._start.rss,
            "rss": rss, "seconds": now, "rose": self._lines.rose(), **self.budget, **why}
        self._fired = now
        self._stopped = True
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._target),
                                                   ctypes.py_object(FootprintRunaway))

