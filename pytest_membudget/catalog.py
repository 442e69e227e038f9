"""What each probe measures, in which unit, and how finely. Pure data: no probe is imported."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProbeInfo:
    name: str
    #: "bytes", "count" or "seconds": decides which units a budget may be written in.
    kind: str
    unit: str
    #: Total growth over the judged tail below which a slope is not called growth: the
    #: probe's own granularity (pages for RSS), not a tolerance for leaks.
    resolution: float
    #: Module under pytest_membudget.probes that implements the probe.
    module: str
    description: str
    #: Slowest growth per iteration an auto run must be able to see before it may pass: it
    #: does not stop on a pass until its judged tail is long enough (resolution / floor) for
    #: growth at this rate to reach the resolution. 0: no such requirement.
    floor: float = 0.0


PAGE = 4096
#: A flat RSS over a short window says little: eight pages of resolution over a 32-iteration
#: tail hide 1 KiB/iter. Auto runs on rss/uss go on until a 256 B/iter leak would show
#: (a 128-iteration tail); the detection benchmark (bench/detection) measures what it costs.
RSS_FLOOR = 256.0

PROBES: dict[str, ProbeInfo] = {
    p.name: p
    for p in (
        ProbeInfo("rss", "bytes", "B", 8 * PAGE, "rss",
                  "resident set size of the process (all native and Python memory)",
                  floor=RSS_FLOOR),
        ProbeInfo("uss", "bytes", "B", 8 * PAGE, "rss",
                  "unique set size: memory that would be freed if the process ended",
                  floor=RSS_FLOOR),
        ProbeInfo("heap", "bytes", "B", 4096, "heap",
                  "Python allocations traced by tracemalloc"),
        ProbeInfo("malloc", "bytes", "B", 4096, "native",
                  "bytes in use in glibc's malloc (mallinfo2): native memory, exactly"),
        ProbeInfo("gc_objects", "count", "objects", 8, "gcobjects",
                  "objects tracked by the garbage collector"),
        ProbeInfo("threads", "count", "threads", 1, "osres",
                  "operating-system threads of the process"),
        ProbeInfo("fds", "count", "fds", 1, "osres",
                  "open file descriptors (handles on Windows)"),
        ProbeInfo("iter_time", "seconds", "s", 0.0, "timing",
                  "wall time of one iteration of the workload"),
        # CUDA caching allocator, per process (torch.cuda.memory_stats). Blocks are rounded
        # to 512 bytes; the resolution is eight of them.
        ProbeInfo("cuda_allocated", "bytes", "B", 4096, "cuda",
                  "bytes in tensors (allocated_bytes.all.current)"),
        ProbeInfo("cuda_reserved", "bytes", "B", 2 * 1024**2, "cuda",
                  "bytes the caching allocator holds from the device (reserved_bytes)"),
        ProbeInfo("cuda_small_pool", "bytes", "B", 4096, "cuda",
                  "active bytes in the small pool (blocks of 1 MiB or less)"),
        ProbeInfo("cuda_large_pool", "bytes", "B", 4096, "cuda",
                  "active bytes in the large pool (blocks over 1 MiB)"),
        ProbeInfo("cuda_small_blocks", "count", "blocks", 1, "cuda",
                  "active blocks in the small pool"),
        ProbeInfo("cuda_large_blocks", "count", "blocks", 1, "cuda",
                  "active blocks in the large pool"),
        ProbeInfo("cuda_segments", "count", "segments", 1, "cuda",
                  "segments reserved from the device (cudaMalloc calls alive)"),
        ProbeInfo("cuda_alloc_retries", "count", "retries", 1, "cuda",
                  "allocations that had to free cached blocks and retry: memory pressure"),
        ProbeInfo("cuda_device_used", "bytes", "B", 2 * 1024**2, "cuda",
                  "bytes used on the whole device by every process (cudaMemGetInfo)"),
    )
}

#: iter_time's resolution is relative: growth below this fraction of the median iteration
#: time over the judged tail is noise of the machine, not a slowing loop.
ITER_TIME_RELATIVE_RESOLUTION = 0.10
