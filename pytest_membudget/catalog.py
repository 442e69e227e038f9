"""What each probe measures, in which unit, and how finely: the one place a probe's facts are
written. Pure data: no probe is imported."""

from __future__ import annotations

import math
import mmap
from dataclasses import dataclass
from typing import Any

from pytest_membudget.vocabulary import LeftBehind, ProbeKind

#: Growth in the window (floor to floor) after which a failure confirmed at twice its length
#: stands without running on to the shortest verdict: a fast leak must not be run into memory
#: exhaustion or the descriptor limit to prove a point already made. Objects and memory
#: blocks, which a cache fills by the hundred, count as ample at about 64 MiB's worth
#: (OBJECTS_AMPLE).
AMPLE_GROWTH: dict[ProbeKind, float] = {
    ProbeKind.BYTES: 64 * 1024**2,
    ProbeKind.COUNT: 64.0,
    ProbeKind.SECONDS: math.inf,
}


@dataclass(frozen=True)
class ScreenRule:
    """How the sweep's screen reads one probe's deltas (judge/screen.py): ``every``: each delta
    must be at least ``least`` (CPython's leak hunter's rule); otherwise the net growth over
    the screen must be (threads and descriptors, which leak on some calls only)."""

    least: float
    every: bool = True


@dataclass(frozen=True)
class ProbeInfo:
    name: str
    kind: ProbeKind
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
    #: A resolution relative to the series itself: growth below this fraction of the median
    #: over the judged tail is noise of the machine (iter_time). 0: only ``resolution``.
    relative_resolution: float = 0.0
    #: Whether a failure of this probe is explained by a rerun under tracemalloc (allocation
    #: sites and object types that grew): true for the probes that memory objects move.
    traced_evidence: bool = False
    #: Exact probes that see, byte by byte or block by block, growth this coarse probe only
    #: sees in steps: suggested when its budget ends inconclusive.
    exact: tuple[str, ...] = ()
    #: What an exact probe sees, in a few words (for the suggestion of ``exact``).
    sees: str = ""
    #: Exact probes sampled beside this coarse one in auto runs, unreported: while one of
    #: them grows clearly, faster than the budget allows, a flat reading of this probe is no
    #: pass (see judge.witness.hold_back). Empty for none.
    witnesses: tuple[str, ...] = ()
    #: As a witness: the growth over the judged tail below which this probe's rise is its own
    #: wiggle, not a reason to hold a pass back (0: the probe witnesses nothing).
    witness_resolution: float = 0.0
    #: Bytes that one unit of this probe stands for at least (a block of the interpreter is
    #: 16 bytes or more): a budget in bytes per iteration is that many units' worth.
    least_bytes: float = 1.0
    #: Whether the probe is blind to native memory (C extensions' malloc, mapped files): a
    #: test budgeted only on such probes has RSS watched beside them, for a note.
    blind_to_native: bool = False
    #: The ample growth of this probe, where its kind's (AMPLE_GROWTH) does not fit: 64
    #: threads prove a leak, 64 objects do not.
    ample: float | None = None
    #: Whether the plugin's own work in the process moves this probe (it reads the memory
    #: and objects of this process): what a judgement inside the window leaves behind is
    #: taken out of its series (measure.probeset.ProbeSet.rebaser).
    own_memory: bool = False
    #: The device stack the probe reads ("cuda", "jax", "cupy", "xpu", "mps"), or "" for the
    #: host process's own memory: a failing peak or rise of such a probe is told by its own
    #: source (the allocator's books, the arrays alive), not by the host's peak watch, and
    #: its growth gets no native stacks.
    stack: str = ""
    #: Whether the probe needs an accelerator (a GPU, a TPU, an XPU): where none is, its
    #: budget is skipped with the reason, or failed under --membudget-require-cuda.
    needs_device: bool = False
    #: Fewest iterations a sample of it spans where the window has room (measure/stride.py):
    #: iter_cpu_time's sample is the cheapest of them (probes/timing.py), so that an
    #: iteration of milliseconds is not sampled on its own, and a neighbour's context switch,
    #: which only adds, is left out unless it hits every one.
    least_stride: int = 1
    #: How far this probe's slope for unchanged code moves between runs beyond its bounds,
    #: as a share of the baseline's upper bound: the default tolerance of the comparison
    #: with a baseline (judge/tolerance.py).
    run_spread: float = 0.25
    #: Growth over a run's window, in the probe's unit, that this probe can miss in one run and
    #: see in the next of the same code: the comparison with a baseline asks a regressed slope
    #: to grow by more than this over the window (judge/regression.py).
    run_floor: float = 0.0
    #: Whether it sees native memory as well as Python's, in bytes of this process: a failure
    #: of it gets the share of its slope that the traced Python allocations explain
    #: (evidence/share.py), and that share decides whether a cache the evidence found still
    #: filling holds its growth (judge/explain.py).
    python_share: bool = False
    #: Whether its growth may be a fill that slows down (judge/fill.py): a failure of such
    #: probes alone is seen again at four times its length before it stands, and each time
    #: must keep at least this share of its first slope; a screen's growth of one of them
    #: alone gets a second look. 0: its growth never reads as a fill.
    fill_keeps: float = 0.0
    #: How the sweep's screen reads it; None: the screen does not sample it.
    screen: ScreenRule | None = None
    #: Whether it counts native memory in use exactly: what the traced Python allocations
    #: leave of its growth is native, and its slope beside a coarser probe tells native
    #: growth from memory the allocator keeps free (evidence/share.py). A screen that reads
    #: it hands no free memory back before its window: it sees reuse of free memory exactly.
    native_in_use: bool = False
    #: Whether a failure of it that tracemalloc saw no Python growth behind gets the native
    #: stacks of a short rerun under memray (evidence/native.py): native memory of this
    #: process that memray's hooks see.
    native_stacks: bool = False
    #: What the evidence lists of what a failure of it left behind, under the evidence's key
    #: of that name (threads, descriptors, tasks); None: nothing of its own.
    evidence_list: LeftBehind | None = None
    #: Whether it is RSS or a part of it, what the kernel kills by: its footprint budgets set
    #: the peak watch's ceiling (judge/spec.py).
    resident: bool = False

    @property
    def ample_growth(self) -> float:
        return self.ample if self.ample is not None else AMPLE_GROWTH[self.kind]

    @property
    def coarse(self) -> bool:
        """Whether it sees growth only in steps (pages): a short flat window proves little,
        so an auto pass waits for a tail long enough to see growth at ``floor``."""
        return self.floor > 0


