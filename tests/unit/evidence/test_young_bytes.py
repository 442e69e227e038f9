"""census.young_bytes: the objects a window made and still holds, as the allocator holds
them."""

from __future__ import annotations

import gc
import sys

from pytest_membudget.evidence.census import young_bytes


class Slotted:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = None


def test_tracked_objects_count_with_the_collectors_header() -> None:
    gc.collect()
    gc.freeze()
    try:
        before = young_bytes()
        made = [Slotted() for _ in range(20_000)]
        grown = young_bytes() - before
    finally:
        gc.unfreeze()
    head = sys.getsizeof([]) - [].__sizeof__()
    each = object.__sizeof__(made[0]) + head
    # Each instance is held with the collector's header in front of it, in blocks of 16
    # bytes (the list that holds them is counted too).
    assert grown - sys.getsizeof(made) >= len(made) * each
    assert grown < len(made) * (each + 16) + sys.getsizeof(made) + 4096
