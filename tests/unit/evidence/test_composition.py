"""What a rise of resident memory is made of: readings in, kinds out (synthetic readings, so
that each kind is known)."""

from __future__ import annotations

import math

from pytest_membudget.evidence.composition import MemoryReading, composition, rise_kinds

MIB = 1024.0**2
START = MemoryReading(rss=100 * MIB, anon=80 * MIB, file=20 * MIB, shmem=0.0, threads=1,
                      malloc_used=10 * MIB, malloc_free=1 * MIB, pymalloc_used=20 * MIB,
                      pymalloc_free=2 * MIB, stacks_resident=0.1 * MIB,
                      stacks_reserved=8 * MIB, blocks=100_000)



def kinds_of(start: MemoryReading, peak: MemoryReading, **options: float) -> dict[str, float]:
    return rise_kinds(start, peak, **options).kinds

def at_peak(**rises: float) -> MemoryReading:
    """START with each figure raised by the given MiB."""
    values = {name: getattr(START, name) + rise * MIB for name, rise in rises.items()}
    return MemoryReading(**{**START.__dict__, **values})


def test_small_python_objects_are_python() -> None:
    kinds = kinds_of(START, at_peak(rss=100, anon=100, pymalloc_used=98, pymalloc_free=2))
    assert round(kinds["python"] / MIB) == 98
    assert max(kinds, key=kinds.__getitem__) == "python"


def test_malloc_without_tracing_is_native_and_with_a_traced_rise_is_python() -> None:
    peak = at_peak(rss=150, anon=150, malloc_used=150)
    untraced = kinds_of(START, peak)
    assert round(untraced["native"] / MIB) == 150
    # The traced rerun saw 150 MiB of Python allocations (a numpy array): it is Python's.
    traced = kinds_of(START, peak, traced=150 * MIB)
    assert round(traced["python"] / MIB) == 150 and traced["native"] < MIB


def test_freed_small_objects_that_stay_in_their_arenas_are_the_allocators_free_memory() -> None:
    kinds = kinds_of(START, at_peak(rss=200, anon=200, pymalloc_used=50,
                                         pymalloc_free=150))
    assert max(kinds, key=kinds.__getitem__) == "allocator_free"


def test_glibc_free_bytes_count_only_as_far_as_resident_pages_go() -> None:
    # Each thread's arena counts its untouched top in fordblks: 40 MiB "free", 1 MiB resident.
    kinds = kinds_of(START, at_peak(rss=1.5, anon=1.5, malloc_free=40,
                                         stacks_resident=0.5))
    assert kinds["allocator_free"] <= 1.0 * MIB + 1
    assert round(kinds["stacks"] / MIB, 1) == 0.5


def test_allocations_never_touched_are_not_resident() -> None:
    split = rise_kinds(START, at_peak(rss=0.1, anon=0.1, malloc_used=400))
    kinds, untouched = split.kinds, split.untouched
    assert round(untouched / MIB) >= 399 and kinds["native"] <= 0.2 * MIB


def test_mapped_files_are_file() -> None:
    found = composition(START, at_peak(rss=150, file=150))
    assert found["dominant"] == "file" and found["major"] == ["file"]


def test_nothing_known_is_left_out_quietly() -> None:
    bare = MemoryReading(rss=100 * MIB)
    found = composition(bare, MemoryReading(rss=130 * MIB))
    assert found["kinds"]["other"] == 30 * MIB and math.isfinite(found["rise"])


def test_a_reading_far_below_the_measured_rise_missed_the_peak_and_names_no_kind() -> None:
    """A quadratic concatenation's peak (the last copy beside its source) sits inside one
    call: the watch's highest reading holds one copy, the kernel's high-water mark both. That
    reading's kinds are not the peak's: none is named, and the measured rise is kept."""
    reading = at_peak(rss=74, anon=74, malloc_used=74)
    missed = composition(START, reading, measured=150 * MIB)
    assert missed["dominant"] is None and missed["major"] == []
    assert missed["missed"] == round(150 * MIB)
    assert round(missed["kinds"]["native"] / MIB) == 74  # the reading's own figures stay
    # A reading that holds most of the measured rise is the peak's.
    caught = composition(START, at_peak(rss=140, anon=140, malloc_used=140),
                         measured=150 * MIB)
    assert caught["dominant"] == "native" and "missed" not in caught