#: The system's page: RSS and USS move in whole pages.
PAGE = mmap.PAGESIZE
#: The slowest growth a coarse probe's auto pass must be able to see (catalog ``floor``): a
#: flat RSS over a short window says little (eight pages over a 32-call tail hide 1 KiB a
#: call), so auto runs on rss and uss go on until growth of 256 B a call would show.
RSS_FLOOR = 256.0
#: About 64 MiB of objects or blocks of 64 bytes: the ample growth of a count of objects.
OBJECTS_AMPLE = 1_000_000.0
#: The probe sampled, unreported, beside budgets that are all blind to native memory: its
#: clear growth becomes a note, never a failure.
NATIVE_WATCH = "rss"
#: The run spread (ProbeInfo.run_spread) of the probes that count pages. Pages count what was
#: touched, not what was allocated: a zeroed buffer from fresh memory is not resident until it
#: is written, one from reused memory is, so a leak of zeroed buffers reads at a rate that
#: depends on what the process freed before, in each run anew: a new bound within this
#: share of the baseline's is the same rate.
PAGE_RUN_SPREAD = 0.5
#: How far the pages a process holds may differ from the memory it allocates as a matter of
#: course: memory it freed before, kept by its allocators, serves new allocations without a
#: new page, and memory allocated is not resident until it is touched. So growth up to this
#: much can read as none over a whole window in one run and at its rate in the next (the run
#: floor, ProbeInfo.run_floor, of the probes that count pages), and memory reused or left
#: untouched is worth a line of a footprint's evidence only from this much on
#: (render/footprint.py). The plugin's own work (a capture, a sample, a judgement between two
#: calls) moves the pages by less: a move past it while the plugin worked is the workload's
#: (probes/memory.py retakes such a capture; measure/lines.py gives such a rise to the call).
PAGE_SLACK = 1024.0 * 1024.0

