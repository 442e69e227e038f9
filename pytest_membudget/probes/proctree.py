"""The processes the test started: how many are alive (``children``), the memory they hold
alone (``children_uss``), and the proportional footprint of the test's process and all of them
(``tree_pss``), read from /proc (Linux).

The tree is walked down from the test's own process, never up: under pytest-xdist a worker's
descendants are its own, never the other workers (the controller's children). Each sample
judges the live set anew: a process counts while it is alive; one that has exited, reaped or
not yet (a zombie), holds no memory and is not counted, so workers that come and go leave
nothing behind them in the series.

One listing of the tree and one read per process serve all three probes of a sample
(:class:`ProcessTree`, shared like the CUDA probes' device statistics), and only the figures a
budget asks for are read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import (
    PROC,
    children_files_exist,
    descendants,
    parse_rollup,
    parse_stat,
    read_proc,
)

#: States of a process that has exited: zombie (not reaped yet), dead.
EXITED_STATES = frozenset((b"Z", b"X", b"x"))
#: (pid, start time, command name, USS, PSS): one process as one sample found it.
Seen = tuple[int, int, bytes, int, int]
#: Rows of a process table in the evidence. Processes that ended are kept up to this many
#: (those that grew most), so that churning workers cost constant memory.
TABLE_ROWS = 10
#: Which figure of a record each probe's table shows: none (the count), USS, PSS.
FIGURE_COLUMN = {"children": 0, "children_uss": 1, "tree_pss": 2}


def unavailable_reason(memory: bool) -> str | None:
    """Why the process tree cannot be read here, or None."""
    if not sys.platform.startswith("linux") or not os.path.isdir(f"{PROC}/self/task"):
        return (f"it reads the process tree from /proc, which {sys.platform} does not have "
                "(Linux only)")
    if memory and not os.path.exists(f"{PROC}/self/smaps_rollup"):
        return ("it reads /proc/<pid>/smaps_rollup, which this kernel does not have "
                "(Linux 4.14 or later)")
    return None


class ProcessRecord:
    """One process over the window: first and last figures, and the sums of a least-squares
    slope, in constant space."""

    __slots__ = ("born", "ended", "first", "last", "name", "pid", "root", "stamp", "started",
                 "sums")

    def __init__(self, seen: Seen, x: int, born: bool, root: bool) -> None:
        self.pid, self.started, self.born, self.root = seen[0], seen[1], born, root
        self.name = seen[2].decode(errors="replace")
        self.ended = False
        self.stamp = 0
        #: (iteration, USS, PSS) at first and at last sight
        self.first = self.last = (x, seen[3], seen[4])
        #: samples, sum of x, x², USS, x·USS, PSS, x·PSS
        self.sums = [0.0] * 7

    def add(self, seen: Seen, x: int, stamp: int) -> None:
        self.stamp = stamp
        self.last = (x, seen[3], seen[4])
        sums = self.sums
        for index, value in enumerate((1, x, x * x, seen[3], x * seen[3], seen[4],
                                       x * seen[4])):
            sums[index] += value

    def growth(self, column: int) -> int:
        return self.last[column] - self.first[column]

    def slope(self, column: int) -> float | None:
        """Least-squares slope per iteration of USS (column 1) or PSS (column 2)."""
        n, sx, sxx = self.sums[:3]
        sy, sxy = self.sums[2 * column + 1 : 2 * column + 3]
        spread = n * sxx - sx * sx
        return (n * sxy - sx * sy) / spread if n >= 2 and spread > 0 else None


class ProcessLog:
    """Every process the window's samples found, kept for the evidence: which grew, which
    started during the window, which ended."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.open = False
        self.live: dict[int, ProcessRecord] = {}
        self.ended: list[ProcessRecord] = []
        self.ended_total = self.started_total = self.stamp = self.x = 0

    def begin(self, x: int) -> None:
        self.x = x
        self.stamp += 1

    def seen(self, seen: Seen) -> None:
        record = self.live.get(seen[0])
        if record is not None and record.started != seen[1]:
            self._end(record)  # the pid was reused by a new process
            record = None
        if record is None:
            born = self.stamp > 1 and seen[0] != self.root
            record = self.live[seen[0]] = ProcessRecord(seen, self.x, born, seen[0] == self.root)
            self.started_total += born
        record.add(seen, self.x, self.stamp)

    def end(self) -> None:
        """After a sample: the processes it did not find have ended."""
        for record in [r for r in self.live.values() if r.stamp != self.stamp]:
            self._end(record)

    def _end(self, record: ProcessRecord) -> None:
        del self.live[record.pid]
        record.ended = True
        self.ended_total += 1
        self.ended.append(record)
        if len(self.ended) > TABLE_ROWS:
            self.ended.remove(min(self.ended, key=lambda r: max(r.growth(1), r.growth(2))))

    def table(self, probe: str) -> dict[str, Any]:
        """One probe's evidence: a row per process, most growth first; for ``children``, the
        processes started during the window, those still alive first."""
        column = FIGURE_COLUMN[probe]
        records = [r for r in (*self.live.values(), *self.ended) if column == 2 or not r.root]
        if column == 0:
            records = sorted((r for r in records if r.born), key=lambda r: (r.ended, r.first[0]))
        else:
            records.sort(key=lambda r: r.growth(column), reverse=True)
        names, own = _multiprocessing_names(), _command(self.root)
        rows = []
        for r in records[:TABLE_ROWS]:
            command = "" if r.ended else _command(r.pid)
            rows.append({
                "pid": r.pid, "name": names.get(r.pid, r.name), "command": command,
                # forked without exec: its command line is the test process's own
                "forked": bool(command) and command == own and not r.root,
                "first": r.first[column] if column else None,
                "last": r.last[column] if column else None,
                "first_iteration": r.first[0], "last_iteration": r.last[0],
                "slope": r.slope(column) if column else None,
                "started_in_window": r.born, "ended": r.ended, "root": r.root,
            })
        return {"figure": ("count", "uss", "pss")[column], "rows": rows,
                "not_shown": len(records) - len(rows),
                "alive": sum(not r.root for r in self.live.values()),
                "started": self.started_total, "ended": self.ended_total}


