"""Drive the evidence rerun (a generator) over a step, as the measuring loop does."""

from __future__ import annotations

from typing import Any

from pytest_membudget.evidence.rerun import collect


def evidence_of(step: Any, failing: set[str], iterations: int = 40) -> dict[str, Any]:
    # Called once before, as the measured run always has before its evidence: on Python
    # 3.10 a function's first call leaves a frame cached on its code object (a zombie frame,
    # gone in 3.11), which a first call inside the rerun would show as a growing line.
    step()
    rerun = collect(failing, iterations=iterations, start_iteration=0)
    try:
        while True:
            next(rerun)
            step()
    except StopIteration as done:
        result: dict[str, Any] = done.value
    return result


#: The head of a generated test module that takes memory from libc's malloc through ctypes
#: (``LIBC.malloc``, ``LIBC.memset``, ``LIBC.free``): native memory that tracemalloc does not
#: trace and memray does not intercept.
LIBC_PRELUDE = """
import ctypes, ctypes.util

LIBC = ctypes.CDLL(ctypes.util.find_library("c"))
LIBC.malloc.restype = ctypes.c_void_p
LIBC.malloc.argtypes = [ctypes.c_size_t]
LIBC.free.argtypes = [ctypes.c_void_p]
LIBC.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
"""
