"""The peak watch reads the measured thread's line without holding its frames: a function
that returns while the watch reads frees its locals as it would unwatched."""

from __future__ import annotations

import threading
import weakref

import pytest

from pytest_membudget.measure import stacks
from pytest_membudget.measure.stacks import ThreadStack, stack_in
from pytest_membudget.measure.watch import PeakWatch


class Payload:
    """Stands for a large temporary: a local the watch must not keep alive."""


def test_the_stack_is_the_threads_own_innermost_first() -> None:
    here = threading.Event()
    go = threading.Event()

    def waits() -> None:
        here.set()
        go.wait(10)

    thread = threading.Thread(target=waits)
    thread.start()
    here.wait(10)
    assert thread.ident is not None
    stack = ThreadStack(thread.ident)
    try:
        frames = stack.read()
    finally:
        go.set()
        thread.join()
        stack.close()
    functions = [function for _, _, function in frames]
    # threading's Event.wait and Condition.wait first, then the function, then threading's run
    assert functions.index("waits") < functions.index("run")
    file, line, _ = frames[functions.index("waits")]
    assert file == __file__ and line > 0


def test_a_thread_that_is_gone_has_no_stack() -> None:
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    assert thread.ident is not None
    stack = ThreadStack(thread.ident)
    try:
        assert stack.read() == []
    finally:
        stack.close()


def test_a_call_that_returns_while_the_watch_reads_frees_its_locals(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The watch is paused where it looks at the measured thread's frames; meanwhile the
    measured function returns. Its local must be gone then: a frame object held by the
    watch would keep it (and the next call's temporary would be counted on top of it)."""
    inside, leave, left = threading.Event(), threading.Event(), threading.Event()
    alive: list[weakref.ref[Payload]] = []
    seen: list[bool] = []

    def measured() -> None:
        payload = Payload()
        alive.append(weakref.ref(payload))
        inside.set()
        leave.wait(10)
        # returns holding ``payload``: only a frame object held elsewhere outlives this

    def target() -> None:
        measured()
        left.set()

    original = stacks.is_user_frame

    def paused(filename: str) -> bool:
        if not seen:
            leave.set()
            left.wait(10)
            seen.append(alive[0]() is None)
        return original(filename)

    thread = threading.Thread(target=target)
    thread.start()
    inside.wait(10)
    monkeypatch.setattr(stacks, "is_user_frame", paused)
    peak_watch = PeakWatch()
    assert thread.ident is not None
    peak_watch._target = thread.ident
    peak_watch._stack = ThreadStack(thread.ident)
    try:
        peak_watch._frames()
    finally:
        leave.set()
        thread.join()
        peak_watch._stack.close()
    assert seen == [True]


def test_a_thread_being_started_does_not_hide_its_starter() -> None:
    # Until it runs, a new thread carries the id of the thread that started it.
    dump = (b'Thread 0x00007f0000000001 (most recent call first):\n  <no Python frame>\n\n'
            b'Thread 0x00007f0000000002 (most recent call first):\n'
            b'  File "/lib/threading.py", line 327 in wait\n\n'
            b'Thread 0x00007f0000000001 (most recent call first):\n'
            b'  File "/lib/threading.py", line 969 in start\n'
            b'  File "/t/test_x.py", line 12 in test_x\n')
    assert stack_in(dump, b"hread 0x00007f0000000001 ") == [
        ("/lib/threading.py", 969, "start"), ("/t/test_x.py", 12, "test_x")]
    assert stack_in(dump, b"hread 0x00007f0000000003 ") == []


def test_the_oldest_thread_is_read_beside_more_than_a_hundred() -> None:
    # faulthandler's dump lists the newest 100 threads only.
    release = threading.Event()
    started = [threading.Thread(target=release.wait, daemon=True) for _ in range(110)]
    for each in started:
        each.start()
    found: list[list[tuple[str, int, str]]] = []
    stack = ThreadStack(threading.get_ident())
    reader = threading.Thread(target=lambda: found.append(stack.read()))
    try:
        reader.start()
        reader.join()
    finally:
        release.set()
        for each in started:
            each.join()
        stack.close()
    assert any(function == "test_the_oldest_thread_is_read_beside_more_than_a_hundred"
               for _, _, function in found[0])
