"""What one measured call's figures say (pure): the rise, what it was made of at the highest
reading, how much of the declared kind the call still held when it returned, and whether a
shape's declaration holds. ``ground_truth.py`` measures; this reads its measurements.

A call's figures are two dicts: ``plain`` (the readings of an untraced call: ``start``,
``peak``, ``after``, the kernel's high-water mark ``hwm``, the sampler's highest RSS) and
``traced`` (tracemalloc's peak and what it still traced after the same call, run in another
interpreter, with tracing started just before the call).
"""

from __future__ import annotations

import statistics
from typing import Any

from protocol import MiB, Shape

KINDS = ("python", "native", "allocator_free", "file", "stacks", "other")
#: A line's (and a call's) memory is retained when at least this share of its peak is
#: still held when the call returns, transient at most TRANSIENT_SHARE, partly retained
#: between: the plugin's own thresholds for the states it names.
RETAINED_SHARE, TRANSIENT_SHARE = 0.9, 0.1
#: A failing shape's call must rise at least this much, or it has no peak to judge.
LEAST_RISE = 16 * MiB


def state_of(share: float) -> str:
    if share >= RETAINED_SHARE:
        return "retained"
    return "transient" if share <= TRANSIENT_SHARE else "partly retained"


def _rise(at: dict[str, Any], start: dict[str, Any], key: str) -> float:
    return float(at.get(key, start.get(key, 0)) - start.get(key, 0))


def kinds_at_peak(plain: dict[str, Any], traced: dict[str, Any]) -> dict[str, float]:
    """The rise at the highest reading, by kind.

    Python objects: tracemalloc's traced peak (from a separate run, as tracing changes the
    untraced run's memory), but never more than the bytes pymalloc and glibc had in use at
    the highest reading (the traced peak can come earlier than RSS's: a heap freed and then
    fragmented) nor than the anonymous rise. Native: glibc's bytes in use that the traced
    bytes cannot account for, counted low (tracemalloc counts requested sizes, pymalloc
    rounds blocks up to 16 bytes, so which traced bytes sit in glibc is not known: all of
    them may), and the bytes a shape's own allocator says it has handed out (pyarrow's
    pool), as far as the anonymous rise leaves room. Stacks: resident pages of the mappings
    that hold the threads' stack pointers. The allocators' free memory: glibc's free chunks
    and the top of its main heap, then pymalloc's free blocks and pools, each only as far
    as the anonymous rise leaves room (a new thread's arena and a new pymalloc arena are
    free but mostly untouched). What is left of the anonymous rise (allocator overhead,
    Python's per-thread frame chunks, other mappings made outside malloc, memory an
    allocator of its own keeps free) is other."""
    start, peak = plain["start"], plain["peak"]
    anon = _rise(peak, start, "anon")
    stacks = max(_rise(peak, start, "stacks_resident"), 0.0)
    small = max(_rise(peak, start, "pymalloc_used"), 0.0)
    malloc_used = max(_rise(peak, start, "malloc_used"), 0.0)
    python = max(min(float(traced["traced_peak"]), small + malloc_used, anon - stacks), 0.0)
    # Bytes malloc'd but not yet written are in use to glibc and not resident: not counted.
    native = max(min(malloc_used - python, anon - stacks - python), 0.0)
    # An allocator's own high-water mark over the call counts, as VmHWM does for RSS: the
    # sampler can read after a result was replaced (the old one given back to the pool, its
    # pages kept), where the pool's figures no longer show both alive.
    in_use = max(_rise(peak, start, "own_in_use"),
                 _rise(plain["after"], start, "own_pool_peak"))
    own = max(min(in_use, anon - stacks - python - native), 0.0)
    room = max(anon - python - native - own - stacks, 0.0)
    glibc_free = min(max(_rise(peak, start, "malloc_free_chunks")
                         + _rise(peak, start, "malloc_top_main"), 0.0), room)
    pymalloc_free = min(max(_rise(peak, start, "pymalloc_free"), 0.0), room - glibc_free)
    file = _rise(peak, start, "file") + _rise(peak, start, "shmem")
    return {"python": python, "native": native + own,
            "allocator_free": glibc_free + pymalloc_free, "file": max(file, 0.0),
            "stacks": stacks, "other": max(room - glibc_free - pymalloc_free, 0.0)}


