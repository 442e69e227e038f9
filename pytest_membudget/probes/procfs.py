"""Reads of /proc/self with a file descriptor kept open: one pread, no new file per sample;
and the C library's own functions (glibc's malloc statistics and trimming)."""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any


class ProcFile:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_RDONLY)

    def read(self, size: int = 4096) -> bytes:
        return os.pread(self.fd, size, 0)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def has_procfs() -> bool:
    return os.path.exists("/proc/self/statm")


def libc_function(name: str) -> Any | None:
    """A function of the C library on Linux (``ctypes``), or None where there is none."""
    libc = _libc()
    return None if libc is None else getattr(libc, name, None)


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None
