"""The footprint evidence as typed records: what evidence/peak.py, evidence/composition.py,
evidence/native.py and measure/footprint.py find at a failing peak or rise, what the peak
watch's lines are (measure/lines.py), what render/ shows and the JSON report carries, key
for key (each a TypedDict: a plain dict at run time, so the JSON is the records
themselves). A key that is not always there sits in a ``total=False`` part. The growth
evidence's records are in evidence/records.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # the probes' own records, which a failing device probe's source adds
    from pytest_membudget.probes.cuda.peak import PeakBlocks, ReservedAtPeak
    from pytest_membudget.probes.records import JaxDevicePeak


class OtherLine(TypedDict):
    """Another line of a function the watch saw rise, beside the one that rose most."""

    line: int
    bytes: int


class _WatchedLine(TypedDict):
    bytes: int


class WatchKeys(TypedDict, total=False):
    """What the peak watch (measure/watch.py) tells of a line it saw run: its function and
    source text; ``inner_*``: the frame beneath it (a library's) where that is another;
    ``waiting``: the thread waited for others there; ``waited_*``: where the measured thread
    waited while other threads ran this line (a pool's workers); ``other_lines``: the
    function's other lines that rose; ``threads``: the threads it started."""

    function: str
    code: str
    inner_file: str
    inner_line: int
    inner_function: str
    waiting: bool
    waited_file: str
    waited_line: int
    other_lines: list[OtherLine]
    threads: int


class WatchedLine(_WatchedLine, WatchKeys, total=False):
    """A line of the user's code the peak watch saw run: the bytes RSS rose while it ran,
    or, with ``threads``, the threads it started (``bytes`` is then that count too)."""

    file: str
    line: int


class _PeakLine(TypedDict):
    file: str
    line: int
    bytes: float
    source: str


class PeakLine(_PeakLine, WatchKeys, total=False):
    """A line of the evidence at the peak (evidence/peak.py), by ``source``: "traced" (what
    tracemalloc saw alive at the traced peak: ``count`` blocks, ``retained`` bytes of them
    left at the call's end), "rose" (where the watch saw RSS rise: ``rose_bytes``, with the
    watch's line's keys), or "threads" (a line that started threads, whose stacks hold
    ``bytes``). ``state``: transient, retained or partly retained, of the line or, where
    ``state_of`` is "call", of the call as a whole; ``code``, ``via_code``: the source
    text of the line and of the user's line beneath a library's (``via_*``);
    ``in_threads``: allocated in threads a library ran for the user's line."""

    count: int
    retained: int
    traced_bytes: float
    rose_bytes: float
    state: str
    state_of: str
    via_file: str
    via_line: int
    via_code: str
    in_threads: bool


class MoreLines(TypedDict):
    """The lines not listed (under the least worth naming, or past the list's length): how
    many, and their bytes together."""

    lines: int
    bytes: int


class _TracedCall(TypedDict):
    traced: float
    lines: list[PeakLine]
    copies: int
    copy_seconds: float


class TracedCall(_TracedCall, total=False):
    """One more call under tracemalloc (evidence/peak.py's traced_call): its traced peak,
    the lines alive there, the copies of its traces and their seconds; ``cut``: its tracing
    stopped at the deadline; the longest stretch the interpreter was held and the call's
    seconds (measure/footprint.py); ``last_rise``: its traced peak was its last rise (read
    where the rerun did not rise as the run did)."""

    cut: bool
    held: float
    call_seconds: float
    last_rise: bool


class TracedCost(TypedDict):
    """What one more traced call would cost, where it was not made (measure/footprint.py's
    traced_cost): its estimated seconds, the call's, its new interpreter blocks at the peak,
    the longest stretch it held the interpreter, and the footprint evidence's seconds."""

    seconds: float
    call_seconds: float
    blocks: int
    held: float
    budget: float


class CallStopped(TypedDict):
    """The call was not traced: the run was stopped at the ceiling."""

    stopped: bool


class CensusSummary(TypedDict, total=False):
    """What the evidence says of its traced call (evidence/peak.py's census_summary): its
    traced peak, how much of it the lines hold (``captured``), its copies, whether it was cut
    and how long the interpreter was held; without one, the new interpreter blocks at the
    peak (``skipped_blocks``) and why none was made (``skipped``)."""

    skipped_blocks: int | None
    traced_peak: float
    captured: int
    copies: int
    copy_seconds: float
    cut: bool
    held: float
    call_seconds: float
    skipped: TracedCost | CallStopped


class PoolName(TypedDict):
    """A library's own allocator, and what to do about the memory it keeps."""

    name: str
    remedy: str


class _Pooled(TypedDict):
    in_use: int
    kept: int
    by: list[PoolName]


class Pooled(_Pooled, total=False):
    """Of a rise, what the allocators libraries bring hold in use and keep free, and what was
    left kept free at the call's end (``kept_after``)."""

    kept_after: int


class _Composition(TypedDict):
    rss_start: float
    rss_peak: float
    rise: float
    #: Each kind's bytes (evidence/composition.py's KINDS).
    kinds: dict[str, float]
    dominant: str | None
    major: list[str]
    traced: bool
    large_counted: bool
    threads: list[int]


class Composition(_Composition, total=False):
    """What a rise of resident memory is made of (evidence/composition.py's composition):
    the RSS at both readings, the rise by kind, the dominant and major kinds, and the figures
    beside them. A phase that read none has an empty one."""

    missed: int
    peak_python: int
    traced_least: int
    untouched: int
    reused: int
    pooled: Pooled
    stacks_reserved: int
    malloc_trimmable: int


class NativeFrame(TypedDict):
    """A frame of a native stack, or the user's Python line beneath it."""

    function: str
    file: str
    line: int


class NativeStack(TypedDict):
    """A native stack under memray (evidence/native.py): what was allocated there, its native
    frames (innermost first) and the user's Python line below them."""

    bytes: int
    allocations: int
    allocator: str
    frames: list[NativeFrame]
    python: NativeFrame | None


class NativeStacks(TypedDict, total=False):
    """The native stacks of a growth tracemalloc did not see (evidence/native.py's
    native_stacks): the iterations run under memray and the stacks of what they left
    allocated, or why there are none (``reason``), or why memray cannot run (``missing``)."""

    iterations: int
    stacks: list[NativeStack]
    reason: str
    missing: str


class NativeLine(TypedDict):
    """The native allocations alive at the peak under one user line (the innermost native
    frame where none is under them), and the native frame that allocated most of them."""

    python: NativeFrame | None
    bytes: int
    allocations: int
    native: NativeFrame


class Unplaced(TypedDict):
    """Native allocations at the peak with no line of the user's code on their stack."""

    allocations: int
    bytes: int


class NativeSkipped(TypedDict):
    """Why no call was made under memray: what it would cost, and whether memray's first
    start in the process (the costly one) was part of it."""

    seconds: float
    call_seconds: float
    first_use: bool


class NativePeak(TypedDict, total=False):
    """The native allocations alive at the peak of one more call under memray
    (evidence/native.py's native_at_peak): memray's peak, its lines, the rest; or the word
    that memray does not see them (``unseen``: the native heap the reading counted), or why
    none was recorded (``skipped``, ``missing``)."""

    missing: str
    peak: int
    lines: list[NativeLine]
    more: MoreLines
    unplaced: Unplaced
    seconds: float
    reason: str
    unseen: int
    skipped: NativeSkipped


class KeptType(TypedDict):
    """An object type the run left alive, by its count of new objects."""

    type: str
    count: int


class KeptTypes(TypedDict):
    """What a run left alive (measure/footprint.py's kept_types): the object types not there
    at its start, the bytes of the large data objects it kept, the bytes of the objects it
    made and kept, and the seconds the count took."""

    rows: list[KeptType]
    large_bytes: int
    new_bytes: int
    seconds: float


class WatchTimeline(TypedDict):
    """The peak watch's timeline, thinned (measure/footprint.py's timeline): seconds, RSS and
    tracemalloc's bytes at each point kept."""

    seconds: list[float]
    rss: list[float]
    traced: list[float]


class WarmupFigures(TypedDict):
    """Where a warm-up ran before the measured window: the RSS at the run's start, the
    highest it reached and the RSS where the window began, and when that was (seconds from
    the watch's start)."""

    rss_start: int
    highest: int
    rss_end: int
    window_at: float


class PeakEvidence(TypedDict, total=False):
    """The evidence of a failing peak or rise budget, as the result and the JSON carry it
    (measure/footprint.py's peak_evidence and stopped_evidence): the probe and its rise, the
    lines alive at the peak and the rest, the composition there and what was left of it at
    the call's end (``left``, by kind), the traced call's summary, the native allocations at
    the peak, the types the run left alive, the watch's timeline, when the peak came
    (``peak_at``) and the warm-up's figures, the seconds it took, whether the run was
    stopped at the ceiling; and what the failing device probes' sources tell of their peak
    (the CUDA allocator's, JAX's)."""

    probe: str
    rise: float
    lines: list[PeakLine]
    more: MoreLines
    composition: Composition
    left: dict[str, float]
    census: CensusSummary
    native: NativePeak
    types: KeptTypes
    timeline: WatchTimeline
    peak_at: float
    warmup: WarmupFigures
    seconds: float
    stopped: bool
    cuda_history: str
    cuda_reserved: ReservedAtPeak
    cuda_peak: PeakBlocks
    jax_device: JaxDevicePeak
