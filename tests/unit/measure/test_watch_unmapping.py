"""A capture that fell inside a free made without the GIL does not replace the peak's
reading: glibc took the block out of its figures while the kernel was still unmapping its
pages, so the capture read them resident and glibc's bytes gone ("other anonymous memory")."""

from __future__ import annotations

import ctypes
from dataclasses import replace

import pytest

from pytest_membudget.evidence.composition import MemoryReading, composition
from pytest_membudget.measure import watch
from pytest_membudget.measure.watch import PeakWatch
from pytest_membudget.probes.malloc import MallocProbe

MIB = float(1 << 20)
START = MemoryReading(rss=100 * MIB, anon=80 * MIB, file=20 * MIB, shmem=0.0,
                      malloc_used=10 * MIB, malloc_free=MIB, pymalloc_used=20 * MIB,
                      pymalloc_free=2 * MIB)
#: During the memset: 150 MiB malloc'd, 120 MiB of it touched.
TOUCHING = replace(START, rss=220 * MIB, anon=200 * MIB, malloc_used=160 * MIB)
#: Inside the free: the pages still resident, glibc's bytes gone.
FREEING = replace(START, rss=245 * MIB, anon=225 * MIB, malloc_used=10 * MIB)


def _watch(rss_after: list[float]) -> PeakWatch:
    peak_watch = PeakWatch()
    peak_watch._start, peak_watch._peak = START, TOUCHING
    readings = iter(rss_after)
    peak_watch._read_rss = lambda: next(readings, rss_after[-1])  # type: ignore[assignment,method-assign]
    return peak_watch


def test_a_capture_inside_an_unmapping_is_told_by_the_rss_that_follows() -> None:
    assert composition(START, FREEING)["dominant"] == "other"  # what it would have said
    peak_watch = _watch([244 * MIB, 200 * MIB, 120 * MIB])
    assert peak_watch._unmapping(FREEING)


def test_a_drop_of_glibcs_bytes_that_rss_keeps_is_a_real_reading(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory that glibc let go and something else holds (another allocator's mapping):
    RSS does not fall, and after the wait the capture stands."""
    monkeypatch.setattr(watch, "FALL_WAIT", 0.01)
    assert not _watch([245 * MIB])._unmapping(FREEING)


def test_a_small_drop_is_not_waited_for() -> None:
    small = replace(FREEING, malloc_used=TOUCHING.malloc_used - 4 * MIB)
    peak_watch = _watch([0.0])  # would read as an unmapping, if it were asked
    assert not peak_watch._unmapping(small)


def test_a_ctypes_malloc_and_free_is_native_in_every_watch() -> None:
    """The race itself: 150 MiB malloc'd, written and freed through ctypes, which lets go of
    the GIL in each call; before the check, 4 of 160 watches read it as other memory."""
    missing = MallocProbe().unavailable()
    if missing:
        pytest.skip(f"glibc's figures are needed: {missing}")
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    size = 150 << 20
    named = []
    for _ in range(20):
        peak_watch = PeakWatch()
        peak_watch.start()
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        libc.free(block)
        seen = peak_watch.stop()
        named.append(composition(seen.start, seen.peak,
                                 measured=seen.highest - seen.start.rss)["dominant"])
    assert set(named) <= {"native", None}, named

