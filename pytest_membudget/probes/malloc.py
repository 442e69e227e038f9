"""Bytes in use in glibc's malloc: native allocations counted exactly, without the slack
that hides small leaks from RSS."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

from pytest_membudget.probes import Probe
from pytest_membudget.probes.procfs import libc_function


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


@functools.lru_cache(maxsize=2)
def mallinfo2(keep_gil: bool = False) -> Callable[[], MallInfo2] | None:
    """glibc's ``mallinfo2``, ready to call, or None where there is none; ``keep_gil``: a
    call that keeps the interpreter's lock (the peak watch's thread)."""
    function = libc_function("mallinfo2", keep_gil=keep_gil)
    if function is None:
        return None
    function.restype = MallInfo2
    function.argtypes = []
    call: Callable[[], MallInfo2] = function
    return call


class MallocProbe(Probe):
    """Bytes handed out by malloc and not freed (``mallinfo2``: in-use chunks of the heaps
    plus mmap'd chunks). It sees C extensions, ctypes and torch's CPU tensors byte for byte,
    and Python objects over 512 bytes; small Python objects live in pymalloc's arenas, which
    it does not count (the heap probe does)."""

    name = "malloc"

    def unavailable(self) -> str | None:
        if mallinfo2() is None:
            return "it needs glibc's mallinfo2 (Linux with glibc 2.33 or later)"
        return None

    def start(self) -> None:
        self._info = mallinfo2()

    def read(self) -> float:
        assert self._info is not None
        info = self._info()
        return float(info.uordblks + info.hblkhd)


PROBE_CLASSES: dict[str, type[Probe]] = {"malloc": MallocProbe}
