"""The readers of what memory is made of: /proc/self/status, pymalloc's statistics, the
threads' stacks in smaps, and nested peak marks."""

from __future__ import annotations

import math
import sys

import pytest

from pytest_membudget.probes.marks import Ledger
from pytest_membudget.probes.memory import (
    MemoryReader,
    parse_pymalloc,
    parse_status,
    stack_ranges,
)

STATUS = b"""Name:\tpython3
VmHWM:\t  300000 kB
VmRSS:\t  200000 kB
RssAnon:\t  150000 kB
RssFile:\t   49000 kB
RssShmem:\t    1000 kB
Threads:\t51
"""

PYMALLOC = b"""Small block threshold = 512, in 32 size classes.
# arenas allocated current           =                  221
# bytes in allocated blocks          =          226,476,016
# bytes in available blocks          =              315,648
Total                                =          231,735,296
# arena map mid nodes                =                    1
Total                                =              655,360
"""

MAPS = b"""55d000000000-55d000001000 r--p 00000000 08:01 1234                       /usr/bin/python3
7f0000000000-7f0000800000 rw-p 00000000 00:00 0
7f0000800000-7f0000801000 ---p 00000000 00:00 0
7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
"""


def test_status_gives_resident_memory_by_kind_and_the_threads() -> None:
    found = parse_status(STATUS)
    assert found == {"rss": 200000 * 1024.0, "anon": 150000 * 1024.0, "file": 49000 * 1024.0,
                     "shmem": 1000 * 1024.0, "threads": 51.0}


def test_pymalloc_in_use_and_what_its_arenas_hold_besides() -> None:
    used, held = parse_pymalloc(PYMALLOC)
    assert used == 226_476_016 and held == 231_735_296 - 226_476_016
    assert all(math.isnan(v) for v in parse_pymalloc(b""))


def test_stacks_are_the_mappings_that_hold_a_threads_stack_pointer() -> None:
    ranges = stack_ranges(MAPS, [0x7F00007FF000])
    # the thread's and the main thread's [stack]
    assert ranges == [(0x7F0000000000, 0x7F0000800000), (0x7FFC00000000, 0x7FFC00021000)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_real_reading_has_every_figure_here() -> None:
    reader = MemoryReader()
    reading = reader.read()
    reader.close()
    assert reading.rss > 0 and reading.anon > 0 and reading.threads >= 1
    assert reading.stacks_counted >= 1 and reading.stacks_resident > 0
    assert math.isfinite(reading.malloc_used) and math.isfinite(reading.blocks)


class FakeSource:
    def __init__(self) -> None:
        self.peak = 0.0

    def read(self) -> float:
        return self.peak

    def reset(self) -> bool:
        self.peak = 0.0
        return True


def test_a_reset_for_an_inner_mark_keeps_the_outer_marks_peak() -> None:
    source = FakeSource()
    ledger = Ledger(source.read, source.reset)
    outer = ledger.open()
    source.peak = 500.0
    inner = ledger.open()  # resets the source: the outer mark keeps 500
    source.peak = 200.0
    assert inner is not None and outer is not None
    assert inner.close() == 200.0
    assert outer.peak() == 500.0
    source.peak = 700.0
    assert outer.close() == 700.0
    assert ledger.marks == []


def test_a_capture_during_which_resident_memory_moved_is_made_again() -> None:
    """C code that let go of the GIL may free memory between the status and glibc's figures:
    the status is read again after them, and where it moved the capture is made again."""
    import sys as _sys

    from pytest_membudget.probes import memory

    if not _sys.platform.startswith("linux"):
        pytest.skip("reads /proc/self/status")

    class Script:
        """VmRSS values in kB, one per read; the last repeats."""

        def __init__(self, values: list[int]) -> None:
            self.values = values
            self.reads = 0

        def read(self, size: int) -> bytes:
            value = self.values[min(self.reads, len(self.values) - 1)]
            self.reads += 1
            return f"VmRSS:\t{value} kB\nRssAnon:\t{value} kB\n".encode()

    reader = memory.MemoryReader()
    # Read at 200 MiB, then 150 MiB once the figures were read: made again, at 150, steady.
    reader._status = Script([200 * 1024, 150 * 1024, 150 * 1024, 150 * 1024])  # type: ignore[assignment]
    taken = reader.capture()
    assert reader._status.reads == 4
    assert reader.reading(taken).rss == 150 * 1024 * 1024
    # A steady moment costs one more read of the status.
    reader._status = Script([150 * 1024])  # type: ignore[assignment]
    reader.capture()
    assert reader._status.reads == 2
    # Memory that keeps moving: the capture is made CAPTURE_TRIES times, the last one stands.
    reader._status = Script([100 * 1024 * k for k in range(1, 20)])  # type: ignore[assignment]
    reader.capture()
    assert reader._status.reads == 2 * memory.CAPTURE_TRIES - 1
