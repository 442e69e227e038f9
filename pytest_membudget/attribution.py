"""Evidence on failure: which lines allocated the growth, which object types multiplied, which
threads and descriptors were left open.

It runs a few more iterations of the workload after a failing window (it is a generator the
runner delegates to), so a passing test pays nothing for it.
"""

from __future__ import annotations

import gc
import math
import os
import sysconfig
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Generator, Sequence
from itertools import filterfalse
from typing import Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.taskevidence import TaskWatch
from pytest_membudget.vocabulary import ProbeKind

#: Frames kept per allocation while the rerun looks for the lines that grew: the innermost
#: frame names the line, and tracing costs about three times less than with 16 frames.
TRACE_FRAMES = 1
#: Frames kept while looking for the user's own line beneath a library's (see callers()).
CALLER_FRAMES = 16
TOP = 10
_OWN = os.path.dirname(os.path.abspath(__file__))
#: Frames of the test framework, never the line that leaked (shared with cudaevidence).
FRAMEWORK_PARTS = (os.sep + "_pytest" + os.sep, os.sep + "pluggy" + os.sep, "<frozen ")
_SKIP_PARTS = (_OWN + os.sep, os.sep + "tracemalloc.py", *FRAMEWORK_PARTS)
_STDLIB = sysconfig.get_paths()["stdlib"]


#: Seconds the whole evidence of a failure aims at (bench/evidence.py measures what it costs
#: and whether the top lines stay the same). Collecting garbage and counting objects cost the
#: same before and after the rerun, and grow with the heap; the traced rerun gets what they
#: leave, within RERUN_SECONDS. Tracing slows allocation-heavy loops several times over, so
#: the rerun stops on time as well as on count.
EVIDENCE_SECONDS = 0.8
RERUN_SECONDS = (0.1, 0.6)
#: Most seconds, and iterations, of the second rerun that finds the callers of library lines;
#: it stops as soon as every such line has allocated again.
CALLER_SECONDS = 0.25
CALLER_ITERATIONS = 50
#: Fewest iterations of the rerun: growth needs at least two to show.
EVIDENCE_MIN_ITERATIONS = 2
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


def collect(
    failing: set[str], iterations: int, start_iteration: int,
) -> Generator[int, None, dict[str, Any]]:
    """Run up to ``iterations`` more iterations (stopping after EVIDENCE_SECONDS) and report
    what grew during them; then, when a growing line is in a library, a few more with deeper
    tracebacks to find the user's line that called it."""
    started = time.perf_counter()
    memory = any(PROBES[name].traced_evidence for name in failing)
    # Made before the objects are counted, so that its own few objects never read as growth.
    tasks = TaskWatch(is_user_frame) if "asyncio_tasks" in failing else None
    # Counting objects allocates; it runs outside tracing so that it is fast and unseen.
    collect_quietly()
    types_before = type_counts() if memory else Counter()
    # Everything alive now is out of the collector's reach until the counting after the
    # rerun: the collection after it then walks only what the rerun made.
    gc.freeze()
    own_tracer = memory and not tracemalloc.is_tracing()
    if own_tracer:
        tracemalloc.start(TRACE_FRAMES)
    extra = 0
    try:
        if tasks is not None:
            tasks.track()
        before = tracemalloc.take_snapshot() if memory else None
        threads_before = {t.ident for t in threading.enumerate()}
        fds_before = set(_fd_targets())
        now = time.perf_counter()
        spent = now - started  # paid once more after the rerun
        shortest, longest = RERUN_SECONDS
        left = EVIDENCE_SECONDS - 2 * spent - (CALLER_SECONDS if memory else 0.0)
        done = yield from _rerun(start_iteration, iterations,
                                 now + min(longest, max(shortest, left)))
        collect_quietly()
        sites = growing_sites(before, tracemalloc.take_snapshot(), done) if before else []
        del before
        library = [s for s in sites if s["via"] is None and _is_library(s["file"])]
        wanted = {(s["file"], s["line"]) for s in library}
        if wanted and own_tracer:
            tracemalloc.stop()
            tracemalloc.start(CALLER_FRAMES)
            found, extra = yield from callers(wanted, start_iteration + done)
            for site in sites:
                site["via"] = site["via"] or found.get((site["file"], site["line"]))
            del found
        del library, wanted
    finally:
        if own_tracer:
            tracemalloc.stop()
        gc.unfreeze()
        if tasks is not None:
            tasks.stop()
    if memory:
        # The evidence's own bookkeeping must not read as growth. (The collection before the
        # last snapshot already ran; what was made since is freed by reference counting.)
        grown = type_counts(exclude=(types_before, sites, threads_before, fds_before, *sites))
        grown.subtract(types_before)
    result: dict[str, Any] = {"iterations": done}
    if memory:
        for site in sites:
            site["code"] = _source_line(site["file"], site["line"])
            via = site.pop("via", None)
            if via:
                site["via_file"], site["via_line"] = via
                site["via_code"] = _source_line(*via)
        result["sites"] = sites
        result["heap_growth"] = sum(s["bytes"] for s in sites)
        result["types"] = [
            {"type": name, "count": count, "per_iter": round(count / (done + extra), 2)}
            for name, count in grown.most_common(TOP) if count > 0
        ]
    result["threads"] = [
        {"name": t.name, "daemon": t.daemon, "target": _thread_target(t)}
        for t in threading.enumerate() if t.ident not in threads_before
    ][:TOP]
    result["fds"] = sorted(set(_fd_targets()) - fds_before)[:TOP]
    if tasks is not None:
        result["tasks"] = tasks.new_tasks(done + extra)
    # Everything the evidence took: reruns, collections, snapshots and counts.
    result["seconds"] = round(time.perf_counter() - started, 6)
    return result


