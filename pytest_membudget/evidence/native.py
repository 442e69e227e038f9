"""Where in native code: when a failing budget's growth is native (tracemalloc saw none), a
few more iterations under memray with native traces, and the stacks of the memory they
allocated that is still allocated at their end, each with the user's Python line below it.
When a failing footprint's peak is largely native memory, one more call under memray, and
the allocations alive at its highest point (memray's high-water mark), by the user's line.

memray is optional (``pytest-membudget[native]``) and runs on Linux and macOS only; without
it the evidence says how to get it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Generator, Iterable
from typing import Any, cast

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.peakrecords import (
    NativeFrame,
    NativeLine,
    NativePeak,
    NativeStack,
    NativeStacks,
)
from pytest_membudget.evidence.records import FEW, SMALL_SHARE, Site
from pytest_membudget.evidence.steps import COST, LEAST_CALLS, iterations
from pytest_membudget.frames import is_own, is_user_frame
from pytest_membudget.probes.records import TOP

#: Frames read per stack: enough to pass through an extension's calls (torch's run dozens
#: deep, with the interpreter's own between each Python frame) to the Python below.
NATIVE_DEPTH = 512
INSTALL = ("pip install 'pytest-membudget[native]' (memray) to see the native stacks that "
           "allocated it")
PLATFORMS = ("linux", "darwin")
#: Whether memray has run in this process (its first start is the costly one).
_used = False


def first_use() -> bool:
    """Whether memray has not run in this process yet (its start is then costly)."""
    return not _used


def start_seconds() -> float:
    """What starting memray here would cost: its first start in a process reads the symbols
    of the native code loaded, later ones start at once (steps.COST)."""
    if _used:
        return COST["memray_later"]
    return COST["memray_first"] + COST["memray_symbols"] * _code_mib()


def _code_mib() -> float:
    """MiB of executable code mapped from files into this process (/proc/self/maps)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            lines = [line.split(None, 2) for line in maps if b" r-xp " in line]
    except OSError:
        return 0.0
    total = 0
    for fields in lines:
        low, _, high = fields[0].partition(b"-")
        total += int(high, 16) - int(low, 16)
    return total / (1 << 20)


def wanted(failing: Iterable[str], sites: list[Site] | None) -> bool:
    """A failing budget on memory that native code moves, and tracemalloc saw no Python
    allocation grow: the growth is native."""
    return sites == [] and any(PROBES[name].native_stacks for name in failing)


def missing() -> str | None:
    """Why native stacks cannot be had here, or None."""
    if not sys.platform.startswith(PLATFORMS):
        return f"memray, which records them, runs on Linux and macOS only (not {sys.platform})"
    if importlib.util.find_spec("memray") is None:
        return INSTALL
    return None


def _memray() -> Any:
    """The memray module, or the evidence's ``{"missing": why}`` where it cannot be had."""
    reason = missing()
    if reason is not None:
        return {"missing": reason}
    try:
        import memray
    except ImportError as error:  # installed but broken (a wheel for another Python)
        return {"missing": f"memray is installed but does not import ({error}); {INSTALL}"}
    return memray


def native_stacks(start: int, most: int,
                  seconds: float) -> Generator[int, None, NativeStacks]:
    """Up to ``most`` iterations (``seconds`` at most; importing memray and reading its
    capture come on top) under memray with native traces; then the stacks of what they left
    allocated."""
    memray = _memray()
    if isinstance(memray, dict):
        return cast("NativeStacks", memray)
    global _used
    _used = True
    directory = tempfile.mkdtemp(prefix="membudget-native-")
    capture = os.path.join(directory, "native.bin")
    try:
        with memray.Tracker(capture, native_traces=True, follow_fork=False):
            done = yield from iterations(start, most, LEAST_CALLS,
                                         time.perf_counter() + seconds)
        reader = memray.FileReader(capture)
        records = list(reader.get_leaked_allocation_records(merge_threads=True))
        stacks = [stack for stack in map(_stack, records) if stack is not None]
        del records, reader
        # One allocation left over from several iterations is a cache filled once (a code
        # object's line table), not what grows with every call.
        if done >= LEAST_CALLS:
            stacks = [stack for stack in stacks if stack["allocations"] > 1]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    stacks.sort(key=lambda s: (s.get("python") is not None, s["bytes"]), reverse=True)
    found: NativeStacks = {"iterations": done, "stacks": stacks[:FEW]}
    if not stacks:
        found["reason"] = ("no allocation made more than once in them is still live (memray "
                           "sees calls to malloc from compiled code, not calls through a "
                           "pointer to libc's own malloc, such as ctypes.CDLL(None).malloc)")
    return found