def retained_share(kind: str | None, plain: dict[str, Any], traced: dict[str, Any]) -> float:
    """How much of the kind's peak the call still held when it returned (1 = all of it):
    for Python objects, tracemalloc's bytes still traced (allocated during the call and
    alive after it) over its traced peak; for native memory, glibc's and the shape's own
    allocator's bytes in use; for files, stacks and the rest, the resident figure's."""
    start, peak, after = plain["start"], plain["peak"], plain["after"]
    released = plain.get("released") or {}

    def share(held: float, highest: float) -> float:
        return held / highest if highest > 0 else 0.0

    def held(key: str) -> float:
        # What the result let go of, where it was measured (see ground_truth.release).
        return float(released[key]) if key in released else _rise(after, start, key)

    if kind == "python":
        return share(traced["traced_after"], traced["traced_peak"])
    if kind == "native":
        return share(held("malloc_used") + held("own_in_use"),
                     _rise(peak, start, "malloc_used") + _rise(peak, start, "own_in_use"))
    if kind == "file":
        return share(held("file"), _rise(peak, start, "file"))
    if kind == "stacks":
        return share(_rise(after, start, "threads"), _rise(peak, start, "threads"))
    return share(held("rss"), max(plain["hwm"], plain["sampled_rss"]) - start["rss"])


RISES = ("anon", "file", "malloc_used", "malloc_free", "malloc_free_chunks",
         "malloc_top_main", "malloc_top_arenas", "pymalloc_used", "pymalloc_free",
         "stacks_resident", "stacks_reserved", "vsize", "threads", "own_in_use")


def summarize(plain: dict[str, Any], traced: dict[str, Any],
              declared_kind: str | None) -> dict[str, Any]:
    """One measured call's figures, flat, in bytes."""
    start, peak, after = plain["start"], plain["peak"], plain["after"]
    # The kernel folds RSS into VmHWM at events such as an unmap, not continuously: pages
    # dropped otherwise (an exiting thread's stack, given back with madvise) can leave it
    # below what the sampler read. The peak is the higher of the two.
    rise = max(plain["hwm"], plain["sampled_rss"]) - start["rss"]
    kinds = kinds_at_peak(plain, traced)
    # A rise under a MiB is no kind of memory in particular (a clean case).
    dominant = max(KINDS, key=lambda kind: kinds[kind]) if rise >= MiB / 2 else "-"
    share = retained_share(declared_kind or dominant, plain, traced)
    return {
        "rss_start": start["rss"], "rise": rise, "rss_peak": start["rss"] + rise,
        "hwm_rise": plain["hwm"] - start["rss"], "after_rise": after["rss"] - start["rss"],
        "sampler_rise": plain["sampled_rss"] - start["rss"], "peak_at": peak["at"],
        **{f"{key}_rise": _rise(peak, start, key) for key in RISES},
        **{f"{key}_after": _rise(after, start, key)
           for key in ("pymalloc_free", "malloc_free", "malloc_used", "threads",
                       "own_in_use", "file")},
        "own_pool_peak_rise": _rise(after, start, "own_pool_peak"),
        "traced_peak": traced["traced_peak"], "traced_after": traced["traced_after"],
        "kinds": kinds, "dominant": dominant, "retained_share": share,
        "state": state_of(share) if dominant != "-" else "-",
        "seconds": plain["seconds"], "traced_seconds": traced["traced_seconds"],
        "sampler_readings": plain["sampler_readings"],
        "sampler_discarded": plain["sampler_discarded"],
        "near_readings": plain["near_readings"],
        "readings": {"start": start, "peak": peak, "after": after, "hwm": plain["hwm"],
                     "peak_from": plain["peak_from"]},
    }


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the repeats' numbers (kinds too); the dominant kind and the state of each
    repeat."""
    merged: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, (int, float)):
            merged[key] = statistics.median(run[key] for run in runs)
    merged["kinds"] = {kind: statistics.median(run["kinds"][kind] for run in runs)
                       for kind in KINDS}
    merged["dominant_per_repeat"] = [run["dominant"] for run in runs]
    merged["state_per_repeat"] = [run["state"] for run in runs]
    return merged


def validate(declared: Shape, merged: dict[str, Any], call: str = "") -> list[str]:
    """What a call's figures contradict in the shape's declaration (empty when it holds):
    its kind must be the largest and its state hold in every repeat."""
    where = f"{call}: " if call else ""
    if declared.kind is None:
        if merged["rise"] > 8 * MiB:
            return [f"{where}the clean case rose {merged['rise'] / MiB:.1f} MiB"]
        return []
    problems = []
    if declared.fails and merged["rise"] < LEAST_RISE:
        problems.append(f"{where}rose only {merged['rise'] / MiB:.1f} MiB")
    wrong = [kind for kind in merged["dominant_per_repeat"] if kind != declared.kind]
    if wrong:
        problems.append(f"{where}declared {declared.kind}, the figures say {', '.join(wrong)}")
    states = [state for state in merged["state_per_repeat"] if state != declared.state]
    if states:
        problems.append(f"{where}declared {declared.state}, the figures say "
                        f"{', '.join(states)} (median {merged['retained_share']:.0%} of the "
                        f"{declared.kind} peak still held after the call)")
    return problems
