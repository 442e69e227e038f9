"""The live jax.Arrays: how many and how many bytes, once per sample (grouped by abstract
value, which JAX interns, so that a sample costs one attribute read per array), and, for the
evidence, the lines that created those alive at the end of a window and not at its start.

Each array carries its creation stack (``Array.traceback``, innermost frame first). The line
named is the user's; where the array was made in a library (a Flax or Optax function), that
line is given under the user's line that called it. JAX's own frames are its machinery.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pytest_membudget.frames import first_user, is_library, is_own, source_line
from pytest_membudget.probes.packages import in_packages
from pytest_membudget.probes.records import TOP, ArrayRow, MadeAt

#: JAX's own packages: their code is JAX's machinery, wherever they are installed.
JAX_PACKAGES = ("jax", "jaxlib")
_AVAL = operator.attrgetter("aval")


def aval_bytes(aval: Any) -> int:
    """Bytes of an array of this abstract value: elements times their size (PRNG keys'
    extended dtypes have an itemsize too)."""
    return int(math.prod(aval.shape)) * int(aval.dtype.itemsize)


def tally(arrays: Sequence[Any]) -> tuple[int, int]:
    """(count, bytes) of ``arrays``."""
    counts = Counter(map(_AVAL, arrays))
    return len(arrays), sum(n * aval_bytes(aval) for aval, n in counts.items())


def remember(arrays: Iterable[Any]) -> dict[int, Any]:
    """Weak references to ``arrays`` by id: which arrays were alive when a window opened
    (an id alone is reused by the next array made at the same address)."""
    return {id(a): weakref.ref(a) for a in arrays}


def new_since(arrays: Iterable[Any], before: dict[int, Any]) -> list[Any]:
    """The arrays not alive when ``before`` was taken."""
    found = []
    for array in arrays:
        ref = before.get(id(array))
        if ref is None or ref() is not array:
            found.append(array)
    return found


def is_jax(filename: str) -> bool:
    """A frame of JAX's own code: in the jax or jaxlib package imported here, or installed
    as a package (a user's folder named jax is not JAX's)."""
    return in_packages(filename, JAX_PACKAGES)


def _filename(frame: Any) -> str:
    return str(frame.file_name)


def creation_lines(frames: Sequence[Any]) -> tuple[Any | None, Any | None]:
    """(the user's line, the library line under it) among a creation stack's ``frames``
    (innermost first): the innermost frame beyond JAX and the framework; where that is a
    library's, the user's line that called it comes first and the library's goes under it."""
    outside = [f for f in frames if not is_jax(_filename(f)) and not is_own(_filename(f))]
    if not outside:
        return None, None
    site = outside[0]
    if not is_library(_filename(site)):
        return site, None
    user = first_user(outside, _filename)
    return (user, site) if user is not None else (site, None)


class _Where(MadeAt, total=False):
    code: str
    library_code: str


def _where(user: Any | None, library: Any | None) -> _Where:
    """Where a creation stack's arrays were made (see creation_lines), with each line's
    source."""
    found: _Where = {}
    if user is not None:
        file, line = str(user.file_name), int(user.line_num)
        found.update({"file": file, "line": line, "function": str(user.function_name),
                      "code": source_line(file, line)})
    if library is not None:
        file, line = str(library.file_name), int(library.line_num)
        found.update({"library_file": file, "library_line": line,
                      "library_function": str(library.function_name),
                      "library_code": source_line(file, line)})
    return found


def by_line(arrays: Sequence[Any], top: int = TOP) -> list[ArrayRow]:
    """``arrays`` grouped by the line that created them (and the library line under it),
    most bytes first: their count and bytes, and the commonest shapes and dtypes (four of
    them, and how many more: a row is read at a glance)."""
    groups: dict[Any, Counter[Any]] = {}
    stacks: dict[Any, _Where] = {}
    for array in arrays:
        stack = getattr(array, "traceback", None)
        groups.setdefault(stack, Counter())[_AVAL(array)] += 1
    rows: dict[tuple[tuple[str, object], ...], tuple[_Where, Counter[Any]]] = {}
    for stack, avals in groups.items():
        if stack not in stacks:
            stacks[stack] = _where(*(creation_lines(stack.frames) if stack is not None
                                     else (None, None)))
        key = tuple(stacks[stack].items())
        rows.setdefault(key, (stacks[stack], Counter()))[1].update(avals)
    found = []
    for where, avals in rows.values():
        shapes = sorted(((aval.str_short(), n, n * aval_bytes(aval)) for aval, n in avals.items()),
                        key=lambda s: -s[2])
        listed = shapes[:4]
        found.append(ArrayRow(**where, count=sum(avals.values()),
                              bytes=sum(size for _, _, size in shapes),
                              shapes=[{"aval": aval, "count": n, "bytes": size}
                                      for aval, n, size in listed],
                              more_shapes=len(shapes) - len(listed)))
    found.sort(key=lambda row: (-int(row["bytes"]), -int(row["count"])))
    return found[:top]


def on_row(array: Any, row: ArrayRow) -> bool:
    """Whether ``array`` was created at ``row``'s line."""
    stack = getattr(array, "traceback", None)
    user, _ = creation_lines(stack.frames) if stack is not None else (None, None)
    where = _where(user, None)
    return where.get("line") == row.get("line") and where.get("file") == row.get("file")