B, COUNT, SECONDS = ProbeKind.BYTES, ProbeKind.COUNT, ProbeKind.SECONDS
#: Counts of the device probes, by their unit.
BLOCKS, SEGMENTS, RETRIES = "blocks", "segments", "retries"
#: A device probe's facts as the tables below write them: (name after the stack's prefix,
#: unit (B for bytes, else the count's unit), resolution, what it reads[, ample growth]).
DeviceFacts = tuple[Any, ...]


def _device(stack: str, module: str, facts: tuple[DeviceFacts, ...], *,
            needs_device: bool = True, traced: bool = True) -> list[ProbeInfo]:
    """The probes of one device stack, named ``<stack>_<name>``."""
    found = []
    for name, unit, resolution, description, *ample in facts:
        kind = B if unit is B else COUNT
        found.append(ProbeInfo(f"{stack}_{name}", kind, "B" if unit is B else unit, resolution,
                               module, description, traced_evidence=traced,
                               ample=ample[0] if ample else None, stack=stack,
                               needs_device=needs_device))
    return found


#: The figures torch's caching allocators book under the same keys on every device (CUDA's,
#: XPU's, read through torch.accelerator.memory): blocks rounded to 512 bytes.
_TORCH_POOLS: tuple[DeviceFacts, ...] = (
    ("allocated", B, 4096, "bytes in tensors (allocated_bytes.all.current)"),
    ("reserved", B, 2 * 1024**2,
     "bytes the caching allocator holds from the device (reserved_bytes.all.current)"),
    ("small_pool", B, 4096, "active bytes in the small pool (blocks of 1 MiB or less)"),
    ("large_pool", B, 4096, "active bytes in the large pool (blocks over 1 MiB)"),
    ("small_blocks", BLOCKS, 1, "active blocks in the small pool", 100_000.0),
    ("large_blocks", BLOCKS, 1, "active blocks in the large pool"),
    ("segments", SEGMENTS, 1, "segments the allocator reserved from the device"),
    ("alloc_retries", RETRIES, 1,
     "allocations that had to free cached blocks and retry: memory pressure"),
)

DEVICE_PROBES: list[ProbeInfo] = [
    # JAX: the arrays alive in the process (jax.live_arrays(): the default backend's, the
    # CPU's too) and the compilations of the process (jax.monitoring's compile events).
    *_device("jax", "jax.probe", (
        ("arrays", "arrays", 4, "live jax.Arrays of the default backend (jax.live_arrays())"),
        ("array_bytes", B, 256,
         "bytes of the live jax.Arrays' elements (their logical size, not the device's "
         "padding or the copies of a replicated array)"),
        ("compiles", "compiles", 1,
         "XLA compilations in the process (jax.monitoring's backend compile events): a "
         "jitted function that compiles again per call grows it"),
    ), needs_device=False, traced=False),
    # JAX's allocator on a GPU or TPU (Device.memory_stats(), summed over the local
    # devices of the default backend); JAX on CPU keeps no such figures.
    *_device("jax", "jax.probe", (
        ("device_used", B, 4096,
         "bytes in use in JAX's device allocator (memory_stats bytes_in_use): arrays and "
         "the buffers of running computations"),
        ("device_reserved", B, 2 * 1024**2,
         "bytes JAX's allocator holds from the device (memory_stats pool_bytes, else "
         "bytes_reserved): with preallocation, most of the device from the start"),
    ), traced=False),
    # torch's allocators of other accelerators, through torch.accelerator.memory.
    *_device("xpu", "accelerator", _TORCH_POOLS),
    *_device("mps", "accelerator", (
        ("allocated", B, 4096, "bytes in tensors (torch.mps.current_allocated_memory, or "
         "allocated_bytes.all.current where torch wires MPS to the generic allocator)"),
        ("reserved", B, 2 * 1024**2, "bytes the MPS allocator's heaps hold "
         "(reserved_bytes.all.current; torch with the generic allocator only)"),
        ("driver", B, 2 * 1024**2, "bytes the Metal driver holds for the process "
         "(torch.mps.driver_allocated_memory): tensors, the allocator's cache and the rest"),
    )),
    # CuPy's memory pools (cupy.get_default_memory_pool()): blocks rounded to 512 bytes.
    *_device("cupy", "cupy.probe", (
        ("used", B, 4096, "bytes of the device pool in use by arrays (used_bytes())"),
        ("total", B, 4096, "bytes the device pool holds from the device, in use or free "
         "(total_bytes())"),
        ("free_blocks", BLOCKS, 8, "free blocks cached in the device pool (n_free_blocks())"),
        ("pinned_free_blocks", BLOCKS, 8,
         "free blocks cached in the pinned host pool (n_free_blocks())"),
    ), traced=False),
]

