"""The machine's guard of the peak watch: a run is stopped when the machine (or its cgroup)
is short of memory and the run holds much of what was taken since it began; memory other
processes took is not held against it."""

from __future__ import annotations

from pytest_membudget.measure.watch import LEAST_RESERVE, PeakWatch
from pytest_membudget.probes.room import Room

MIB = float(1 << 20)
TOTAL = 2048 * MIB


class FakeRoom:
    def __init__(self, available: float) -> None:
        self.available = available

    def read(self) -> Room:
        return Room(self.available, TOTAL, "cgroup /ci")

    def close(self) -> None:
        pass


def guarded(left_now: float, began_with: float = 1024 * MIB) -> PeakWatch:
    watch = PeakWatch(machine=True)
    watch._room = FakeRoom(left_now)  # type: ignore[assignment]
    watch._room_start = Room(began_with, TOTAL, "cgroup /ci")
    watch._run_start = 100 * MIB
    return watch


def test_a_run_that_took_the_room_is_stopped() -> None:
    short = guarded(left_now=50 * MIB)._short_of_room(rss=1050 * MIB)
    assert short is not None and short["by"] == "machine"
    assert short["room_where"] == "cgroup /ci" and short["reserve"] == max(0.05 * TOTAL,
                                                                           LEAST_RESERVE)
    assert short["run_rise"] == 950 * MIB


def test_room_enough_is_no_stop() -> None:
    assert guarded(left_now=400 * MIB)._short_of_room(rss=700 * MIB) is None


def test_memory_another_process_took_is_not_held_against_the_run() -> None:
    # The room fell from 1 GiB to 50 MiB while this run rose 100 MiB: not its doing.
    assert guarded(left_now=50 * MIB)._short_of_room(rss=200 * MIB) is None


def test_no_figures_no_stop() -> None:
    watch = guarded(left_now=0.0)
    watch._room_start = None
    assert watch._short_of_room(rss=4096 * MIB) is None
