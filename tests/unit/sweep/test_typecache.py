"""The type attribute cache's refill: every entry it can reach pointed back at the sweep's own
names, and its search for them run again only when the plan reaches fewer entries than the
search last could."""

from __future__ import annotations

import sys

import pytest

from pytest_membudget.sweep.typecache import ENTRIES, IMMORTAL, TypeCache

pytestmark = [
    pytest.mark.skipif(
        not hasattr(sys, "_clear_type_cache") or sys.getrefcount(None) >= IMMORTAL,
        reason="None is immortal here: a cleared entry leaves no trace to refill"),
    # On 3.10 a replay of the whole plan reads None's count rising by about a thousand
    # (measured: -1054 "taken", against +3079 for the same lookups counted in chunks of
    # 500), so the count is no measure of the entries reached there.
    pytest.mark.skipif(sys.version_info < (3, 11),
                       reason="None's count is no measure of the entries reached on 3.10"),
]


def cleared_and_refilled(cache: TypeCache) -> None:
    cache.arm()
    cache.after_call()
    cache.refill()


def taken_by_the_plan(cache: TypeCache) -> int:
    """Entries the plan's lookups take from None after a clear."""
    clear = sys._clear_type_cache
    getrefcount, types, names = sys.getrefcount, cache.types, cache.names
    clear()
    start = getrefcount(None)
    for cls, name in zip(types, names, strict=True):
        getattr(cls, name)
    return start - getrefcount(None)


def test_the_refill_points_nearly_every_entry_at_a_name() -> None:
    cache = TypeCache()
    cleared_and_refilled(cache)
    assert cache.shortfalls == 1  # the first refill searches
    assert cache.reach >= ENTRIES * 0.95
    assert taken_by_the_plan(cache) >= cache.reach - 16


def test_the_search_runs_again_only_when_the_plan_falls_short_of_its_reach() -> None:
    cache = TypeCache()
    cleared_and_refilled(cache)
    searched = cache.shortfalls
    for _ in range(5):
        cleared_and_refilled(cache)
    if cache.reach < ENTRIES:
        # The grid cannot reach every entry here; replaying the plan reaches what it could,
        # so no refill searched the grid again.
        assert cache.shortfalls == searched
    # A plan that lost entries (here: all of them) is searched for again.
    cache.types.clear()
    cache.names.clear()
    cleared_and_refilled(cache)
    assert cache.shortfalls == searched + 1 and len(cache.types) > 0
