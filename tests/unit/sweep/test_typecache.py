"""The type attribute cache's refill: every entry it can reach pointed back at the sweep's own
names, and its search for them run again only when the plan reaches fewer entries than the
search last could."""

from __future__ import annotations

import sys

import pytest

from pytest_membudget.sweep.typecache import ENTRIES, IMMORTAL_NONE, TypeCache

pytestmark = pytest.mark.skipif(
    not hasattr(sys, "_clear_type_cache") or IMMORTAL_NONE,
    reason="None is immortal here: a cleared entry leaves no trace to refill")


def cleared_and_refilled(cache: TypeCache) -> None:
    cache.arm()
    cache.after_call()
    cache.refill()


def entries_left_at_none() -> int:
    """Entries still pointing at None, found as the sweep's search finds them: lookups of
    names and classes of the test's own, each counted where it lowers None's count."""
    names = [f"left_{i}_" + "y" * (i % 53) for i in range(3000)]
    classes = [type(f"Left{i}", (), dict.fromkeys(names, 0)) for i in range(48)]
    getrefcount = sys.getrefcount
    found, left = 0, getrefcount(None)
    for name in names:
        for cls in classes:
            getattr(cls, name)
            now = getrefcount(None)
            found += now < left
            left = now
    return found


def test_the_refill_points_nearly_every_entry_at_a_name() -> None:
    cache = TypeCache()
    cleared_and_refilled(cache)
    assert cache.shortfalls == 1  # the first refill searches
    assert cache.reach >= ENTRIES * 0.95
    cleared_and_refilled(cache)  # a replay of the plan alone
    assert entries_left_at_none() == 0


def test_no_trace_on_nones_count_in_the_next_tests_lookups() -> None:
    """What a test comparing ``sys.getrefcount(None)`` around a call would see after a swept
    test: nothing (CPython 3.10 and 3.11, whose clears work differently, alike)."""
    class Holder:
        attribute = 1

    def work() -> object:
        return sorted(["b", "a"], key=str.lower), Holder().attribute

    work()
    cache = TypeCache()
    moved = []
    for _ in range(3):
        cleared_and_refilled(cache)
        # Read into locals, not in an assert: pytest's rewritten asserts hold None in locals.
        before = sys.getrefcount(None)
        work()
        after = sys.getrefcount(None)
        moved.append(after - before)
    assert moved == [0, 0, 0]


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


def test_the_plan_found_when_the_session_starts_leaves_each_test_a_replay() -> None:
    """The sweep prepares the plan at session start: a test's refill then replays it alone
    (no search inside a test's call, whose time a timeout marker bounds)."""
    cache = TypeCache()
    cache.prepare()
    assert cache.shortfalls == 1 and cache.types and entries_left_at_none() == 0
    cache.prepare()  # once per process
    for _ in range(3):
        cleared_and_refilled(cache)
    assert cache.shortfalls == 1