def _command(pid: int) -> str:
    """The command line of a process ("" once it has gone). A child forked without exec
    has its parent's."""
    raw = read_proc(f"{PROC}/{pid}/cmdline")
    return raw.replace(b"\0", b" ").decode(errors="replace").strip() if raw else ""


def _multiprocessing_names() -> dict[int, str]:
    """The names multiprocessing gave this process's children (``ForkPoolWorker-3``), read
    without reaping any (``active_children()`` would join the finished ones)."""
    import multiprocessing.process

    names: dict[int, str] = {}
    for child in list(getattr(multiprocessing.process, "_children", ())):
        pid = getattr(getattr(child, "_popen", None), "pid", None)
        if isinstance(pid, int):
            names[pid] = str(getattr(child, "name", ""))
    return names


class ProcessTree:
    """The test's process and its live descendants, read once per sample for every probe
    of this module in the run."""

    _shared: ClassVar[ProcessTree | None] = None

    def __init__(self) -> None:
        self.root = os.getpid()
        self.per_thread = children_files_exist()
        self.users = self.memory_users = self.root_users = 0
        self.count = self.uss = self.pss = self.root_pss = self.iteration = 0
        self.log = ProcessLog(self.root)

    @classmethod
    def acquire(cls, memory: bool, root: bool) -> ProcessTree:
        """``memory``: the user needs each descendant's memory; ``root``: the test's own
        process's PSS too."""
        tree = cls._shared
        if tree is None or tree.root != os.getpid():
            tree = cls._shared = cls()
        tree.users += 1
        tree.memory_users += memory
        tree.root_users += root
        return tree

    def release(self, memory: bool, root: bool) -> None:
        self.users -= 1
        self.memory_users -= memory
        self.root_users -= root
        if self.users <= 0 and ProcessTree._shared is self:
            ProcessTree._shared = None

    def refresh(self) -> None:
        """One sample: list the descendants, read each one's state (and memory, where a
        budget needs it) and total the live set."""
        memory = self.memory_users > 0
        log = self.log if self.log.open else None
        if log is not None:
            log.begin(self.iteration)
        count = uss = pss = 0
        for pid in descendants(self.root, self.per_thread):
            seen = self._read_process(pid, memory)
            if seen is None:
                continue  # gone between the listing and the read, or exited
            count += 1
            uss += seen[3]
            pss += seen[4]
            if log is not None:
                log.seen(seen)
        self.count, self.uss, self.pss = count, uss, pss
        if self.root_users:
            raw = read_proc(f"{PROC}/{self.root}/smaps_rollup")
            self.root_pss = parse_rollup(raw)[1] if raw else 0
            if log is not None:
                log.seen((self.root, 0, b"", 0, self.root_pss))
        if log is not None:
            log.end()

    @staticmethod
    def _read_process(pid: int, memory: bool) -> Seen | None:
        raw = read_proc(f"{PROC}/{pid}/stat")
        if raw is None:
            return None
        state, name, _, started = parse_stat(raw)
        if state in EXITED_STATES:
            return None
        if not memory:
            return pid, started, name, 0, 0
        try:
            rollup = read_proc(f"{PROC}/{pid}/smaps_rollup")
        except PermissionError:
            return pid, started, name, 0, 0  # it changed its user: counted, memory unread
        if rollup is None:
            return None
        uss, pss = parse_rollup(rollup)
        return pid, started, name, uss, pss


