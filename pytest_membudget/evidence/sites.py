"""Which lines allocated the growth: tracemalloc's traces before and after the evidence rerun,
grouped by the innermost frame, with the user's own line beneath a library's."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Generator
from typing import Any

from pytest_membudget.evidence.frames import first_user, is_library, is_own

#: Frames kept per allocation while the rerun looks for the lines that grew: the innermost
#: frame names the line, and tracing costs about three times less than with 16 frames.
TRACE_FRAMES = 1
#: Frames kept while looking for the user's own line beneath a library's (see callers()).
CALLER_FRAMES = 16
#: Most seconds, and iterations, of the second rerun that finds the callers of library lines;
#: it stops as soon as every such line has allocated again.
CALLER_SECONDS = 0.25
CALLER_ITERATIONS = 50
TOP = 10


def _filename(frame: tracemalloc.Frame) -> str:
    return frame.filename


def growing_sites(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, iterations: int
) -> tuple[list[dict[str, Any]], int]:
    """Net growth per allocation site: the innermost frame of each allocation, and the
    innermost frame of the user's own code beneath it when the site is in a library; and the
    net growth of every site together (the top sites' sum leaves out the many small ones,
    and the sites that shrank). Allocations made by pytest or this plugin are left out."""

    def by_site(snapshot: tracemalloc.Snapshot) -> dict[tuple[str, int], list[Any]]:
        sites: dict[tuple[str, int], list[Any]] = {}
        for trace in snapshot.traces:
            frames = list(trace.traceback)[::-1]  # innermost first
            if not frames or is_own(frames[0].filename):
                continue
            key = (frames[0].filename, frames[0].lineno)
            entry = sites.get(key)
            if entry is None:
                via = None
                if is_library(frames[0].filename):
                    user = first_user(frames, _filename)
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
    net = sum(e[0] for e in end.values()) - sum(e[0] for e in start.values())
    return grown[:TOP], net


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
                user = first_user(frames, _filename)
                if user is not None:
                    found[key] = (user.filename, user.lineno)
        if time.perf_counter() > deadline:
            break
    return found, done
