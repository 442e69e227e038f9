"""A source shared by the probes of a run: one per key while anyone holds it, each kind of
work counted by the holders that need it, closed when the last lets go."""

from __future__ import annotations

from pytest_membudget.probes.shared import SharedSource


class Counting(SharedSource):
    made = 0

    def __init__(self, key: str) -> None:
        super().__init__(key)
        Counting.made += 1
        self.heavy_users = 0
        self.closed = False
        self.stale = False

    def current(self) -> bool:
        return not self.stale

    def close(self) -> None:
        self.closed = True


def test_holders_of_one_key_share_one_source_and_count_their_work() -> None:
    first = Counting.acquire("a", lambda: Counting("a"), heavy_users=True)
    second = Counting.acquire("a", lambda: Counting("a"), heavy_users=False)
    other = Counting.acquire("b", lambda: Counting("b"))
    assert first is second and other is not first
    assert (first.users, first.heavy_users) == (2, 1)
    first.release(heavy_users=True)
    assert (first.users, first.heavy_users, first.closed) == (1, 0, False)
    second.release(heavy_users=False)
    other.release()
    assert first.closed and other.closed
    assert Counting.acquire("a", lambda: Counting("a")) is not first


def test_a_source_that_no_longer_measures_its_key_is_made_anew() -> None:
    source = Counting.acquire("c", lambda: Counting("c"))
    source.stale = True
    fresh = Counting.acquire("c", lambda: Counting("c"))
    assert fresh is not source and fresh.users == 1


def test_each_kind_of_source_keeps_its_own_registry() -> None:
    class Other(SharedSource):
        pass

    Counting.acquire("k", lambda: Counting("k"))
    assert "k" not in Other._shared
