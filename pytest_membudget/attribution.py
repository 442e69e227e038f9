"""Evidence on failure: which lines allocated the growth, which object types multiplied, which
threads and descriptors were left open.

It runs a few more iterations of the workload after a failing window (it is a generator the
runner delegates to), so a passing test pays nothing for it.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Generator
from typing import Any

#: Frames kept per allocation during the evidence run, so that the line in user code can be
#: found beneath library and pytest frames.
EVIDENCE_FRAMES = 16
TOP = 10
_OWN = os.path.dirname(os.path.abspath(__file__))
_SKIP_PARTS = (
    _OWN + os.sep,
    os.sep + "_pytest" + os.sep,
    os.sep + "pluggy" + os.sep,
    os.sep + "tracemalloc.py",
    "<frozen ",
)
MEMORY_PROBES = ("rss", "uss", "heap", "gc_objects")


def evidence_iterations(measured: int, seconds_per_iteration: float) -> int:
    by_count = max(8, min(200, measured // 4))
    if seconds_per_iteration > 0:
        by_time = int(5.0 / seconds_per_iteration)
        return max(4, min(by_count, by_time))
    return by_count


def collect(
    failing: set[str], iterations: int, start_iteration: int
) -> Generator[int, None, dict[str, Any]]:
    """Run ``iterations`` more iterations and report what grew during them."""
    memory = bool(failing & set(MEMORY_PROBES)) or any(p.startswith("cuda") for p in failing)
    started_tracing = False
    if memory and not tracemalloc.is_tracing():
        tracemalloc.start(EVIDENCE_FRAMES)
        started_tracing = True
    try:
        gc.collect()
        types_before = type_counts() if memory else Counter()
        before = tracemalloc.take_snapshot() if memory else None
        threads_before = {t.ident for t in threading.enumerate()}
        fds_before = set(_fd_targets())
        begin = time.perf_counter()
        for i in range(iterations):
            yield start_iteration + i
        seconds = time.perf_counter() - begin
        gc.collect()
        result: dict[str, Any] = {"iterations": iterations, "seconds": round(seconds, 6)}
        if memory and before is not None:
            sites = growing_sites(before, tracemalloc.take_snapshot(), iterations)
            del before
            gc.collect()
            # Our own bookkeeping (the first count, the sites) must not read as growth.
            own = {id(types_before), id(sites), *(id(site) for site in sites)}
            grown = type_counts(exclude=own)
            grown.subtract(types_before)
            for site in sites:
                site["code"] = _source_line(site["file"], site["line"])
            result["sites"] = sites
            result["heap_growth"] = sum(s["bytes"] for s in sites)
            result["types"] = [
                {"type": name, "count": count, "per_iter": round(count / iterations, 2)}
                for name, count in grown.most_common(TOP) if count > 0
            ]
        result["threads"] = [
            {"name": t.name, "daemon": t.daemon, "target": _thread_target(t)}
            for t in threading.enumerate() if t.ident not in threads_before
        ][:TOP]
        result["fds"] = sorted(set(_fd_targets()) - fds_before)[:TOP]
        return result
    finally:
        if started_tracing:
            tracemalloc.stop()


def _is_own(filename: str) -> bool:
    return any(part in filename for part in _SKIP_PARTS)


def growing_sites(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, iterations: int
) -> list[dict[str, Any]]:
    """Net growth per allocation site, attributed to the innermost frame that is neither
    pytest's nor this plugin's."""

    def by_site(snapshot: tracemalloc.Snapshot) -> dict[tuple[str, int], list[int]]:
        sites: dict[tuple[str, int], list[int]] = {}
        for trace in snapshot.traces:
            frame = next((f for f in trace.traceback if not _is_own(f.filename)), None)
            if frame is None:
                continue
            entry = sites.setdefault((frame.filename, frame.lineno), [0, 0])
            entry[0] += trace.size
            entry[1] += 1
        return sites

    start, end = by_site(before), by_site(after)
    grown = []
    for site, (size, count) in end.items():
        old_size, old_count = start.get(site, (0, 0))
        if size > old_size:
            grown.append({
                "file": site[0], "line": site[1], "bytes": size - old_size,
                "blocks": count - old_count,
                "per_iter": round((size - old_size) / iterations, 1),
            })
    grown.sort(key=lambda s: s["bytes"], reverse=True)
    return grown[:TOP]


def type_counts(exclude: set[int] | frozenset[int] = frozenset()) -> Counter[str]:
    """Objects by type: those the collector tracks, and the untracked atoms (arrays, strings,
    bytes) they hold directly."""
    counts: Counter[str] = Counter()
    for obj in gc.get_objects():
        if id(obj) in exclude:
            continue
        counts[_type_name(type(obj))] += 1
        for ref in gc.get_referents(obj):
            if not gc.is_tracked(ref) and not isinstance(ref, (int, float, bool, type(None))):
                counts[_type_name(type(ref))] += 1
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
