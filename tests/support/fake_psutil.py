"""Stand-ins for ``psutil.Process`` as two generations of psutil shape it, for what the plugin
reads of a process's memory (from psutil's changelog and migration guide for 8.0):

- :class:`Psutil7Process` (5.9 to 7.x): ``memory_info()`` (``rss``, ``vms``, ... ``lib``,
  ``dirty``), ``memory_full_info()`` (those plus ``uss``, ``pss``, ``swap``); no
  ``memory_footprint``.
- :class:`Psutil8Process` (8.0): ``memory_footprint()`` returns ``uss``, ``pss`` and ``swap``;
  ``memory_full_info()`` still works but raises a ``DeprecationWarning``; ``memory_info()``
  lost ``lib`` and ``dirty``, kept as aliases that read 0 and raise a ``DeprecationWarning``
  (on Windows ``wset`` and ``pagefile`` became ``rss`` and ``vms`` the same way).

Each counts the calls of each method, so a test can tell which name was read.
"""

from __future__ import annotations

import warnings
from collections import Counter
from typing import NamedTuple

RSS, VMS, USS, PSS = 50 * 1024**2, 400 * 1024**2, 30 * 1024**2, 35 * 1024**2


class MemInfo7(NamedTuple):
    rss: int
    vms: int
    shared: int
    text: int
    lib: int
    data: int
    dirty: int


class FullMemInfo7(NamedTuple):
    rss: int
    vms: int
    shared: int
    text: int
    lib: int
    data: int
    dirty: int
    uss: int
    pss: int
    swap: int


class Footprint8(NamedTuple):
    uss: int
    pss: int
    swap: int


class _MemInfo8Fields(NamedTuple):
    rss: int
    vms: int
    shared: int
    text: int
    data: int


def _deprecated(old: str, new: str) -> property:
    def read(self: _MemInfo8Fields) -> int:
        warnings.warn(f"'{old}' field is deprecated; use '{new}'", DeprecationWarning,
                      stacklevel=2)
        return getattr(self, new) if new else 0

    return property(read)


class MemInfo8(_MemInfo8Fields):
    lib = _deprecated("lib", "")
    dirty = _deprecated("dirty", "")
    wset = _deprecated("wset", "rss")
    pagefile = _deprecated("pagefile", "vms")


class Psutil7Process:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def memory_info(self) -> MemInfo7:
        self.calls["memory_info"] += 1
        return MemInfo7(RSS, VMS, 8 * 1024**2, 2 * 1024**2, 0, 40 * 1024**2, 0)

    def memory_full_info(self) -> FullMemInfo7:
        self.calls["memory_full_info"] += 1
        return FullMemInfo7(*MemInfo7(RSS, VMS, 8 * 1024**2, 2 * 1024**2, 0, 40 * 1024**2, 0),
                            USS, PSS, 0)


class Psutil8Process:
    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def memory_info(self) -> MemInfo8:
        self.calls["memory_info"] += 1
        return MemInfo8(RSS, VMS, 8 * 1024**2, 2 * 1024**2, 40 * 1024**2)

    def memory_footprint(self) -> Footprint8:
        self.calls["memory_footprint"] += 1
        return Footprint8(USS, PSS, 0)

    def memory_full_info(self) -> FullMemInfo7:
        self.calls["memory_full_info"] += 1
        warnings.warn("memory_full_info() is deprecated; use memory_footprint() instead",
                      DeprecationWarning, stacklevel=2)
        return FullMemInfo7(RSS, VMS, 8 * 1024**2, 2 * 1024**2, 0, 40 * 1024**2, 0,
                            USS, PSS, 0)