def collect_quietly() -> None:
    """A collection of the evidence's own, with ``gc.callbacks`` set aside while it runs.
    Callbacks keep state in globals (hypothesis stores the time of each collection as a new
    float), so a collection between the two snapshots would name their lines as growth."""
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()
    try:
        gc.collect()
    finally:
        gc.callbacks[:] = callbacks


def _rerun(start: int, most: int, deadline: float) -> Generator[int, None, int]:
    """Up to ``most`` iterations, stopping at ``deadline`` once there are enough to compare."""
    done = 0
    while done < most:
        yield start + done
        done += 1
        if done >= EVIDENCE_MIN_ITERATIONS and time.perf_counter() > deadline:
            break
    return done


def callers(wanted: set[tuple[str, int]],
            start: int) -> Generator[int, None, tuple[dict[tuple[str, int], Any], int]]:
    """For each library line in ``wanted``, the user's line beneath it, read from the deep
    tracebacks of the allocations made at those lines while the workload runs again, until
    each has allocated (or CALLER_SECONDS pass)."""
    deadline = time.perf_counter() + CALLER_SECONDS
    found: dict[tuple[str, int], Any] = {}
    done = 0
    while done < CALLER_ITERATIONS and len(found) < len(wanted):
        yield start + done
        done += 1
        # Few traces since tracing restarted: a snapshot costs about a millisecond.
        for trace in tracemalloc.take_snapshot().traces:
            frames = list(trace.traceback)[::-1]  # innermost first
            key = (frames[0].filename, frames[0].lineno) if frames else None
            if key in wanted and key not in found:
                user = next((f for f in frames if not _is_library(f.filename)
                             and not _is_own(f.filename)), None)
                if user is not None:
                    found[key] = (user.filename, user.lineno)
        if time.perf_counter() > deadline:
            break
    return found, done


def _is_own(filename: str) -> bool:
    return any(part in filename for part in _SKIP_PARTS)


def is_user_frame(filename: str) -> bool:
    """A frame of the user's own code: neither a library's, nor pytest's, nor this plugin's."""
    return not _is_library(filename) and not _is_own(filename)


