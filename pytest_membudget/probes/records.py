"""What the device stacks' own books say of a failure, as typed records: JAX's arrays by the
line that made them, its compilations and what changed, its device allocator at its peak;
CuPy's live blocks by line. Made in probes/jax and probes/cupy, shown by render/devices.py
and carried by the JSON report key for key (each a TypedDict: a plain dict at run time)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

#: Most rows of each list of the evidence, largest first (the rest summed up where a list
#: says how much is left out): the lines that grew and the lines at a peak, the types, the
#: threads, the descriptors and the tasks a window left, the processes of a table, and each
#: list of a device stack's own books. A shorter list under one row is evidence/records.FEW.
TOP = 10


class MadeAt(TypedDict, total=False):
    """Where memory was allocated: the user's line, and the library's line under it where the
    allocation was made in a library (a Flax or Optax function); none where no Python frame
    was on the stack."""

    file: str
    line: int
    function: str
    library_file: str
    library_line: int
    library_function: str


class _BlocksAt(TypedDict):
    bytes: int
    count: int


class CupyRow(_BlocksAt, MadeAt):
    """CuPy's blocks of the window still in use, by the line that allocated them."""


class CupyEvidence(TypedDict, total=False):
    """CuPy's evidence of a failing budget: its rows, or why there are none."""

    rows: list[CupyRow]
    problem: str


class Shape(TypedDict):
    """Arrays of one abstract value (``aval``: dtype and shape) on a row."""

    aval: str
    count: int
    bytes: int


class _ArrayRow(TypedDict):
    count: int
    bytes: int
    shapes: list[Shape]
    more_shapes: int


class ArrayRow(_ArrayRow, MadeAt, total=False):
    """JAX's arrays of the window still alive, by the line that created them, with both
    lines' source text and their commonest shapes."""

    code: str
    library_code: str


class PathFrom(TypedDict):
    """Objects to start a retaining path from (a few of the largest row's arrays), which
    the evidence replaces by the path (evidence/paths.py)."""

    label: str
    count: int
    objects: list[object]


class _ArraysFound(TypedDict):
    rows: list[ArrayRow]
    count: int


class ArraysFound(_ArraysFound, total=False):
    """The arrays made in the window and still alive: by line, how many, the seconds the
    listing took; ``path_from`` until the evidence puts the retaining paths in its place
    (``paths``: evidence/records.PathEntry, which this layer cannot name)."""

    path_from: PathFrom
    paths: list[Mapping[str, object]]
    seconds: float


class _Change(TypedDict):
    arg: str
    now: str
    before: str
    kind: str


class Change(_Change, total=False):
    """What changed in one argument between two compilations, of which kind
    (vocabulary.Recompile); ``why``: JAX's words for a change of the pytree."""

    why: str


class _Explanation(TypedDict):
    function: str | None
    kind: str
    changes: list[Change]


class Explanation(_Explanation, total=False):
    """JAX's explanation of one tracing cache miss (probes/jax/explain.py): the function,
    where it is defined and called, the strongest kind of change and each change."""

    call_file: str | None
    call_line: int | None
    defined_file: str | None
    defined_line: int | None


class _CompileRow(TypedDict):
    function: str
    compiles: int


class CompileRow(_CompileRow, total=False):
    """A jitted function that compiled in the window: how often, from which line (and its
    source), where it is defined, the strongest kind of change JAX explained, how many
    compilations it explained, and the latest explanation's changes."""

    call_file: str | None
    call_line: int | None
    call_count: int
    kind: str
    explained: int
    changes: list[Change]
    defined_file: str | None
    defined_line: int | None
    call_code: str


class CompilesFound(TypedDict):
    """The functions that compiled in the window, most compilations first, their total, and
    whether this JAX explains its cache misses."""

    functions: list[CompileRow]
    total: int
    explanations: bool


class JaxEvidence(TypedDict, total=False):
    """JAX's evidence of a failing growth budget (the ``jax`` entry)."""

    arrays: ArraysFound
    compiles: CompilesFound


class DeviceRow(TypedDict):
    """Arrays alive at the device allocator's highest sample, by the line that created them
    (None where JAX recorded no creation stack)."""

    file: str | None
    line: int | None
    function: str | None
    library_file: str | None
    library_line: int | None
    count: int
    bytes: int


class _JaxDevicePeak(TypedDict):
    mark_before: float | None
    mark_after: float
    highest_sample: float | None


class JaxDevicePeak(_JaxDevicePeak, total=False):
    """JAX's device allocator at a failing peak (the ``jax_device`` entry): its high-water
    mark before and after the run, the highest sample of bytes in use, and the arrays alive
    then."""

    arrays: list[DeviceRow]
