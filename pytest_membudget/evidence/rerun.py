"""Evidence on failure: the traced rerun. A few more iterations of the workload after a failing
window (a generator the measuring loop delegates to), with the heap traced and the objects,
threads and descriptors counted before and after, so a passing test pays nothing for it.

What it reports comes from its neighbours: the lines that grew (sites), the types that
multiplied and what else was left alive (census), the tasks left pending (tasks).
"""

from __future__ import annotations

import gc
import math
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.caches import fill_rates, still_filling
from pytest_membudget.evidence.census import (
    Atoms,
    fd_targets,
    own_objects,
    thread_target,
    type_counts,
    type_name,
)
from pytest_membudget.evidence.native import native_stacks
from pytest_membudget.evidence.native import wanted as native_wanted
from pytest_membudget.evidence.paths import retaining_paths
from pytest_membudget.evidence.records import (
    FEW,
    CacheInfo,
    GrowthEvidence,
    PathEntry,
    Site,
    ThreadLeft,
)
from pytest_membudget.evidence.sites import callers, growing_sites
from pytest_membudget.evidence.steps import LEAST_CALLS, Deadline
from pytest_membudget.evidence.steps import iterations as rerun_steps
from pytest_membudget.evidence.tasks import TaskWatch
from pytest_membudget.frames import STACK_FRAMES, is_library, is_user_frame, source_line
from pytest_membudget.interpreter import (
    collect_quietly,
    gc_facts,
    refreeze_own,
    session_froze,
)
from pytest_membudget.probes.records import TOP
from pytest_membudget.vocabulary import LeftBehind, ProbeKind

#: Growth after which a leak's lines stand plainly above the rerun's noise: the rerun needs
#: no more iterations than it takes the failing probes to grow this much.
PLAIN_GROWTH = {ProbeKind.BYTES: 256 * 1024.0, ProbeKind.COUNT: 16.0}