def growing_sites(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, iterations: int
) -> list[dict[str, Any]]:
    """Net growth per allocation site: the innermost frame of each allocation, and the
    innermost frame of the user's own code beneath it when the site is in a library.
    Allocations made by pytest or this plugin are left out."""

    def by_site(snapshot: tracemalloc.Snapshot) -> dict[tuple[str, int], list[Any]]:
        sites: dict[tuple[str, int], list[Any]] = {}
        for trace in snapshot.traces:
            frames = list(trace.traceback)[::-1]  # innermost first
            if not frames or _is_own(frames[0].filename):
                continue
            key = (frames[0].filename, frames[0].lineno)
            entry = sites.get(key)
            if entry is None:
                via = None
                if _is_library(frames[0].filename):
                    user = next((f for f in frames if not _is_library(f.filename)
                                 and not _is_own(f.filename)), None)
                    via = (user.filename, user.lineno) if user is not None else None
                entry = sites[key] = [0, 0, via]
            entry[0] += trace.size
            entry[1] += 1
        return sites

    start, end = by_site(before), by_site(after)
    grown = []
    for site, (size, count, via) in end.items():
        old_size, old_count, _ = start.get(site, (0, 0, None))
        if size > old_size:
            grown.append({
                "file": site[0], "line": site[1], "bytes": size - old_size,
                "blocks": count - old_count,
                "per_iter": round((size - old_size) / iterations, 1),
                "via": via,
            })
    grown.sort(key=lambda s: s["bytes"], reverse=True)
    return grown[:TOP]


def _is_library(filename: str) -> bool:
    return (
        "site-packages" in filename
        or "dist-packages" in filename
        or filename.startswith(_STDLIB)
    )


_NUMBERS = (int, float, bool, type(None))
# Counter asks whether its argument is a Mapping; the first time for each iterator type, every
# Mapping class in the process files that type in its ABC cache (a weak set: a set, weakrefs,
# their callbacks). Asked here, at import, rather than between the evidence's two counts.
Counter(map(type, ())).update(type(x) for x in range(0))
#: Objects whose atoms are names, docstrings and code, not data: a program's functions and
#: descriptors hold nearly half the atoms of a large heap (torch's), and leak none of them.
_CODE_TYPES = frozenset({
    type(lambda: None), type(len), type(str.join), type(str.__dict__["__add__"]),
    type(type.__dict__["__dict__"]), type(type.__dict__["__name__"]),
    type(gc),
})


def type_counts(exclude: Sequence[object] = ()) -> Counter[str]:
    """Objects by type: those the collector tracks, and the untracked atoms (arrays, strings,
    bytes; not numbers) they hold directly. ``exclude``: the caller's own objects, left out
    with what they hold. Counted in C where it can be (a heap of a million objects takes
    about 0.2 s), since evidence runs this twice per failure."""
    left_out = {id(obj) for obj in exclude}
    left_out.add(id(exclude))
    objects = [obj for obj in gc.get_objects() if id(obj) not in left_out]
    by_type = Counter(map(type, objects))
    holders = [obj for obj in objects if type(obj) not in _CODE_TYPES]
    atoms = {id(ref): ref for ref in filterfalse(gc.is_tracked, gc.get_referents(*holders))}
    by_type.update(map(type, atoms.values()))
    del objects, holders, atoms
    counts: Counter[str] = Counter()
    for cls, count in by_type.items():
        if cls not in _NUMBERS:
            counts[_type_name(cls)] += count
    return counts


def _type_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def _thread_target(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)
    if target is None:
        return type(thread).__qualname__
    return getattr(target, "__qualname__", repr(target))


def _fd_targets() -> list[str]:
    base = "/proc/self/fd"
    if not os.path.isdir(base):
        return []
    targets = []
    for name in os.listdir(base):
        try:
            targets.append(f"{name} -> {os.readlink(os.path.join(base, name))}")
        except OSError:
            continue
    return targets


def _source_line(filename: str, lineno: int) -> str:
    import linecache

    return linecache.getline(filename, lineno).strip()
