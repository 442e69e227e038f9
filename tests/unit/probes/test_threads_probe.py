"""The threads probe waits out threads that ``join()`` has released but the OS has not reaped."""

from __future__ import annotations

import threading

from pytest_membudget.probes.osres import ThreadsProbe


class ScriptedThreads(ThreadsProbe):
    """Counts come from a script; the last value repeats. ``settle``: the re-read time, long
    where a test needs every re-read to happen even on a loaded machine."""

    def __init__(self, counts: list[float], settle: float = ThreadsProbe.REREAD_SECONDS) -> None:
        self._script = list(counts)
        self.calls = 0
        self.REREAD_SECONDS = settle

    def _count(self) -> float:
        self.calls += 1
        return self._script.pop(0) if len(self._script) > 1 else self._script[0]

    def start(self) -> None:
        self._stat = None
        self._last = self._count()


def test_a_rise_that_settles_reads_as_the_settled_count() -> None:
    # Settles on the fourth read, long before a minute is up.
    probe = ScriptedThreads([4, 7, 7, 4], settle=60.0)
    probe.start()
    assert probe.read() == 4
    assert probe.calls == 4


def test_a_steady_count_costs_one_read() -> None:
    probe = ScriptedThreads([4])
    probe.start()
    for _ in range(10):
        assert probe.read() == 4
    assert probe.calls == 11


def test_a_lasting_rise_is_reported_after_the_reread_time() -> None:
    probe = ScriptedThreads([4, 5])
    probe.start()
    assert probe.read() == 5
    assert probe.read() == 5  # the new level is the reference now: one read
    assert probe.read() == 5


def test_a_drop_is_taken_at_once() -> None:
    probe = ScriptedThreads([6, 3])
    probe.start()
    assert probe.read() == 3
    assert probe.calls == 2


def test_joined_threads_do_not_count_on_the_real_process() -> None:
    probe = ThreadsProbe()
    probe.start()
    try:
        counted = []
        for _ in range(300):
            # The process's count before the round: a thread of someone else's that comes
            # or goes between rounds (under pytest-xdist one lived through 24 rounds) is in
            # both figures; only the round's joined threads can tell them apart.
            before = probe._count()
            workers = [threading.Thread(target=lambda: None) for _ in range(3)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            counted.append(probe.read() - before)
    finally:
        probe.stop()
    # Without the re-read about 1 reading in 70 counted joined threads (4 expected here).
    assert sum(extra > 0 for extra in counted) <= 1, counted
