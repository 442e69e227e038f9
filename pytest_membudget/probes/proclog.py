"""The processes a window saw: one record per process (first and last figures, a slope) and
the tables the evidence shows, in constant space however many workers come and go."""

from __future__ import annotations

from typing import TypedDict

from pytest_membudget.probes import procfs
from pytest_membudget.probes.records import TOP

#: (pid, start time, command name, USS, PSS): one process as one sample found it.
Seen = tuple[int, int, bytes, int, int]
#: The figures a table can show, by the column of a record they read: none (the processes are
#: counted), USS, PSS.
FIGURES = ("count", "uss", "pss")


class ProcessRow(TypedDict):
    """One process of a table: its figure at first and at last sight (None for the count),
    the iterations of those sightings, its slope per iteration, and what became of it."""

    pid: int
    name: str
    command: str
    #: Forked without exec: its command line is the test process's own.
    forked: bool
    first: int | None
    last: int | None
    first_iteration: int
    last_iteration: int
    slope: float | None
    started_in_window: bool
    ended: bool
    root: bool


class ProcessTable(TypedDict):
    """One probe's evidence: the figure it shows, a row per process (most growth first),
    the rows left out, and the processes alive, started and ended over the window."""

    figure: str
    rows: list[ProcessRow]
    not_shown: int
    alive: int
    started: int
    ended: int


class ProcessEvidence(TypedDict):
    """The process tree's evidence of a failing window: each failing probe's table."""

    processes: dict[str, ProcessTable]


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
        # Only the rows a table can show are kept (those that grew most), so that churning
        # workers cost constant memory.
        if len(self.ended) > TOP:
            self.ended.remove(min(self.ended, key=lambda r: max(r.growth(1), r.growth(2))))

    def table(self, figure: str) -> ProcessTable:
        """One probe's evidence, showing ``figure`` (one of FIGURES): a row per process, most
        growth first; for the count, the processes started during the window, those still
        alive first."""
        column = FIGURES.index(figure)
        records = [r for r in (*self.live.values(), *self.ended) if column == 2 or not r.root]
        if column == 0:
            records = sorted((r for r in records if r.born), key=lambda r: (r.ended, r.first[0]))
        else:
            records.sort(key=lambda r: r.growth(column), reverse=True)
        names, own = _multiprocessing_names(), _command(self.root)
        rows: list[ProcessRow] = []
        for r in records[:TOP]:
            command = "" if r.ended else _command(r.pid)
            rows.append({
                "pid": r.pid, "name": names.get(r.pid, r.name), "command": command,
                "forked": bool(command) and command == own and not r.root,
                "first": r.first[column] if column else None,
                "last": r.last[column] if column else None,
                "first_iteration": r.first[0], "last_iteration": r.last[0],
                "slope": r.slope(column) if column else None,
                "started_in_window": r.born, "ended": r.ended, "root": r.root,
            })
        return {"figure": figure, "rows": rows,
                "not_shown": len(records) - len(rows),
                "alive": sum(not r.root for r in self.live.values()),
                "started": self.started_total, "ended": self.ended_total}


def _command(pid: int) -> str:
    """The command line of a process ("" once it has gone). A child forked without exec
    has its parent's."""
    raw = procfs.read_proc(f"{procfs.PROC}/{pid}/cmdline")
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
