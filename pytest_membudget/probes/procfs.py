"""Reads of /proc/self with a file descriptor kept open: one pread, no new file per sample."""

from __future__ import annotations

import os


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
