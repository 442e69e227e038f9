"""Every read of process memory through psutil, for any psutil from 5.9 on.

psutil 8.0 renames what the plugin reads: ``memory_full_info()`` gives way to
``memory_footprint()`` (USS, PSS and swap), and some ``memory_info()`` fields move, the old
names kept as aliases that raise a ``DeprecationWarning``, which a user's ``-W error`` turns
into a failing test. Only names that every version from 5.9 to 8.0 serves without a warning
are read here: ``memory_info().rss`` (a field of its own on every platform, an alias of
``wset`` on Windows before 8.0), and USS from ``memory_footprint()`` where it exists, else from
``memory_full_info()``. Which one is chosen once per process handle, not on every sample.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import psutil

#: Where psutil reads USS: the platforms whose ``memory_full_info()`` (5.9 to 7) has a ``uss``
#: field and that have ``memory_footprint()`` (8.0).
USS_PLATFORMS = ("linux", "darwin", "win32")


def this_process() -> psutil.Process:
    return psutil.Process()


def rss_reader(process: Any) -> Callable[[], int]:
    """A function that reads the resident set size of ``process``, in bytes."""
    memory_info = process.memory_info

    def rss() -> int:
        return int(memory_info().rss)

    return rss


def uss_reader(process: Any) -> Callable[[], int]:
    """A function that reads the unique set size of ``process``, in bytes: from
    ``memory_footprint()`` (psutil 8.0 on), else from ``memory_full_info()`` (5.9 to 7), which
    8.0 deprecates."""
    footprint = getattr(process, "memory_footprint", None)
    if footprint is None:
        footprint = process.memory_full_info

    def uss() -> int:
        return int(footprint().uss)

    return uss


def uss_unavailable(platform: str = sys.platform) -> str | None:
    """Why psutil cannot read USS here, or None."""
    if platform.startswith(USS_PLATFORMS):
        return None
    return (f"psutil reads the unique set size on Linux, macOS and Windows only, not on "
            f"{platform}; budget 'rss' instead")
