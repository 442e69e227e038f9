"""The peak watch names the line that started threads: the measured thread's own starts are
told by Thread.start while a watch runs, so they go to the starting line even where the
watch's thread first counts them after the measured thread has moved on (the started threads
held the interpreter meanwhile)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from pytest_membudget.measure import starts
from pytest_membudget.measure.watch import PeakWatch, WatchReport

THREADS = 6


@pytest.fixture
def late_count(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The watch's thread count reads as it was until the returned event is set: the watch
    sees the threads appear only then, wherever the measured thread is by that time."""
    real = threading.active_count
    released = threading.Event()
    before = real()

    def count() -> int:
        return real() if released.is_set() else before

    monkeypatch.setattr(threading, "active_count", count)
    yield released


def _watched(work: Callable[[], None]) -> WatchReport:
    peak_watch = PeakWatch()
    peak_watch.start()
    try:
        work()
    finally:
        report = peak_watch.stop()
    return report


def _idle_workers(release: threading.Event) -> list[threading.Thread]:
    return [threading.Thread(target=release.wait, args=(10,), daemon=True)
            for _ in range(THREADS)]


def test_threads_go_to_the_line_that_started_them_when_the_count_is_read_later(
        late_count: threading.Event) -> None:
    release = threading.Event()
    workers = _idle_workers(release)

    def work() -> None:
        for worker in workers:
            worker.start()  # the starting line
        late_count.set()
        time.sleep(0.05)  # the line running when the watch first sees the threads
        release.set()
        for worker in workers:
            worker.join()

    report = _watched(work)
    assert report.threads, report
    first = report.threads[0]
    assert first["code"] == "worker.start()  # the starting line", report.threads
    assert first["threads"] == THREADS
    assert all("time.sleep" not in entry["code"] for entry in report.threads), report.threads


def test_threads_another_thread_starts_go_to_the_line_running_when_they_appear(
        late_count: threading.Event) -> None:
    """Not the measured thread's own starts: the count read by the watch's thread stands for
    them, at the measured thread's line of that moment, as before."""
    release, go, done = threading.Event(), threading.Event(), threading.Event()
    workers = _idle_workers(release)

    def starter() -> None:
        go.wait(10)
        for worker in workers:
            worker.start()
        done.set()

    helper = threading.Thread(target=starter, daemon=True)
    helper.start()

    def work() -> None:
        go.set()
        done.wait(10)
        late_count.set()
        time.sleep(0.05)  # the measured thread's line when they appear
        release.set()
        for worker in workers:
            worker.join()

    report = _watched(work)
    helper.join()
    assert report.threads, report
    assert report.threads[0]["code"].startswith("time.sleep(0.05)"), report.threads
    assert sum(entry["threads"] for entry in report.threads) == THREADS


def test_the_plugins_own_threads_are_not_the_workloads() -> None:
    """A watch started while another runs (a phase inside a measured run) starts its own
    thread through Thread.start: the outer watch names no line for it."""

    def work() -> None:
        inner = PeakWatch()
        inner.start()
        inner.stop()

    report = _watched(work)
    assert report.threads == []


def test_thread_start_is_given_back_after_the_last_watch() -> None:
    original = threading.Thread.start
    outer, inner = PeakWatch(), PeakWatch()
    outer.start()
    inner.start()
    assert threading.Thread.start is not original
    inner.stop()
    assert threading.Thread.start is not original  # the outer one still runs
    outer.stop()
    assert threading.Thread.start is original


def test_a_start_the_user_replaced_meanwhile_is_left_as_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Given back as it is now when the test ends, whatever it was replaced with.
    monkeypatch.setattr(threading.Thread, "start", threading.Thread.start)
    peak_watch = PeakWatch()
    peak_watch.start()
    wrapped = threading.Thread.start

    def users(thread: threading.Thread) -> None:
        wrapped(thread)

    monkeypatch.setattr(threading.Thread, "start", users)
    peak_watch.stop()
    assert threading.Thread.start is users
    assert starts._RUNNING == ()


def test_the_wrapper_kept_past_the_last_watch_still_starts_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Code that kept the wrapped Thread.start while a watch ran and puts it back after the
    last one stopped (a monkeypatch undone) gets a Thread.start that works."""
    monkeypatch.setattr(threading.Thread, "start", threading.Thread.start)
    peak_watch = PeakWatch()
    peak_watch.start()
    kept = threading.Thread.start
    peak_watch.stop()
    monkeypatch.setattr(threading.Thread, "start", kept)
    ran: list[bool] = []
    thread = threading.Thread(target=lambda: ran.append(True))
    thread.start()
    thread.join()
    assert ran == [True]