PROBES: dict[str, ProbeInfo] = {
    p.name: p
    for p in (
        # The screen's catch-all for memory the exact counters do not see (mmap, other
        # allocators): every delta at least a page.
        ProbeInfo("rss", B, "B", 8 * PAGE, "rss",
                  "resident set size of the process (all native and Python memory)",
                  floor=RSS_FLOOR, traced_evidence=True, exact=("py_blocks", "malloc"),
                  witnesses=("py_blocks", "malloc"), own_memory=True, python_share=True,
                  screen=ScreenRule(float(PAGE)), native_stacks=True, resident=True,
                  run_spread=PAGE_RUN_SPREAD, run_floor=PAGE_SLACK),
        ProbeInfo("uss", B, "B", 8 * PAGE, "rss",
                  "unique set size: memory that would be freed if the process ended",
                  floor=RSS_FLOOR, traced_evidence=True, exact=("py_blocks", "malloc"),
                  witnesses=("py_blocks", "malloc"), own_memory=True, python_share=True,
                  native_stacks=True, resident=True,
                  run_spread=PAGE_RUN_SPREAD, run_floor=PAGE_SLACK),
        ProbeInfo("heap", B, "B", 4096, "heap",
                  "Python allocations traced by tracemalloc", traced_evidence=True,
                  blind_to_native=True, own_memory=True),
        # As a witness, glibc's bytes in use wiggle by up to tens of KB over a clean tail as
        # free lists fill and drain; a leak of 64 B a call still passes 16 KiB within the
        # first window.
        ProbeInfo("malloc", B, "B", 4096, "malloc",
                  "bytes in use in glibc's malloc (mallinfo2): native memory, exactly",
                  traced_evidence=True, sees="native memory",
                  witness_resolution=16 * 1024.0, own_memory=True,
                  python_share=True, fill_keeps=0.75, screen=ScreenRule(1.0),
                  native_in_use=True, native_stacks=True),
        # The interpreter's free lists and caches fill by up to a few hundred blocks in a
        # clean loop, about a block per few hundred calls; a leak of a block a call passes 64
        # within a 64-call tail. As a witness, four times that: the runner's own judgements
        # leave a few blocks in numpy's caches at each checkpoint. A block is 16 bytes or
        # more (pymalloc's alignment on 64-bit builds).
        ProbeInfo("py_blocks", COUNT, "blocks", 64, "pyblocks",
                  "memory blocks allocated by the interpreter (sys.getallocatedblocks): every "
                  "Python object, tracked by the garbage collector or not", traced_evidence=True,
                  sees="Python objects", ample=OBJECTS_AMPLE,
                  witness_resolution=256, least_bytes=16,
                  blind_to_native=True, own_memory=True, screen=ScreenRule(1.0)),
        ProbeInfo("gc_objects", COUNT, "objects", 8, "gcobjects",
                  "objects tracked by the garbage collector", traced_evidence=True,
                  ample=OBJECTS_AMPLE, blind_to_native=True, own_memory=True),
        ProbeInfo("threads", COUNT, "threads", 1, "osres",
                  "operating-system threads of the process",
                  screen=ScreenRule(1.0, every=False), evidence_list=LeftBehind.THREADS),
        ProbeInfo("fds", COUNT, "fds", 1, "osres",
                  "open file descriptors (handles on Windows)",
                  screen=ScreenRule(1.0, every=False), evidence_list=LeftBehind.FDS),
        ProbeInfo("asyncio_tasks", COUNT, "tasks", 1, "tasks",
                  "pending tasks of the running asyncio event loop (async tests only)",
                  evidence_list=LeftBehind.TASKS),
        # The test's descendant processes, from /proc (Linux): probes/proctree.py.
        ProbeInfo("children", COUNT, "processes", 1, "proctree",
                  "live descendant processes of the test's process (children, their children, "
                  "...); exited ones, zombies included, are not counted"),
        ProbeInfo("children_uss", B, "B", 8 * PAGE, "proctree",
                  "unique set size summed over the live descendant processes: memory they "
                  "hold that no other process maps (not what they still share with the "
                  "parent)", floor=RSS_FLOOR, native_stacks=True, run_spread=PAGE_RUN_SPREAD,
                  run_floor=PAGE_SLACK),
        ProbeInfo("tree_pss", B, "B", 8 * PAGE, "proctree",
                  "proportional set size of the test's process plus its live descendants: "
                  "the job's footprint, each shared page split among its sharers (anonymous "
                  "and shared memory; file pages left out)",
                  floor=RSS_FLOOR, traced_evidence=True, native_stacks=True,
                  run_spread=PAGE_RUN_SPREAD, run_floor=PAGE_SLACK),
        ProbeInfo("iter_time", SECONDS, "s", 0.0, "timing",
                  "wall time of one iteration of the workload", relative_resolution=0.10),
        # Read only where budgeted: one clock read per iteration and one per sample.
        ProbeInfo("iter_cpu_time", SECONDS, "s", 0.0, "timing",
                  "CPU time of one iteration in the thread that runs the workload, the least "
                  "since the previous sample: the loop's own work, whatever other processes "
                  "take (not work done in other threads or processes, nor time spent "
                  "waiting)", relative_resolution=0.10, least_stride=4),
        # CUDA caching allocator, per process (torch.cuda.memory_stats). Blocks are rounded
        # to 512 bytes; the resolution is eight of them.
        *_device("cuda", "cuda.probe", (
            ("allocated", B, 4096, "bytes in tensors (allocated_bytes.all.current)"),
            ("reserved", B, 2 * 1024**2,
             "bytes the caching allocator holds from the device (reserved_bytes)"),
            ("small_pool", B, 4096, "active bytes in the small pool (blocks of 1 MiB or less)"),
            ("large_pool", B, 4096, "active bytes in the large pool (blocks over 1 MiB)"),
            # blocks of 512 B to 1 MiB: 64 say little
            ("small_blocks", BLOCKS, 1, "active blocks in the small pool", 100_000.0),
            ("large_blocks", BLOCKS, 1, "active blocks in the large pool"),
            ("segments", SEGMENTS, 1,
             "segments reserved from the device (cudaMalloc calls alive)"),
            ("alloc_retries", RETRIES, 1,
             "allocations that had to free cached blocks and retry: memory pressure"),
            ("device_used", B, 2 * 1024**2,
             "bytes used on the whole device by every process (cudaMemGetInfo)"),
        )),
        *DEVICE_PROBES,
    )
}

#: The probe every phase reads, budgeted or not: a phase's table is RSS.
PHASE_PROBE = "rss"
