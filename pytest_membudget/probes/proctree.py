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
from typing import Any

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import (
    PROC,
    children_files_exist,
    descendants,
    parse_rollup,
    parse_stat,
    read_proc,
)
from pytest_membudget.probes.proclog import ProcessEvidence, ProcessLog, Seen
from pytest_membudget.probes.shared import SharedSource

#: States of a process that has exited: zombie (not reaped yet), dead.
EXITED_STATES = frozenset((b"Z", b"X", b"x"))


def unavailable_reason(memory: bool) -> str | None:
    """Why the process tree cannot be read here, or None."""
    if not sys.platform.startswith("linux") or not os.path.isdir(f"{PROC}/self/task"):
        return (f"it reads the process tree from /proc, which {sys.platform} does not have "
                "(Linux only)")
    if memory and not os.path.exists(f"{PROC}/self/smaps_rollup"):
        return ("it reads /proc/<pid>/smaps_rollup, which this kernel does not have "
                "(Linux 4.14 or later)")
    return None


class ProcessTree(SharedSource):
    """The test's process and its live descendants, read once per sample for every probe
    of this module in the run."""

    def __init__(self) -> None:
        super().__init__(None)
        self.root = os.getpid()
        self.per_thread = children_files_exist()
        self.memory_users = self.root_users = 0
        self.count = self.uss = self.pss = self.root_pss = self.iteration = 0
        self.log = ProcessLog(self.root)

    @classmethod
    def for_run(cls, memory: bool, root: bool) -> ProcessTree:
        """``memory``: the user needs each descendant's memory; ``root``: the test's own
        process's PSS too."""
        return cls.acquire(None, cls, memory_users=memory, root_users=root)

    def current(self) -> bool:
        return self.root == os.getpid()  # a forked child measures its own tree

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
    #: The figure of each process its evidence shows (one of proclog.FIGURES).
    figure = "count"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        self.tree: ProcessTree | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.memory)

    def start(self) -> None:
        self.tree = ProcessTree.for_run(self.memory, self.root)

    def before_window(self) -> None:
        assert self.tree is not None
        self.tree.log.open = True

    def note_iteration(self, iteration: int) -> None:
        assert self.tree is not None
        self.tree.iteration = iteration

    def sync(self) -> None:
        assert self.tree is not None
        self.tree.refresh()

    def evidence(self) -> ProcessEvidence | None:
        if self.tree is None:
            return None
        return {"processes": {self.name: self.tree.log.table(self.figure)}}

    def stop(self) -> None:
        if self.tree is not None:
            self.tree.release(memory_users=self.memory, root_users=self.root)
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
    figure = "uss"

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
    figure = "pss"

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
