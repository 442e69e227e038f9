"""Evidence for asyncio tasks that stay pending: which coroutines they run, where those are
defined, where they wait, and where they were created, as far as the task objects tell.

The creation site comes from the coroutine's ``cr_origin``, which Python records only while
coroutine origin tracking is on: :class:`TaskWatch` turns it on for the evidence rerun (it
costs a short stack walk per coroutine created, on failing tests only). A loop in debug mode
also records each task's creation traceback (``_source_traceback``); it is read when the
coroutine has no origin.
"""

from __future__ import annotations

import linecache
import sys
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pytest_membudget.evidence.records import TaskGroup
from pytest_membudget.frames import STACK_FRAMES
from pytest_membudget.probes.records import TOP

#: (filename, line, function), innermost first.
Frame = tuple[str, int, str]


def pending_tasks() -> set[Any]:
    """Unfinished tasks of the running loop; none without a running loop."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return set()
    try:
        tasks: set[Any] = asyncio.all_tasks()
    except RuntimeError:
        return set()
    return tasks


class TaskWatch:
    """The tasks pending before the evidence rerun; origin tracking while it runs.
    ``user_frame`` tells the user's files from libraries' and the framework's."""

    def __init__(self, user_frame: Callable[[str], bool]) -> None:
        self.user_frame = user_frame
        self.before: weakref.WeakSet[Any] = weakref.WeakSet(pending_tasks())
        self.depth: int | None = None

    def track(self) -> None:
        """Record where coroutines are created from now on (until :meth:`stop`)."""
        self.depth = sys.get_coroutine_origin_tracking_depth()
        sys.set_coroutine_origin_tracking_depth(max(self.depth, STACK_FRAMES))

    def stop(self) -> None:
        if self.depth is not None:
            sys.set_coroutine_origin_tracking_depth(self.depth)
            self.depth = None

    def new_tasks(self, iterations: int) -> list[TaskGroup]:
        """Tasks started since the watch began and still pending, grouped by what they run
        and where they were created; the most numerous first."""
        groups: Counter[tuple[Any, ...]] = Counter(
            self.describe(task) for task in pending_tasks() if task not in self.before)
        found = []
        for (coroutine, defined, waiting, created), count in groups.most_common(TOP):
            entry: TaskGroup = {"coroutine": coroutine, "count": count,
                                "per_iter": round(count / max(iterations, 1), 2)}
            if defined is not None:
                entry["defined_file"], entry["defined_line"] = defined[0], defined[1]
            if waiting is not None:
                entry["waiting_file"], entry["waiting_line"] = waiting[0], waiting[1]
            if created is not None:
                entry["created_file"], entry["created_line"] = created[0], created[1]
            if created is not None:
                entry["created_function"] = created[2]
                entry["created_code"] = linecache.getline(created[0], created[1]).strip()
            found.append(entry)
        return found

    def describe(self, task: Any) -> tuple[Any, ...]:
        coro = task.get_coro()
        name = getattr(coro, "__qualname__", None) or type(coro).__name__
        code = getattr(coro, "cr_code", None)
        defined = (code.co_filename, code.co_firstlineno, "") if code is not None else None
        frame = getattr(coro, "cr_frame", None)
        waiting = (frame.f_code.co_filename, frame.f_lineno, "") if frame is not None else None
        return name, defined, waiting, self.creation(coro, task)

    def creation(self, coro: Any, task: Any) -> Frame | None:
        """Where the coroutine was created: the user's innermost frame of its origin."""
        origin: Sequence[Frame] | None = getattr(coro, "cr_origin", None)
        if not origin:
            recorded = getattr(task, "_source_traceback", None)  # innermost last
            origin = [(f.filename, f.lineno or 0, f.name) for f in reversed(recorded or [])]
        if not origin:
            return None
        return next((f for f in origin if self.user_frame(f[0])), origin[0])
