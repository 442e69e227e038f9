"""What a rise of resident memory is made of: the difference between two readings of
probes/memory.py (the start, and the moment of the highest RSS) split into kinds a person can
act on. Pure: numbers in, a plain dict out.

The kinds, each a rise in bytes:

- ``python``: Python objects and buffers (numpy arrays too) as tracemalloc traces them; when
  it is not tracing, pymalloc's blocks in use (objects of 512 bytes or less) and the large
  data objects known to be alive (numpy arrays, bytes and strings the run kept), and the
  other larger ones are in ``native``;
- ``native``: glibc's bytes in use that tracemalloc does not trace (C extensions, torch's CPU
  tensors, ctypes), less tracemalloc's own tables;
- ``allocator_free``: memory the allocators keep free: pymalloc's free blocks and pools, and
  the part of glibc's free bytes that the resident pages hold;
- ``file``: file-backed and shared pages (mapped files, np.load's mmap_mode);
- ``stacks``: the threads' stacks, resident (their reserve is reported beside);
- ``other``: anonymous memory none of the above accounts for (mmap by other code, another
  allocator's arenas).

Resident pages are the ground truth: glibc's free bytes include arena space never touched
(each thread's arena starts with one), so they count only up to what the anonymous rise
leaves; allocations never touched (malloc'd and not written) are counted in use by glibc and
not by the kernel, and are reported as ``untouched``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_membudget.evidence.peakrecords import Composition
from pytest_membudget.probes.reading import MemoryReading
from pytest_membudget.vocabulary import most_of

KINDS = ("python", "native", "allocator_free", "file", "stacks", "other")
#: A kind counts as what a rise is made of (a major kind) when it is at least this share of
#: the rise.
MAJOR_SHARE = 0.25
# vocabulary.most_of: a part of at least half a whole is most of it. A highest
# reading that rose less than most of the rise it stands for (the kernel's high-water mark;
# a rerun's, the run's) missed the peak: it sat between two readings, inside a call that
# held the interpreter (a quadratic concatenation's last copy beside its source), or the
# rerun reused memory the run freed and the allocators kept; such a reading names no kind.
# Where it missed, tracemalloc's own high-water mark over one more call of the same work
# (exact, even inside one C call) names the peak Python's when it holds most of the
# measured rise. The census copies traces from most of the rise on (measure/footprint.py);
# the machine's guard stops a run whose rise holds most of what the machine lost
# (measure/watch.py).


def _delta(peak: float, start: float) -> float:
    return peak - start if math.isfinite(peak) and math.isfinite(start) else 0.0


def traced_rise(start: MemoryReading, peak: MemoryReading) -> float | None:
    """tracemalloc's rise between the readings, where it traced both."""
    if math.isfinite(peak.traced) and math.isfinite(start.traced):
        return peak.traced - start.traced
    return None


@dataclass(frozen=True)
class Kinds:
    """A rise by kind (KINDS, each >= 0, adding up to the resident rise), and the memory in
    use beyond it: ``reused``, free memory the allocators kept from earlier work and the
    rise used again (no page came new); ``untouched``, allocated and not yet resident."""

    kinds: dict[str, float]
    reused: float = 0.0
    untouched: float = 0.0
    #: Of ``native``, the rise in use in the allocators libraries bring; of
    #: ``allocator_free``, what they held and keep free.
    pooled: float = 0.0
    pool_kept: float = 0.0


