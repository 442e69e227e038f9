"""Which line of a watched thread started a thread: while a peak watch runs,
``threading.Thread.start`` is wrapped, and a start made by the thread a watch measures tells
that watch the line that made it (a watch that counts threads from its own thread may see a
loop of starts only after the loop: the started threads hold the interpreter meanwhile)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class Watching(Protocol):
    """What the wrapper asks of a running watch."""

    def announce(self, thread: threading.Thread) -> bool: ...

    def started(self) -> None: ...


#: The watches running now, and Thread.start as it was before the first of them began:
#: while one runs, Thread.start tells them which line of the thread they watch started a
#: thread (a watch reading the thread count from its own thread may see a loop of starts
#: only after the loop: the started threads hold the interpreter meanwhile).
_RUNNING: tuple[Watching, ...] = ()
_SAVED_START: Callable[[threading.Thread], None] | None = None
#: Thread.start as this module found it: what the wrapper calls if it outlives the watches
#: (someone kept it and put it back after the last one stopped).
_FIRST_START: Callable[[threading.Thread], None] = threading.Thread.start


def start_announced(thread: threading.Thread) -> None:
    """Thread.start while a watch runs: the thread started, then the line that started it
    noted by each watch whose thread started it."""
    told = [watch for watch in _RUNNING if watch.announce(thread)]
    (_SAVED_START or _FIRST_START)(thread)
    for watch in told:
        watch.started()


def announcing(watch: Watching, on: bool = True) -> None:
    """Add ``watch`` to the running ones (or take it out); Thread.start is wrapped while
    there is one, and given back after the last (unless something replaced it since)."""
    global _RUNNING, _SAVED_START
    if on:
        if not _RUNNING:
            _SAVED_START = threading.Thread.start
            threading.Thread.start = start_announced  # type: ignore[method-assign,assignment]
        _RUNNING = (*_RUNNING, watch)
        return
    if watch not in _RUNNING:
        return
    _RUNNING = tuple(running for running in _RUNNING if running is not watch)
    if not _RUNNING and _SAVED_START is not None:
        if threading.Thread.start is start_announced:
            threading.Thread.start = _SAVED_START  # type: ignore[method-assign,assignment]
        _SAVED_START = None
