"""Allocators that libraries bring besides glibc's and pymalloc's (pyarrow's memory pool runs
on jemalloc or mimalloc): what they hold in use, where they say it. Their memory is mappings
of their own, which glibc's figures do not count; read only where the library is imported
already (it is never imported for it)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Pool:
    """One allocator's figures: bytes in use now, its own high-water mark, its name, and
    what to do about the free memory it keeps."""

    name: str
    in_use: float
    peak: float
    remedy: str


def _pyarrow() -> Pool | None:
    arrow = sys.modules.get("pyarrow")
    if arrow is None:
        return None
    try:
        pool = arrow.default_memory_pool()
        backend = str(pool.backend_name)
        if backend == "system":  # glibc's malloc: counted in its figures already
            return None
        return Pool(f"pyarrow's memory pool ({backend})", float(pool.bytes_allocated()),
                    float(pool.max_memory()),
                    "pyarrow.default_memory_pool().release_unused(), or "
                    "ARROW_DEFAULT_MEMORY_POOL=system to use glibc's malloc")
    except Exception:  # a pyarrow without these calls: it says nothing
        return None


#: The readers of every allocator this plugin knows to ask.
READERS: tuple[Callable[[], Pool | None], ...] = (_pyarrow,)


def pools() -> tuple[Pool, ...]:
    """The figures of the allocators in use in this process that say them."""
    return tuple(pool for pool in (read() for read in READERS) if pool is not None)