def rise_kinds(start: MemoryReading, peak: MemoryReading, traced: float | None = None,
               large: float = 0.0, least: float = 0.0, at_peak: bool = False,
               last_rise: bool = False) -> Kinds:
    """The rise from ``start`` to ``peak`` by kind. ``traced``: tracemalloc's rise at the
    peak, from a traced rerun of the same work where the readings were taken untraced
    (tracing changes what it measures: its own tables are as large as the objects of a heap
    of small ones); by default the readings' own. ``large``: the bytes of the large data
    objects known to be alive at the peak (numpy arrays, bytes and strings over 512 B that
    the run kept to its end), moved from the native heap to Python's as far as the Python
    share does not hold them already. ``least``: Python's share is at least this (what a
    traced call saw alive before its tracing was cut), as far as the native heap holds it.
    ``at_peak``: ``traced`` is of the highest RSS's moment (the traced rerun's), which the
    reading at ``peak`` may have missed (made after frees whose pages the allocators kept).
    ``last_rise``: ``traced`` is tracemalloc's peak over a call that rose no more after it
    (see :func:`_held_at`).

    The kinds add up to the resident rise: in-use memory (Python's, native) beyond what the
    new resident pages hold came from the allocators' free memory (``reused``) or is not
    resident yet (``untouched``), and is taken out of the native heap first."""
    if traced is None:
        traced = traced_rise(start, peak)
    tracer = _delta(peak.tracer, start.tracer)
    small = _delta(peak.pymalloc_used, start.pymalloc_used)
    malloc_rise = _delta(peak.malloc_used, start.malloc_used) - tracer
    stacks = max(_delta(peak.stacks_resident, start.stacks_resident), 0.0)
    file = _delta(peak.file, start.file) + _delta(peak.shmem, start.shmem)
    anon = _delta(peak.anon, start.anon) if math.isfinite(peak.anon) else (
        _delta(peak.rss, start.rss) - file)
    python = small if traced is None else traced
    if (traced is not None and not at_peak and math.isfinite(small)
            and math.isfinite(malloc_rise)):
        python = min(python, _held_at(start, peak, small, malloc_rise, traced, last_rise))
    # tracemalloc's bytes beyond pymalloc's blocks were malloc'd (large objects, arrays);
    # while it traces, pymalloc's figures cannot be read, and malloc's rise goes to it first.
    in_malloc = 0.0 if traced is None else min(
        max(traced - (small if math.isfinite(small) else 0.0), 0.0), max(malloc_rise, 0.0))
    native = max(malloc_rise - in_malloc, 0.0)
    # Large Python objects live in glibc's bytes in use: those the run kept to its end were
    # alive at its peak too, and are Python's (beside pymalloc's net); so is what a cut
    # trace saw alive.
    wanted = max(small + large if large > 0 else -math.inf, least)
    moved = min(max(wanted - python, 0.0), native)
    python, native = max(python + moved, 0.0), native - moved
    pymalloc_free = _delta(peak.pymalloc_free, start.pymalloc_free)
    glibc_free = _delta(peak.malloc_free, start.malloc_free)
    room = max(anon - tracer - stacks, 0.0)
    python, native, reused, untouched = _within(python, native, room - max(pymalloc_free, 0.0),
                                                max(-pymalloc_free, 0.0) + max(-glibc_free, 0.0))
    rest = room - python - native - max(pymalloc_free, 0.0)
    # A library's own allocator: what it says it holds in use is native memory (its own
    # mappings, not glibc's), and what it held at its highest and gave back, kept free.
    pooled = min(max(peak.pooled - start.pooled, 0.0), max(rest, 0.0))
    native, rest = native + pooled, rest - pooled
    glibc_kept = min(max(glibc_free, 0.0), max(rest, 0.0))
    rest -= glibc_kept
    pool_kept = min(max(peak.pooled_peak - max(peak.pooled, start.pooled), 0.0), max(rest, 0.0))
    kinds = {"python": python, "native": native,
             "allocator_free": max(pymalloc_free, 0.0) + glibc_kept + pool_kept,
             "file": max(file, 0.0), "stacks": stacks, "other": max(rest - pool_kept, 0.0)}
    return Kinds(kinds, reused, untouched, pooled, pool_kept)


def _held_at(start: MemoryReading, peak: MemoryReading, small: float, malloc_rise: float,
             traced: float, last_rise: bool) -> float:
    """The most of tracemalloc's peak over a call (``traced``) that Python held at the
    reading at ``peak``. Never more than the allocators had in use there (pymalloc's
    ``small`` and glibc's ``malloc_rise``, each as far as it rose): the peak, its
    objects all alive, may come before that moment, whose freed memory the allocators keep
    (a fragmented heap's objects, before the array that made its highest RSS). Where the
    peak was the call's last rise (``last_rise``: its traced bytes rose no more after it,
    nothing it made later could raise RSS) and the reading holds most of it as the
    allocators' free memory, the reading came after its frees (a pool's workers let go at a
    barrier before the watch could read): what they keep free was Python's at the peak."""
    kept = (max(_delta(peak.malloc_free, start.malloc_free), 0.0)
            + max(_delta(peak.pymalloc_free, start.pymalloc_free), 0.0))
    in_use = max(small, 0.0) + max(malloc_rise, 0.0)
    return in_use + kept if last_rise and most_of(kept, traced) else in_use