def test_a_missed_peak_is_named_python_by_tracemalloc_s_own_peak_when_it_is_most_of_it() -> None:
    """tracemalloc's high-water mark over one more call is exact inside one C call: where it
    holds more than half of the measured rise, the peak was mostly Python objects, whatever
    the missed reading held; under half it names nothing."""
    reading = at_peak(rss=74, anon=74, malloc_used=74)
    named = composition(START, reading, measured=150 * MIB, traced_peak=149 * MIB)
    assert named["dominant"] == "python" and named["major"] == ["python"]
    assert named["peak_python"] == 149 * MIB and named["missed"] == 150 * MIB
    assert round(named["kinds"]["native"] / MIB) == 74  # still the reading's own figures
    # Never more than the measured rise.
    assert composition(START, reading, measured=150 * MIB,
                       traced_peak=400 * MIB)["peak_python"] == 150 * MIB
    unnamed = composition(START, reading, measured=150 * MIB, traced_peak=60 * MIB)
    assert unnamed["dominant"] is None and "peak_python" not in unnamed
    # A reading that caught the peak keeps its own kinds.
    caught = composition(START, at_peak(rss=140, anon=140, malloc_used=140),
                         measured=150 * MIB, traced_peak=149 * MIB)
    assert caught["dominant"] == "native" and "peak_python" not in caught


def test_large_objects_kept_move_to_python_once_traced_or_not() -> None:
    """48 MiB of kept bytes and arrays (glibc's memory) beside 5 MiB of small objects freed:
    untraced, Python's share is the net of both and the native heap keeps the rest; traced
    with a figure from a rerun that held less of them, Python's share is lifted to the kept
    objects and pymalloc's net, never more."""
    peak = at_peak(rss=60, anon=60, malloc_used=58, pymalloc_used=-5)
    kinds = kinds_of(START, peak, large=48 * MIB)
    assert round(kinds["python"] / MIB) == 43 and round(kinds["native"] / MIB) == 10
    traced = kinds_of(START, peak, traced=20 * MIB, large=48 * MIB)
    assert round(traced["python"] / MIB) == 43, traced
    assert round((traced["python"] + traced["native"]) / MIB) == 53
    held = kinds_of(START, peak, traced=50 * MIB, large=48 * MIB)
    assert round(held["python"] / MIB) == 50  # tracemalloc's figure holds them already


def test_python_held_at_the_highest_rss_stands_where_the_reading_came_after_its_frees() -> None:
    # A pool's workers freed 150 MiB of arrays at a barrier before the reading at the highest
    # RSS: glibc keeps the pages, its bytes in use are back where they began.
    after_frees = at_peak(rss=150, anon=150, malloc_free=150)
    # tracemalloc's peak over the call may come before the highest RSS (a fragmented heap):
    # never more than the reading had in use.
    call_peak = kinds_of(START, after_frees, traced=150 * MIB)
    assert max(call_peak, key=call_peak.__getitem__) == "allocator_free"
    # The traced rerun's bytes at its highest RSS are that moment's: Python's.
    found = composition(START, after_frees, 150 * MIB, at_peak=True)
    assert found["dominant"] == "python"
    assert round(found["kinds"]["python"] / MIB) == 150
    assert sum(found["kinds"].values()) <= 150 * MIB + 1


def test_a_call_s_last_python_peak_stands_where_the_reading_keeps_it_free() -> None:
    # The traced call rose no more after its peak of 150 MiB, and the reading at the highest
    # RSS holds 150 MiB more free memory than the start: it came after the frees.
    after_frees = at_peak(rss=150, anon=150, malloc_free=150)
    kinds = kinds_of(START, after_frees, traced=150 * MIB, last_rise=True)
    assert max(kinds, key=kinds.__getitem__) == "python"
    assert sum(kinds.values()) <= 150 * MIB + 1
    # Where the call rose on after its Python peak, that free memory is the allocators'.
    kinds = kinds_of(START, after_frees, traced=150 * MIB, last_rise=False)
    assert max(kinds, key=kinds.__getitem__) == "allocator_free"
    # And where the reading holds little of it free, the reading's in-use bounds it.
    partly = at_peak(rss=150, anon=150, malloc_free=40, malloc_used=110)
    kinds = kinds_of(START, partly, traced=150 * MIB, last_rise=True)
    assert round(kinds["python"] / MIB) <= 110