def evidence_iterations(measured: int, slopes: dict[str, float] | None = None) -> int:
    """Most iterations of the evidence rerun: a quarter of the window, 8 to 200, and no more
    than the failing probes (``slopes``: probe -> growth per iteration) need to grow plainly."""
    most = max(8, min(200, measured // 4))
    needed = [math.ceil(PLAIN_GROWTH[PROBES[name].kind] / slope)
              for name, slope in (slopes or {}).items()
              if slope > 0 and PROBES[name].kind in PLAIN_GROWTH]
    return max(8, min(most, max(needed))) if needed else most


@dataclass(slots=True)
class _Before:
    """What was alive before the rerun, and what the traced rerun found."""

    started: float
    memory: bool
    tasks: TaskWatch | None
    types: Counter[str]
    atoms: Atoms = field(default_factory=Atoms)
    #: The objects the collector tracks that the rerun made (those gc.freeze() left in its
    #: lists); None where this Python's freeze does not set the old ones apart.
    fresh: list[object] | None = None
    paths: list[PathEntry] = field(default_factory=list)
    #: The bounded caches the paths run through, and the description each path shows.
    caches: list[tuple[object, CacheInfo]] = field(default_factory=list)
    threads: set[int | None] = field(default_factory=set)
    fds: set[str] = field(default_factory=set)
    sites: list[Site] = field(default_factory=list)
    #: Net growth of every traced allocation in the rerun, in bytes (None untraced).
    traced: int | None = None
    done: int = 0
    extra: int = 0
    #: The evidence's one deadline, made here, before the objects are counted and traced:
    #: a first call of its code inside the traced rerun can leave a block behind (3.13).
    deadline: Deadline = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = Deadline(self.started)

    def own(self) -> list[object]:
        """The evidence's own records (census.own_objects): this state and its tables, the
        census's bookkeeping, and the records of the growing lines (the list, each site's
        dict, and the caller found for a library line: a ``(file, line)`` tuple the
        collector still tracks, once read as a growing ``tuple`` held by the site)."""
        records: list[object] = [self, self.types, self.threads, self.fds, *self.atoms.own(),
                                 self.fresh, self.paths, self.caches, self.traced, self.sites,
                                 self.deadline]
        for site in self.sites:
            records.append(site)
            if site.get("via") is not None:
                records.append(site["via"])
        return own_objects(records)


def collect(
    failing: set[str], iterations: int, start_iteration: int,
) -> Generator[int, None, GrowthEvidence]:
    """Run up to ``iterations`` more iterations (within the evidence's deadline) and report
    what grew during them and what keeps it alive; then, when a growing line is in a library,
    a few more with deeper tracebacks to find the user's line that called it, and when the
    growth is native, a few more under memray for its native stacks."""
    started = time.perf_counter()
    memory = any(PROBES[name].traced_evidence for name in failing)
    # Checked (on first use) before the objects are counted: the check's objects are not growth.
    freezes = gc_facts().freezes
    # Made before the objects are counted, so that its own few objects never read as growth.
    tasks = TaskWatch(is_user_frame) if any(
        PROBES[name].evidence_list is LeftBehind.TASKS for name in failing) else None
    # Counting objects allocates; it runs outside tracing so that it is fast and unseen.
    collect_quietly()
    atoms = Atoms()
    before = type_counts(exclude=own_objects(()), atoms=atoms) if memory else Counter()
    state = _Before(started, memory, tasks, before, atoms)
    # Everything alive now is out of the collector's reach until the counting after the
    # rerun: the collection after it then walks only what the rerun made.
    # Not over a freeze the session made itself: unfreezing would undo it.
    own_freeze = freezes and not session_froze()
    if own_freeze:
        gc.freeze()
    own_tracer = memory and not tracemalloc.is_tracing()
    if own_tracer:
        tracemalloc.start()  # one frame, as the heap probe's: the innermost names the line
    try:
        yield from _traced(state, iterations, start_iteration, own_tracer)
        if memory:
            state.fresh = _made_by_rerun(state)
    finally:
        if own_tracer:
            tracemalloc.stop()
        if own_freeze:
            gc.unfreeze()
            refreeze_own()  # the counts after the rerun list what the one before did
        if tasks is not None:
            tasks.stop()
    # Counted here, before _report's comprehensions make cells for its locals. The evidence's
    # own bookkeeping must not read as growth. (The collection before the last snapshot
    # already ran; what was made since is freed by reference counting.)
    own = state.own()
    grown = type_counts(exclude=own, atoms=state.atoms, fresh=state.fresh) if memory else (
        Counter())
    del own  # it holds the rerun's objects, which the retaining paths must not meet
    grown.subtract(state.types)
    if memory:
        state.paths = _retaining(state, grown)
    result = _report(state, grown)
    if state.caches:
        result["bounded"] = yield from _cache_fill(state, start_iteration)
    if memory and native_wanted(failing, state.sites):
        result["native"] = yield from native_stacks(
            start_iteration + state.done + state.extra, iterations,
            state.deadline.seconds_for("native"))
    # Everything the evidence took: reruns, collections, snapshots, counts, native stacks.
    result["seconds"] = round(time.perf_counter() - state.started, 6)
    return result


def _made_by_rerun(state: _Before) -> list[object] | None:
    """What the collector tracks now, while the objects alive before the rerun are frozen:
    the rerun's own, less the evidence's bookkeeping. None where frozen objects still show
    (the sentinel: ``state``, made before the freeze)."""
    left_out = {id(record) for record in state.own()}
    left_out.add(id(left_out))
    found = gc.get_objects()
    fresh = []
    # Plain loops: a comprehension's closure would make a cell that reads as the rerun's.
    for obj in found:
        if obj is state:
            return None
        if id(obj) not in left_out:
            fresh.append(obj)
    return fresh


def _no_fresh_reason() -> str:
    if not gc_facts().freezes:
        return ("gc.freeze() does not set the old objects apart on this Python, so the new "
                "ones cannot be told")
    return ("objects the session froze itself (gc.freeze() before this test) were left "
            "frozen, so the new ones cannot be told")


def _retaining(state: _Before, grown: Counter[str]) -> list[PathEntry]:
    """Retaining paths for the types that grew most, within what is left of the evidence's
    time (at least its ``paths_least`` share)."""
    top = [(name, count) for name, count in grown.most_common(FEW) if count > 0]
    if not top:
        return []
    if state.fresh is None:
        return [{"type": name, "count": count, "reason": _no_fresh_reason()}
                for name, count in top]
    new: dict[str, list[object]] = {name: [] for name, _ in top}
    names: dict[type, str] = {}
    for obj in (*state.fresh, *state.atoms.new):
        cls = type(obj)
        name = names.get(cls)
        if name is None:
            name = names[cls] = type_name(cls)
        if name in new:
            new[name].append(obj)
    state.fresh, state.atoms.new = [], []
    untracked, state.atoms.dicts = state.atoms.dicts, []
    deadline = max(state.deadline.end,
                   time.perf_counter() + state.deadline.seconds_for("paths_least"))
    try:
        return retaining_paths(top, new, deadline, ignored=(*state.own(), names, top),
                               caches=state.caches, untracked=untracked)
    finally:
        new.clear()
        untracked.clear()


def _cache_fill(state: _Before, start: int) -> Generator[int, None, list[CacheInfo]]:
    """How full each bounded cache on the paths is and how fast it fills, read over a few
    more iterations; then the caches that hold all the growth the paths found (empty when
    some of it is held elsewhere)."""
    caches = {id(obj): obj for obj, _ in state.caches}
    rates, done = yield from fill_rates(caches, start + state.done + state.extra,
                                        state.deadline.seconds_for("fill"))
    state.extra += done
    for obj, description in state.caches:
        rate = rates.get(id(obj))
        if rate is not None:
            description["currsize"], description["maxsize"] = rate["currsize"], rate["maxsize"]
            description["per_call"] = rate["per_call"]
            description["calls_to_full"] = rate["calls_to_full"]
    state.caches.clear()
    del caches
    return still_filling(state.paths, state.done)


def _traced(state: _Before, iterations: int, start_iteration: int,
            own_tracer: bool) -> Generator[int, None, None]:
    """The rerun under tracing, then the callers of the library lines that grew."""
    if state.tasks is not None:
        state.tasks.track()
    # Before the snapshot: what listing them leaves behind (Python 3.10 keeps a frame per
    # function on its first call, os.path.join's helpers among them) is not the rerun's.
    state.threads = {t.ident for t in threading.enumerate()}
    state.fds = set(fd_targets())
    before = tracemalloc.take_snapshot() if state.memory else None
    now = time.perf_counter()
    spent = now - state.started  # paid once more after the rerun
    deadline = state.deadline
    left = deadline.end - now - spent - (
        deadline.seconds_for("callers") + deadline.seconds_for("paths") if state.memory
        else 0.0)
    rerun = min(deadline.seconds_for("rerun"), max(deadline.seconds_for("rerun_least"), left))
    state.done = yield from rerun_steps(start_iteration, iterations, LEAST_CALLS, now + rerun)
    collect_quietly()
    if before is not None:
        state.sites, state.traced = growing_sites(before, tracemalloc.take_snapshot(),
                                                  state.done)
    del before
    wanted = {(s["file"], s["line"]) for s in state.sites
              if s["via"] is None and is_library(s["file"])}
    if wanted and own_tracer:
        tracemalloc.stop()
        tracemalloc.start(STACK_FRAMES)
        found, state.extra = yield from callers(wanted, start_iteration + state.done,
                                                deadline.seconds_for("callers"))
        for site in state.sites:
            site["via"] = site["via"] or found.get((site["file"], site["line"]))


def _report(state: _Before, grown: Counter[str]) -> GrowthEvidence:
    done, extra, sites = state.done, state.extra, state.sites
    result: GrowthEvidence = {"iterations": done}
    if state.memory:
        for site in sites:
            site["code"] = source_line(site["file"], site["line"])
            via = site.pop("via", None)
            if via:
                site["via_file"], site["via_line"] = via
                site["via_code"] = source_line(*via)
        result["sites"] = sites
        result["heap_growth"] = sum(s["bytes"] for s in sites)
        if state.traced is not None and done:
            result["traced_per_iter"] = round(state.traced / done, 1)
        result["paths"] = state.paths
        result["types"] = [
            {"type": name, "count": count, "per_iter": round(count / (done + extra), 2)}
            for name, count in grown.most_common(TOP) if count > 0
        ]
        if state.atoms.partial:
            result["atoms_listed"] = {"in": "new containers",
                                      "whole_seconds": round(state.atoms.seconds, 3)}
    threads: list[ThreadLeft] = [
        {"name": t.name, "daemon": t.daemon, "target": thread_target(t)}
        for t in threading.enumerate() if t.ident not in state.threads
    ]
    result["threads"] = threads[:TOP]
    result["fds"] = sorted(set(fd_targets()) - state.fds)[:TOP]
    if state.tasks is not None:
        result["tasks"] = state.tasks.new_tasks(done + extra)
    return result