def _within(python: float, native: float, room: float, reusable: float
            ) -> tuple[float, float, float, float]:
    """Python's and the native heap's shares within ``room`` (what the resident rise leaves
    them), and what was beyond it: reused (as far as ``reusable``, the free memory kept at
    the start and in use now) or not yet resident; taken out of the native heap first."""
    excess = python + native - max(room, 0.0)
    if excess <= 0:
        return python, native, 0.0, 0.0
    reused = min(excess, reusable)
    cut = min(excess, native)
    return max(python - (excess - cut), 0.0), native - cut, reused, excess - reused


def composition(start: MemoryReading, peak: MemoryReading,
                traced: float | None = None, large: float = 0.0,
                measured: float | None = None,
                traced_peak: float | None = None, least: float = 0.0,
                at_peak: bool = False, last_rise: bool = False) -> Composition:
    """The rise from ``start`` to ``peak`` by kind, the dominant kind, and the figures a
    person needs beside them (RSS at both, the stacks' reserve, glibc's trimmable bytes).
    ``traced``, ``large``, ``least``, ``at_peak``, ``last_rise``: as for :func:`rise_kinds`.
    ``measured``: the rise the kernel's high-water mark measured; where the reading rose less
    than MOST_OF it, the reading missed the peak: ``missed`` holds the measured rise, and no
    kind is dominant or major (``dominant`` is None), unless ``traced_peak`` (tracemalloc's
    peak over one more call of the same work, above its start) holds MOST_OF the
    measured rise: the peak was then mostly Python objects, ``peak_python`` holds that
    figure, and ``python`` is the dominant kind."""
    own = traced_rise(start, peak)
    split = rise_kinds(start, peak, traced, large, least, at_peak, last_rise)
    kinds = split.kinds
    rise = peak.rss - start.rss
    missed = measured is not None and measured > 0 and not most_of(rise, measured)
    named = None
    if missed and traced_peak is not None and measured is not None:
        python = min(max(traced_peak, 0.0), measured)
        named = python if most_of(python, measured) else None
    if missed:
        dominant, major = ("python", ["python"]) if named is not None else (None, [])
    else:
        dominant = max(KINDS, key=lambda kind: kinds[kind])
        major = [kind for kind in KINDS if rise > 0 and kinds[kind] >= MAJOR_SHARE * rise]
    found: Composition = {
        "rss_start": start.rss, "rss_peak": peak.rss, "rise": rise,
        "kinds": {kind: round(kinds[kind]) for kind in KINDS},
        "dominant": dominant,
        "major": major,
        "traced": traced is not None or own is not None or least > 0,
        "large_counted": large > 0 and traced is None and own is None,
        "threads": [start.threads, peak.threads],
    }
    if missed:
        found["missed"] = round(float(measured or 0.0))
    if named is not None:
        found["peak_python"] = round(named)
    if least > 0:
        found["traced_least"] = round(least)
    if split.untouched > 0:
        found["untouched"] = round(split.untouched)
    if split.reused > 0:
        found["reused"] = round(split.reused)
    if split.pooled > 0 or split.pool_kept > 0:
        found["pooled"] = {"in_use": round(split.pooled), "kept": round(split.pool_kept),
                           "by": [{"name": name, "remedy": remedy}
                                  for name, remedy in peak.pools or start.pools]}
    if math.isfinite(peak.stacks_reserved):
        found["stacks_reserved"] = round(_delta(peak.stacks_reserved, start.stacks_reserved))
    if math.isfinite(peak.malloc_trimmable):
        found["malloc_trimmable"] = round(peak.malloc_trimmable)
    return found
