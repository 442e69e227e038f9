"""The CUDA allocator at the device's peak: the blocks live at the highest point of the
window's allocations, from the allocator's trace (``_record_memory_history(enabled="all")``),
and what reserved memory was made of at its peak (``memory_stats``).

Pure: works on the dicts torch returns. The trace lists each allocation (``alloc``) and each
free (``free_requested``, then ``free_completed`` once the block is back in the pool) with its
address and size, as torch's memory_viz replays it. Replayed here, the bytes allocated by the
window's own events rise and fall; the blocks live where they were highest are the peak's.
Blocks allocated before the recording started are not in the trace (their frees are skipped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from pytest_membudget.probes.cuda.snapshot import BlockRow, grouped

ALLOC = "alloc"
#: The event that hands a block back: torch books the allocated bytes down then.
FREED = "free_completed"
#: Largest block of the small pool (torch's kSmallSize).
SMALL_LIMIT = 1024 * 1024


class PeakBlocks(TypedDict):
    """The blocks live at the peak of the window's allocations (grouped as the window's
    growth is), the peak's bytes, and how many events the trace held."""

    peak: int
    events: int
    blocks: list[BlockRow]


class ReservedAtPeak(TypedDict):
    """What the allocator's reserve was made of, each figure at its own peak, in bytes; and
    the allocations that had to free cached blocks first."""

    reserved: float
    allocated: float
    free_in_split_blocks: float
    free_in_whole_blocks: float
    retries: float


def replay(trace: Sequence[Mapping[str, Any]]) -> tuple[int, list[Mapping[str, Any]]]:
    """(the highest bytes the trace's own allocations held at once, the alloc events live
    then). Two passes: the index of the highest total, then the live set there."""
    live: dict[Any, int] = {}
    total = best = 0
    best_at = -1
    for index, event in enumerate(trace):
        action = event.get("action")
        if action == ALLOC:
            size = int(event.get("size", 0))
            live[event.get("addr")] = size
            total += size
            if total > best:
                best, best_at = total, index
        elif action == FREED:
            total -= live.pop(event.get("addr"), 0)
    held: dict[Any, Mapping[str, Any]] = {}
    for event in trace[: best_at + 1]:
        if event.get("action") == ALLOC:
            held[event.get("addr")] = event
        elif event.get("action") == FREED:
            held.pop(event.get("addr"), None)
    return best, list(held.values())


def peak_blocks(snapshot: Mapping[str, Any], device: int = 0,
                top: int = 10) -> PeakBlocks:
    """The blocks live at the peak of the device's trace, grouped as the window's growth is
    (by the line that allocated them, the user's line beneath a library's, and their pool),
    largest first; with the peak's bytes and how many events the trace held."""
    traces = snapshot.get("device_traces") or []
    trace = traces[device] if device < len(traces) else []
    best, held = replay(trace)
    # An event names no segment: its pool is told by its size, as the allocator does.
    pairs = ((event, {"segment_type": "small" if int(event.get("size", 0)) <= SMALL_LIMIT
                      else "large", "stream": event.get("stream")}) for event in held)
    return {"peak": best, "events": len(trace), "blocks": grouped(pairs, top)}


def reserved_at_peak(stats: Mapping[str, Any]) -> ReservedAtPeak:
    """What the allocator's reserve was made of, each figure at its own peak since the
    peaks were reset: allocated, free inside split blocks (fragmentation: a block cut for a
    smaller request, its rest cached and free), and the rest of the reserve, free in whole
    blocks; and the retries, allocations that had to free cached blocks first."""
    reserved = float(stats.get("reserved_bytes.all.peak", 0))
    allocated = float(stats.get("allocated_bytes.all.peak", 0))
    split = float(stats.get("inactive_split_bytes.all.peak", 0))
    return {"reserved": reserved, "allocated": allocated, "free_in_split_blocks": split,
            "free_in_whole_blocks": max(reserved - allocated - split, 0.0),
            "retries": float(stats.get("num_alloc_retries", 0))}