class ProcessTreeProbe(Probe):
    """The three probes' common part: they share one :class:`ProcessTree` per run."""

    #: Whether the probe needs each descendant's memory, and the test's own process's PSS.
    memory = False
    root = False

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self.tree: ProcessTree | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.memory)

    def start(self) -> None:
        self.tree = ProcessTree.acquire(self.memory, self.root)

    def before_window(self) -> None:
        assert self.tree is not None
        self.tree.log.open = True

    def note_iteration(self, iteration: int) -> None:
        assert self.tree is not None
        self.tree.iteration = iteration

    def sync(self) -> None:
        assert self.tree is not None
        self.tree.refresh()

    def evidence(self) -> dict[str, Any] | None:
        if self.tree is None:
            return None
        return {"processes": {self.name: self.tree.log.table(self.name)}}

    def stop(self) -> None:
        if self.tree is not None:
            self.tree.release(self.memory, self.root)
            self.tree = None


class ChildrenProbe(ProcessTreeProbe):
    """Live descendant processes (children, their children, ...): a process leak is judged
    like a thread leak."""

    name = "children"

    def read(self) -> float:
        assert self.tree is not None
        return float(self.tree.count)


class ChildrenUssProbe(ProcessTreeProbe):
    """USS summed over the live descendants: what they hold that no other process maps. A
    worker that grows shows here; pages it still shares with the parent do not."""

    name = "children_uss"
    memory = True

    def read(self) -> float:
        assert self.tree is not None
        return float(self.tree.uss)


class TreePssProbe(ProcessTreeProbe):
    """PSS of the test's process plus its live descendants: each shared page split among the
    processes that map it, so copy-on-write pages are not counted twice. Anonymous and shared
    memory only, where the kernel splits the PSS (see :func:`procfs.parse_rollup`)."""

    name = "tree_pss"
    memory = True
    root = True

    def before_window(self) -> None:
        from pytest_membudget.probes.rss import release_free_memory

        release_free_memory()  # the test's own process is part of the tree (see rss)
        super().before_window()

    def read(self) -> float:
        assert self.tree is not None
        return float(self.tree.root_pss + self.tree.pss)


PROBE_CLASSES: dict[str, type[Probe]] = {
    "children": ChildrenProbe, "children_uss": ChildrenUssProbe, "tree_pss": TreePssProbe,
}
