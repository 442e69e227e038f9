"""Whose code a frame is: the user's, a library's (site-packages and the standard library), or
the framework's (pytest, pluggy, this plugin). The one rule every evidence source uses to show
the user's own line beneath a library's."""

from __future__ import annotations

import linecache
import os
import sysconfig
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

#: This package's own directory: its frames are never the line that leaked.
PACKAGE_DIR = str(Path(__file__).resolve().parent)
#: Frames of the test framework, never the line that leaked (shared with the CUDA evidence).
FRAMEWORK_PARTS = (os.sep + "_pytest" + os.sep, os.sep + "pluggy" + os.sep, "<frozen ")
#: Frames kept of a stack where the user's own line is looked for beneath a library's (an
#: allocation's traceback, a task's creation, a thread's stack read frame by frame): enough
#: to pass from numpy's or torch's frames to the user's line that called them.
STACK_FRAMES = 24
_OWN_PARTS = (PACKAGE_DIR + os.sep, os.sep + "tracemalloc.py", *FRAMEWORK_PARTS)
_STDLIB = sysconfig.get_paths()["stdlib"]
#: The environment's scripts (the ``pytest`` command's own file): no one's code to show.
_SCRIPTS = sysconfig.get_paths()["scripts"] + os.sep

Frame = TypeVar("Frame")


def is_own(filename: str) -> bool:
    """A frame of pytest, pluggy, tracemalloc or this plugin."""
    return any(part in filename for part in _OWN_PARTS)


def is_library(filename: str) -> bool:
    """A frame of an installed package or of the standard library."""
    return (
        "site-packages" in filename
        or "dist-packages" in filename
        or filename.startswith((_STDLIB, _SCRIPTS))
    )


_PACKAGE_ROOTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def library_path(filename: str) -> str | None:
    """A library's file by its package path, as ``import`` finds it
    (``numpy/_core/numeric.py``, ``json/decoder.py``); None for a file that is no
    library's."""
    for root in _PACKAGE_ROOTS:
        at = filename.rfind(root)
        if at >= 0:
            return filename[at + len(root):]
    if filename.startswith(_STDLIB + os.sep):
        return filename[len(_STDLIB) + 1:]
    return None


#: The standard library's modules whose frames are a thread waiting for others: a lock, a
#: condition, a queue, a future (pandas' ``read_csv`` waits in ``Future.result`` while its
#: pool parses), a process pool's results.
_WAITS = tuple(os.path.join(_STDLIB, name) for name in (
    "threading.py", "queue.py", os.path.join("concurrent", "futures", ""),
    os.path.join("multiprocessing", "pool.py"), os.path.join("multiprocessing", "synchronize.py"),
    os.path.join("multiprocessing", "connection.py")))


def is_wait(filename: str) -> bool:
    """A frame of the standard library's code that waits for another thread or process."""
    return filename.startswith(_WAITS)


def is_user_frame(filename: str) -> bool:
    """A frame of the user's own code: neither a library's, nor pytest's, nor this plugin's."""
    return not is_library(filename) and not is_own(filename)


def first_user(frames: Iterable[Frame], filename: Callable[[Frame], str]) -> Frame | None:
    """The first of ``frames`` (innermost first) in the user's own code, or None."""
    return next((f for f in frames if is_user_frame(filename(f))), None)


def stopped_at(error: BaseException) -> dict[str, object]:
    """Where a workload was when ``error`` stopped it: the innermost frame of the user's own
    code in its traceback (empty where there is none)."""
    found: dict[str, object] = {}
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if is_user_frame(code.co_filename):
            found = {"file": code.co_filename, "line": trace.tb_lineno,
                     "function": code.co_name,
                     "code": source_line(code.co_filename, trace.tb_lineno)}
        trace = trace.tb_next
    return found


def let_go(error: BaseException) -> None:
    """Let go of what the frames ``error`` went through hold (a stopped workload's arrays):
    their locals are cleared (those still running are left) and the traceback dropped, so
    that the memory returns before the next test. The failure's text is made before."""
    import gc
    import traceback

    traceback.clear_frames(error.__traceback__)
    error.__traceback__ = None
    gc.collect()


def source_line(filename: str, lineno: int) -> str:
    return linecache.getline(filename, lineno).strip()
