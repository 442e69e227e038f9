"""The growth evidence as typed records: what evidence/ finds, render/ shows and the JSON
report carries, key for key (each a TypedDict: a plain dict at run time, so the JSON is the
records themselves). A key that is not always there sits in a ``total=False`` part. Also
how much a list under one row holds, and what is too small to name."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

#: Most rows of a list under one row of the evidence, largest first: the native stacks of a
#: line, the types that get a retaining path (each a search of the heap), the other lines of
#: a function beside the one that rose most, the lines of one phase's rise. The evidence's
#: own lists are probes/records.TOP long.
FEW = 3
#: A line or a kind of memory too small to name: under this share of the rise (or the peak)
#: it is part of, and under SMALL_BYTES; such parts are summed up with the rest. A data object
#: under SMALL_BYTES is counted with the rest, not told apart by its identity (census.Large).
SMALL_SHARE = 0.01
SMALL_BYTES = 64 * 1024
#: A share of a whole that is as good as none of it (and all but it, as good as all): what a
#: line still held when the call returned, of its bytes at the peak (transient; retained);
#: what memray saw of the native heap the reading counted (it does not see these
#: allocations); memory reused or never touched beside a rise (not worth a remark); a part
#: over its whole by as much (two runs' slopes) reads as all of it.
SLIVER = 0.1

if TYPE_CHECKING:  # the probes' own records, read where a failing probe's source told them
    from pytest_membudget.evidence.peakrecords import NativeStacks
    from pytest_membudget.probes.cuda.peak import PeakBlocks, ReservedAtPeak
    from pytest_membudget.probes.cuda.snapshot import BlockRow
    from pytest_membudget.probes.proclog import ProcessTable
    from pytest_membudget.probes.records import CupyEvidence, JaxEvidence


class _Site(TypedDict):
    file: str
    line: int
    bytes: int
    blocks: int
    per_iter: float


class Site(_Site, total=False):
    """A line whose allocations grew over the traced rerun (evidence/sites.py)."""

    #: The user's own line beneath a library's, while the rerun looks for it (file, line);
    #: the report carries it as ``via_file`` and ``via_line``.
    via: tuple[str, int] | None
    code: str
    via_file: str
    via_line: int
    via_code: str


class _CacheInfo(TypedDict):
    name: str
    kind: str
    currsize: int
    maxsize: int


class CacheInfo(_CacheInfo, total=False):
    """A bounded cache on a retaining path (evidence/caches.py), with how fast it fills once
    that was read: entries gained per call and calls until full (None: not filling)."""

    per_call: float
    calls_to_full: int | None


class FillRate(TypedDict):
    currsize: int
    maxsize: int
    per_call: float
    calls_to_full: int | None


class _RootInfo(TypedDict):
    kind: str
    name: str


class RootInfo(_RootInfo, total=False):
    """Where a retaining path starts (evidence/labels.py): its kind, its name, and where in
    the source it is."""

    file: str
    line: int


class PathStep(TypedDict):
    step: str
    type: str


class _RetainingPath(TypedDict):
    root: RootInfo
    steps: list[PathStep]


class RetainingPath(_RetainingPath, total=False):
    """A path from a root down to an object of a type that grew, and the first bounded cache
    on it."""

    cache: CacheInfo


class _PathEntry(TypedDict):
    type: str
    count: int


class PathEntry(_PathEntry, total=False):
    """A type that grew, with its retaining path, or why none was found."""

    path: RetainingPath
    reason: str


class TypeGrowth(TypedDict):
    """A type whose objects multiplied over the rerun (evidence/census.py)."""

    type: str
    count: int
    per_iter: float


class ThreadLeft(TypedDict):
    """A thread the rerun started that is still alive."""

    name: str
    daemon: bool
    target: str


class _TaskGroup(TypedDict):
    coroutine: str
    count: int
    per_iter: float


class TaskGroup(_TaskGroup, total=False):
    """Tasks the rerun left pending, grouped by what they run and where they were created
    (evidence/tasks.py)."""

    defined_file: str
    defined_line: int
    waiting_file: str
    waiting_line: int
    created_file: str
    created_line: int
    created_function: str
    created_code: str


#: The count after the rerun listed only the atoms ``in`` the new containers, the whole listing
#: before it having taken ``whole_seconds`` (evidence/census.py).
AtomsListed = TypedDict("AtomsListed", {"in": str, "whole_seconds": float})


class _Explained(TypedDict):
    probe: str
    slope: float
    traced: float
    share: float


class Explained(_Explained, total=False):
    """The share of a failing slope that the traced Python allocations explain, and what the
    rest is: "python", "native", "free" or "unknown" (evidence/share.py; always there);
    ``native``: the slope of native memory in use beside it."""

    native: float
    rest: str


class GrowthEvidence(TypedDict, total=False):
    """The evidence of a failing growth budget, as the result and the JSON carry it: the
    traced rerun's findings (evidence/rerun.py), what the failing probes' own sources tell
    (the CUDA allocator's history and blocks, the process tree's tables), what the judge made
    of the caches (``held``), or why there is none (``error``, ``same_as``)."""

    iterations: int
    sites: list[Site]
    heap_growth: int
    traced_per_iter: float
    paths: list[PathEntry]
    types: list[TypeGrowth]
    atoms_listed: AtomsListed
    threads: list[ThreadLeft]
    fds: list[str]
    tasks: list[TaskGroup]
    bounded: list[CacheInfo]
    native: NativeStacks
    seconds: float
    explained: Explained
    held: list[str]
    error: str
    same_as: str
    processes: dict[str, ProcessTable]
    #: The CUDA allocator's (probes/cuda/history.py's CudaEvidence): the blocks the window
    #: left live, or why there are none.
    cuda_history: str
    cuda_blocks: list[BlockRow]
    cuda_reserved: ReservedAtPeak
    cuda_peak: PeakBlocks
    #: The device stacks' own books (probes/jax, probes/cupy): arrays and compilations,
    #: pools' live blocks.
    jax: JaxEvidence
    cupy: CupyEvidence
