"""The memory hook the cupy_* probes enter on the workload's thread (CuPy's hooks are
thread-local): the device pool's bytes in use after every malloc and free, so that a peak
inside a call is seen, and, from the window on, the line that allocated each block still in
use."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from pytest_membudget.frames import first_user, is_library, is_own
from pytest_membudget.probes.packages import in_packages
from pytest_membudget.probes.records import TOP, CupyRow

#: CuPy's own packages: their code is CuPy's machinery.
CUPY_PACKAGES = ("cupy", "cupyx", "cupy_backends")
HOOK_NAME = "pytest_membudget"


def _frames() -> list[tuple[str, int, str]]:
    """The Python stack of the allocation running now, innermost first, without CuPy's
    machinery and the framework's: 64 frames at most, which reach the user's line beneath
    any library's calls, at every allocation of the window."""
    found: list[tuple[str, int, str]] = []
    frame = sys._getframe(2)
    while frame is not None and len(found) < 64:
        name = frame.f_code.co_filename
        if not in_packages(name, CUPY_PACKAGES) and not is_own(name):
            found.append((name, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back  # type: ignore[assignment]
    return found


def lines_of(frames: list[tuple[str, int, str]]) -> tuple[Any, Any]:
    """(the user's line, the library line under it), as for JAX's arrays."""
    if not frames:
        return None, None
    site = frames[0]
    if not is_library(site[0]):
        return site, None
    user = first_user(frames, lambda f: f[0])
    return (user, site) if user is not None else (site, None)


def make_hook(cupy: Any, pool: Any) -> Any:
    """A ``cupy.cuda.MemoryHook`` that follows ``pool``'s bytes in use."""

    class PoolWatch(cupy.cuda.MemoryHook):  # type: ignore[misc]
        name = HOOK_NAME

        def __init__(self) -> None:
            self.used = float(pool.used_bytes())
            self.highest = self.used
            self.lines = False
            #: pointer -> (bytes, user line, library line) of the blocks allocated since
            #: ``lines`` was set, still in use.
            self.live: dict[int, tuple[int, Any, Any]] = {}

        def malloc_postprocess(self, **kwargs: Any) -> None:
            size = int(kwargs.get("mem_size", 0))
            if not kwargs.get("mem_ptr"):
                return  # the allocation failed
            self.used += size
            if self.used > self.highest:
                self.highest = self.used
            if self.lines:
                self.live[int(kwargs["mem_ptr"])] = (size, *lines_of(_frames()))

        def free_postprocess(self, **kwargs: Any) -> None:
            self.used -= int(kwargs.get("mem_size", 0))
            self.live.pop(int(kwargs.get("mem_ptr", 0)), None)

        def resync(self) -> None:
            """Take the pool's own figure (what other threads did is not hooked)."""
            self.used = float(pool.used_bytes())
            self.highest = max(self.highest, self.used)

    return PoolWatch()


def live_rows(live: dict[int, tuple[int, Any, Any]], top: int = TOP) -> list[CupyRow]:
    """The blocks in ``live`` by the line that allocated them, most bytes first."""
    rows: Counter[Any] = Counter()
    counts: Counter[Any] = Counter()
    for size, user, library in live.values():
        rows[(user, library)] += size
        counts[(user, library)] += 1
    found = []
    for (user, library), size in rows.most_common(top):
        row: CupyRow = {"bytes": size, "count": counts[(user, library)]}
        if user is not None:
            row.update({"file": user[0], "line": user[1], "function": user[2]})
        if library is not None:
            row.update({"library_file": library[0], "library_line": library[1],
                        "library_function": library[2]})
        found.append(row)
    return found