def native_at_peak(iteration: int) -> Generator[int, None, NativePeak]:
    """One more call (``iteration``) under memray with native traces; the allocations alive
    at its highest point (memray's high-water mark), grouped by the user's Python line that
    called the native code that made them (the innermost native frame beside it), largest
    first. Allocations made by Python objects (numpy's data too) are there as well: memray
    sees the malloc beneath them."""
    memray = _memray()
    if isinstance(memray, dict):
        return cast("NativePeak", memray)
    global _used
    _used = True
    directory = tempfile.mkdtemp(prefix="membudget-native-peak-")
    capture = os.path.join(directory, "peak.bin")
    began = time.perf_counter()
    try:
        with memray.Tracker(capture, native_traces=True, follow_fork=False):
            yield iteration
        reader = memray.FileReader(capture)
        peak = int(reader.metadata.peak_memory)
        stacks = [stack for stack in map(_stack, reader.get_high_watermark_allocation_records(
            merge_threads=True)) if stack is not None]
        del reader
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    # Allocations with no line of the user's code on their stack (a library's own threads)
    # are summed up: they name no line to act on, and a line above names where RSS rose.
    lines = [line for line in by_user_line(stacks) if line["python"] is not None]
    unplaced = [stack for stack in stacks if stack.get("python") is None]
    least = SMALL_SHARE * peak
    head = [line for line in lines[:TOP] if line["bytes"] >= least]
    rest = lines[len(head):]
    found: NativePeak = {
        "peak": peak, "lines": head,
        "more": {"lines": len(rest), "bytes": sum(line["bytes"] for line in rest)},
        "unplaced": {"allocations": sum(stack["allocations"] for stack in unplaced),
                     "bytes": sum(stack["bytes"] for stack in unplaced)},
        "seconds": round(time.perf_counter() - began, 6)}
    if not head and not unplaced:
        found["reason"] = ("memray saw no native allocation alive at the peak: it sees calls to "
                           "malloc from compiled code, not calls through a pointer to libc's "
                           "own malloc, such as ctypes.CDLL(None).malloc")
    return found


class _Merging(NativeLine, total=False):
    """A line while its stacks are merged: the bytes of its largest native frame."""

    native_bytes: int


def by_user_line(stacks: list[NativeStack]) -> list[NativeLine]:
    """Native stacks (:func:`_stack`) merged by the user's Python line under them (by their
    innermost native frame where no user line is under them), largest first: bytes,
    allocations, and the native frame that allocated most of them."""
    merged: dict[tuple[Any, ...], _Merging] = {}
    for stack in stacks:
        user, inner = stack.get("python"), stack["frames"][0]
        key = (user["file"], user["line"]) if user else ("", inner["function"])
        line = merged.get(key)
        if line is None:
            line = merged[key] = {"python": user, "bytes": 0, "allocations": 0,
                                  "native": inner, "native_bytes": 0}
        line["bytes"] += stack["bytes"]
        line["allocations"] += stack["allocations"]
        if stack["bytes"] > line["native_bytes"]:
            line["native"], line["native_bytes"] = inner, stack["bytes"]
    found = sorted(merged.values(), key=lambda line: line["bytes"], reverse=True)
    for line in found:
        del line["native_bytes"]
    return cast("list[NativeLine]", found)


def _frame(entry: tuple[str, str, int]) -> NativeFrame:
    function, file, line = entry
    return {"function": function, "file": file, "line": line}


def _stack(record: Any) -> NativeStack | None:
    """One stack: its native frames (innermost first, up to the first Python frame), the
    user's Python line below them, and what was left allocated there. None for allocations
    of the interpreter or of this plugin's own code."""
    python = {tuple(f) for f in record.stack_trace(max_stacks=NATIVE_DEPTH)}
    frames: list[NativeFrame] = []
    user: NativeFrame | None = None
    native_part = True
    for entry in record.hybrid_stack_trace(max_stacks=NATIVE_DEPTH):
        if tuple(entry) not in python:
            if native_part and entry[0] != "<unknown>":
                frames.append(_frame(entry))
            continue
        native_part = False
        if is_own(entry[1]):
            return None
        if is_user_frame(entry[1]):
            user = _frame(entry)
            break
    if not frames:
        return None
    return {"bytes": int(record.size), "allocations": int(record.n_allocations),
            "allocator": _allocator(record.allocator), "frames": frames,
            "python": user}


def _allocator(value: int) -> str:
    import memray

    try:
        return str(memray.AllocatorType(value).name).lower()
    except ValueError:
        return str(value)
