"""Which lines allocated the growth: tracemalloc's traces before and after the evidence rerun,
grouped by the innermost frame, with the user's own line beneath a library's."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Generator, Iterable
from operator import itemgetter
from typing import Any

import numpy as np

from pytest_membudget.evidence.records import Site
from pytest_membudget.evidence.steps import MOST_CALLS
from pytest_membudget.frames import first_user, is_library, is_own
from pytest_membudget.probes.records import TOP


def _filename(frame: tracemalloc.Frame) -> str:
    return frame.filename


def _raw_traces(snapshot: tracemalloc.Snapshot) -> Iterable[tuple[int, tuple[Any, ...]]]:
    """(size, frames innermost first as (filename, line) pairs) of every trace. The
    snapshot's own tuples where this Python keeps them as tracemalloc.py always has (a
    snapshot of a traced test holds every allocation since it began: tens of thousands of
    traces, and a Trace, Traceback and Frame object made for each cost seconds); the public
    objects elsewhere."""
    raw = getattr(snapshot.traces, "_traces", None)
    if isinstance(raw, list) and (not raw or (isinstance(raw[0], tuple) and len(raw[0]) >= 3
                                              and isinstance(raw[0][2], tuple))):
        return ((trace[1], trace[2]) for trace in raw)
    return ((trace.size, tuple((f.filename, f.lineno) for f in reversed(trace.traceback)))
            for trace in snapshot.traces)


def _per_traceback(snapshot: tracemalloc.Snapshot) -> Iterable[tuple[int, int, tuple[Any, ...]]]:
    """(bytes, blocks, frames) per distinct traceback, in the order each first appears.
    tracemalloc hands one tuple object to every trace of a traceback, so the traces are
    summed by that tuple's identity in numpy: a snapshot of a hundred thousand traces is
    read in tens of milliseconds, where a loop over them took half a second."""
    raw = getattr(snapshot.traces, "_traces", None)
    if not (isinstance(raw, list) and raw and isinstance(raw[0], tuple) and len(raw[0]) >= 3
            and isinstance(raw[0][2], tuple)):
        return ((size, 1, frames) for size, frames in _raw_traces(snapshot))
    tracebacks = list(map(itemgetter(2), raw))
    sizes = np.fromiter(map(itemgetter(1), raw), dtype=np.int64, count=len(raw))
    ids = np.fromiter(map(id, tracebacks), dtype=np.int64, count=len(raw))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    totals = np.bincount(inverse, weights=sizes)
    counts = np.bincount(inverse)
    order = np.argsort(first, kind="stable")
    return ((int(totals[k]), int(counts[k]), tracebacks[first[k]]) for k in order)


def by_site(snapshot: tracemalloc.Snapshot,
             kinds: dict[str, tuple[bool, bool]]) -> dict[tuple[str, int], list[Any]]:
    """Bytes and blocks per innermost frame, with the user's frame beneath a library's;
    ``kinds`` caches each file's (own, library) test across snapshots."""
    sites: dict[tuple[str, int], list[Any]] = {}
    for size, blocks, frames in _per_traceback(snapshot):
        if not frames:
            continue
        key = frames[0]
        entry = sites.get(key)
        if entry is None:
            kind = kinds.get(key[0])
            if kind is None:
                kind = kinds[key[0]] = (is_own(key[0]), is_library(key[0]))
            if kind[0]:
                sites[key] = entry = [0, 0, None, True]
            else:
                via = None
                if kind[1]:
                    user = first_user(frames, _first)
                    via = (user[0], user[1]) if user is not None else None
                    # A library line that this plugin called (the peak watch's readings),
                    # where the frames tell: not the workload's.
                    if via is None and _called_by_own(frames):
                        sites[key] = entry = [0, 0, None, True]
                if entry is None:
                    entry = sites[key] = [0, 0, via, False]
        entry[0] += size
        entry[1] += blocks
    return {key: entry for key, entry in sites.items() if not entry[3]}


def _first(frame: tuple[str, int]) -> str:
    return frame[0]


def _called_by_own(frames: tuple[Any, ...]) -> bool:
    """Whether the first frame beneath the libraries (innermost first) is this plugin's."""
    return next((is_own(f[0]) for f in frames if not is_library(f[0])), False)


def growing_sites(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, iterations: int
) -> tuple[list[Site], int]:
    """Net growth per allocation site: the innermost frame of each allocation, and the
    innermost frame of the user's own code beneath it when the site is in a library; and the
    net growth of every site together (the top sites' sum leaves out the many small ones,
    and the sites that shrank). Allocations made by pytest or this plugin are left out."""
    kinds: dict[str, tuple[bool, bool]] = {}
    start, end = by_site(before, kinds), by_site(after, kinds)
    grown: list[Site] = []
    for site, (size, count, via, _) in end.items():
        old_size, old_count = start[site][:2] if site in start else (0, 0)
        if size > old_size:
            grown.append({
                "file": site[0], "line": site[1], "bytes": size - old_size,
                "blocks": count - old_count,
                "per_iter": round((size - old_size) / iterations, 1),
                "via": via,
            })
    grown.sort(key=lambda s: s["bytes"], reverse=True)
    net = sum(e[0] for e in end.values()) - sum(e[0] for e in start.values())
    return grown[:TOP], net


def callers(wanted: set[tuple[str, int]], start: int, seconds: float
            ) -> Generator[int, None, tuple[dict[tuple[str, int], Any], int]]:
    """For each library line in ``wanted``, the user's line beneath it, read from the deep
    tracebacks of the allocations made at those lines while the workload runs again, until
    each has allocated (at most MOST_CALLS calls, or ``seconds``)."""
    deadline = time.perf_counter() + seconds
    found: dict[tuple[str, int], Any] = {}
    done = 0
    while done < MOST_CALLS and len(found) < len(wanted):
        yield start + done
        done += 1
        # Few traces since tracing restarted: a snapshot costs about a millisecond.
        for trace in tracemalloc.take_snapshot().traces:
            traceback = trace.traceback
            if not traceback:
                continue
            innermost = traceback[-1]  # one frame read per trace; the whole only for a match
            key = (innermost.filename, innermost.lineno)
            if key in wanted and key not in found:
                user = first_user(reversed(traceback), _filename)
                if user is not None:
                    found[key] = (user.filename, user.lineno)
        if time.perf_counter() > deadline:
            break
    return found, done
