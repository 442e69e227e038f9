"""One moment's figures of the process's memory, as probes/memory.py reads them: the record
the peak watch keeps and the footprint evidence splits into kinds (evidence/composition.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

NAN = math.nan


@dataclass(frozen=True)
class MemoryReading:
    """One moment's figures, in bytes (NaN where this system cannot tell)."""

    rss: float
    anon: float = NAN
    file: float = NAN
    shmem: float = NAN
    threads: int = 0
    malloc_used: float = NAN
    malloc_free: float = NAN
    #: Free bytes at the top of glibc's main heap that malloc_trim would hand back at once.
    malloc_trimmable: float = NAN
    pymalloc_used: float = NAN
    pymalloc_free: float = NAN
    #: tracemalloc's traced bytes and its own tables (NaN and 0 when it is not tracing).
    traced: float = NAN
    tracer: float = 0.0
    stacks_resident: float = NAN
    stacks_reserved: float = NAN
    stacks_counted: int = 0
    #: Memory blocks the interpreter has allocated (sys.getallocatedblocks): every object.
    blocks: float = NAN
    #: The allocators libraries bring (probes/allocators.py): bytes in use, and their own
    #: high-water mark (0 where none says it).
    pooled: float = 0.0
    pooled_peak: float = 0.0
    #: Those allocators' names, each with what to do about the free memory it keeps.
    pools: tuple[tuple[str, str], ...] = ()
