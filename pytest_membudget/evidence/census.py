"""What is alive: objects counted by type (the type census), threads and file descriptors.
Counted before and after the evidence rerun; the difference is what the rerun left behind."""

from __future__ import annotations

import gc
import linecache
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, filterfalse, islice, repeat
from operator import is_
from typing import Any

from pytest_membudget.evidence.records import SMALL_BYTES
from pytest_membudget.evidence.steps import seconds

_NUMBERS = (int, float, bool, type(None))


def _ask_mapping_once() -> None:
    """Counter asks whether its argument is a Mapping; the first time for each iterator type,
    and again after any ``ABC.register`` anywhere in the process has invalidated the ABC
    caches, every Mapping class files that type in its cache (a weak set: weakrefs and their
    callbacks, 14 pairs in a test process). Asked before each count, so that the filing is
    done before the objects are listed rather than between the evidence's two counts."""
    Counter(map(type, ())).update(type(x) for x in range(0))
    Counter().update(Counter())  # a Counter's own class, as the partial census passes one


_ask_mapping_once()
#: Objects whose atoms are names, docstrings and code, not data: a program's functions and
#: descriptors hold nearly half the atoms of a large heap (torch's), and leak none of them.
_CODE_TYPES = frozenset({
    type(lambda: None), type(len), type(str.join), type(str.__dict__["__add__"]),
    type(type.__dict__["__dict__"]), type(type.__dict__["__name__"]),
    type(gc),
})


class Atoms:
    """The untracked atoms of the count before the rerun (their ids only: keeping the atoms
    would keep them alive), and those of the count after it that were not there before: the
    new strings and bytes, which the collector's lists never show (retaining paths start
    from them).

    Listing the atoms is most of a count's time, and it grows with the heap (0.2 s for half
    a million on the project's machine, 0.05 s in a process that imported torch). When the
    first listing took longer than its share of the evidence's seconds (evidence/steps.py),
    two such listings would take most of them: the second then lists only the atoms held by
    the containers the rerun made (``fresh``), and takes those counted before as still
    alive. It costs a fraction of the first, and misses the atoms the rerun put into older
    containers (``partial`` says so).
    """

    #: Most new atoms kept for the retaining paths: they need a few of each type.
    MOST = 50_000
    def __init__(self) -> None:
        self.before: set[int] | None = None
        #: The atoms counted before, by type, and the seconds that listing took.
        self.before_types: Counter[type] = Counter()
        self.seconds = 0.0
        #: Whether the count after the rerun listed the new containers' atoms only.
        self.partial = False
        self.new: list[object] = []
        #: The untracked dicts of the count after the rerun: the collector's referrer search
        #: never walks them, so the retaining paths look inside them themselves.
        self.dicts: list[dict[Any, Any]] = []

    def own(self) -> tuple[object, ...]:
        """The containers of this bookkeeping, which no count may take for the heap's."""
        return self, self.before, self.before_types

    def holders(self, objects: list[object], fresh: list[object] | None) -> list[object]:
        """The containers whose atoms a count lists: the rerun's own when the count before
        it was slow and they are known, else all of them."""
        self.partial = self.before is not None and fresh is not None and (
            self.seconds > seconds("whole_listing"))
        return _holders(fresh if self.partial and fresh is not None else objects)

    def note(self, atoms: dict[int, object], dicts: list[dict[Any, Any]],
             by_type: Counter[type], seconds: float) -> None:
        if self.before is None:
            self.before, self.before_types, self.seconds = set(atoms), by_type, seconds
            return
        # The set difference in C: a heap of a million objects has half a million atoms,
        # and few of them are new.
        self.new = list(map(atoms.__getitem__, islice(atoms.keys() - self.before, self.MOST)))
        self.dicts = list(islice(filter(None, dicts), self.MOST))


@dataclass
class Large:
    """The large data objects of a heap (see large_object_bytes): their bytes, and the
    ids and bytes of those of SMALL_BYTES or more, by which a later count tells the objects
    a call made from those that were there before it (a result replaced by the next one's
    is as large, and new)."""

    total: int = 0
    big: dict[int, int] = field(default_factory=dict)

    def new_bytes(self, before: Large) -> int:
        """The bytes of the big objects here that were not among ``before``'s."""
        return sum(size for key, size in self.big.items() if key not in before.big)


def type_counts(exclude: Sequence[object] = (), atoms: Atoms | None = None,
                fresh: list[object] | None = None,
                large: Large | None = None) -> Counter[str]:
    """:func:`class_counts` by the types' names."""
    return named(class_counts(exclude, atoms, fresh, large))


def own_objects(records: Iterable[object]) -> list[object]:
    """The plugin's own objects, the one list every count of what a run or a rerun made
    leaves out (measure/own.py), with what they hold: the records its caller kept while it
    counted (its state, its tables, the census taken before), and linecache's cache and its
    entries, the source lines the plugin reads to show a line (a file of 300 lines once read
    as "str: +303"). The plugin's own types are left out of every count by name (named)."""
    held = list(records)
    held.append(linecache.cache)
    for entry in list(linecache.cache.values()):
        held.append(entry)
        held.extend(part for part in entry if isinstance(part, list))
    return held


def named(counts: Counter[type]) -> Counter[str]:
    """Counts by type, by the types' names (numbers and the plugin's own types left out)."""
    found: Counter[str] = Counter()
    for cls, count in counts.items():
        if cls not in _NUMBERS:
            name = type_name(cls)
            if not name.startswith(_OWN + "."):
                found[name] += count
    return found


def class_counts(exclude: Sequence[object] = (), atoms: Atoms | None = None,
                 fresh: list[object] | None = None,
                 large: Large | None = None) -> Counter[type]:
    """Objects by type: those the collector tracks, and the untracked atoms (arrays, strings,
    bytes; not numbers) they hold directly. ``exclude``: the caller's own objects, left out
    with what they hold. Counted in C where it can be (a heap of a million objects takes
    about 0.2 s), since evidence runs this twice per failure. ``atoms``: told the atoms
    counted (see Atoms); ``fresh``: the objects the rerun made, whose atoms alone a second
    count lists when the first was slow (the atoms counted before are then taken as alive).
    ``large``: told the large data objects among the atoms and the tracked objects (Large)."""
    _ask_mapping_once()
    objects = gc.get_objects()
    if exclude:
        left_out = {id(obj) for obj in exclude}
        left_out.add(id(exclude))
        objects = [obj for obj in objects if id(obj) not in left_out]
    by_type = Counter(map(type, objects))
    started = time.perf_counter()
    holders = atoms.holders(objects, fresh) if atoms is not None else _holders(objects)
    found, dicts = _untracked(holders)
    if atoms is not None and atoms.partial and atoms.before is not None:
        found = {i: found[i] for i in found.keys() - atoms.before}
        by_type.update(atoms.before_types)
    listed = Counter(map(type, found.values()))
    by_type.update(listed)
    if large is not None:
        listed_atoms = list(found.values())
        large.total = large_object_bytes(listed_atoms)
        large.big = big_objects(listed_atoms, objects)
    if atoms is not None:
        atoms.note(found, dicts, listed, time.perf_counter() - started)
    del objects, holders, found, dicts
    # By the types themselves: a census kept over a run holds no name of its own (under a
    # heap budget's tracing, a few hundred names would be the plugin's, in the heap's
    # figures).
    return by_type


#: The largest request pymalloc serves; a larger object's memory is glibc's (malloc).
SMALL_REQUEST = 512
_TEXTS = frozenset({bytes, str, bytearray})


def large_object_bytes(objects: list[object]) -> int:
    """The bytes of the data objects among ``objects`` whose memory glibc's malloc gave:
    numpy arrays that own their data (their buffers; a view's bytes are its base's), and
    bytes, strings and bytearrays over SMALL_REQUEST. An untraced reading counts them in the
    native heap; they are Python objects. Selected and summed in C where it can be (a test
    process holds hundreds of thousands of small strings). Where numpy was never imported
    there are no arrays (and it is not imported for it: an import inside a count would be
    counted)."""
    types = list(map(type, objects))
    sizes = list(map(sys.getsizeof, compress(objects, map(_TEXTS.__contains__, types))))
    total: int = sum(compress(sizes, map(SMALL_REQUEST.__lt__, sizes)))
    np = sys.modules.get("numpy")
    if np is not None:
        owned: list[Any] = list(compress(objects, map(is_, types, repeat(np.ndarray))))
        total += sum(int(obj.nbytes) for obj in owned if obj.base is None)
    return total


def big_objects(atoms: list[object], tracked: list[object]) -> dict[int, int]:
    """The data objects of SMALL_BYTES or more among ``atoms`` (numpy arrays that own their
    data, bytes and strings, pyarrow's tables and arrays) and ``tracked`` (torch's tensors,
    by their storage), by id: their bytes. Libraries never imported are not asked."""
    found: dict[int, int] = {}
    types = list(map(type, atoms))
    for obj in compress(atoms, map(_TEXTS.__contains__, types)):
        size = sys.getsizeof(obj)
        if size >= SMALL_BYTES:
            found[id(obj)] = size
    np = sys.modules.get("numpy")
    if np is not None:
        array: Any
        for array in compress(atoms, map(is_, types, repeat(np.ndarray))):
            if array.base is None and array.nbytes >= SMALL_BYTES:
                found[id(array)] = int(array.nbytes)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        kinds = tuple(getattr(arrow, name) for name in ("Table", "RecordBatch",
                                                       "ChunkedArray", "Array")
                      if hasattr(arrow, name))
        for obj in atoms:
            if isinstance(obj, kinds):
                size = int(obj.get_total_buffer_size())
                if size >= SMALL_BYTES:
                    found[id(obj)] = size
    tensor_type = getattr(sys.modules.get("torch"), "Tensor", None)
    if isinstance(tensor_type, type) and hasattr(tensor_type, "untyped_storage"):
        storages: set[int] = set()
        tensor: Any
        for tensor in compress(tracked, map(is_, map(type, tracked), repeat(tensor_type))):
            storage = tensor.untyped_storage()
            size, pointer = int(storage.nbytes()), int(storage.data_ptr())
            if size >= SMALL_BYTES and pointer not in storages:
                storages.add(pointer)
                found[id(tensor)] = size
    return found


def young_bytes(exclude: Sequence[object] = ()) -> int:
    """The bytes of the objects the collector tracks that are not frozen (gc.freeze): while
    the window's policy holds everything older frozen, the objects the window made and that
    are still alive, each at its own size with the collector's header, as the allocator
    holds it (a library's ``__sizeof__`` that adds the data it holds, as a DataFrame's does,
    is not asked: the data objects are counted apart, in Large)."""
    left_out = {id(obj) for obj in exclude}
    own = object.__sizeof__
    young = [obj for obj in gc.get_objects()
             if id(obj) not in left_out and not type(obj).__module__.startswith(_OWN)]
    sizes = [sys.getsizeof(obj) if type(obj).__module__ == "builtins" else own(obj) + _GC_HEAD
             for obj in young]
    # The small atoms they hold (an element's text, a record's strings): untracked, so no
    # list of the collector's shows them; the big ones are Large's.
    atoms, _ = _untracked(_holders(young))
    sizes += [size for size in map(sys.getsizeof, atoms.values()) if size < SMALL_BYTES]
    # As the allocators hold them: pymalloc serves small requests in blocks of 16 bytes.
    return sum(-(-size // 16) * 16 if size <= SMALL_REQUEST else size for size in sizes)


_OWN = "pytest_membudget"
#: The collector's header in front of every object it tracks (sys.getsizeof counts it).
_GC_HEAD = sys.getsizeof([]) - [].__sizeof__()


def _holders(objects: list[object]) -> list[object]:
    """The objects whose atoms are data (see _CODE_TYPES)."""
    return [obj for obj in objects if type(obj) not in _CODE_TYPES]


def _untracked(holders: list[object]) -> tuple[dict[int, object], list[dict[Any, Any]]]:
    """The untracked objects the ``holders`` hold, by id, and those the untracked dicts
    among them hold in turn: the collector untracks a dict that holds only untracked
    objects, and an lru_cache's dict of results, once collected, is such a dict (its results
    are two levels below the wrapper that holds it). Also those dicts."""
    found = {id(ref): ref for ref in filterfalse(gc.is_tracked, gc.get_referents(*holders))}
    values = list(found.values())
    # type(ref) is dict, tested in C: a heap of a million objects has half a million atoms.
    dicts: list[dict[Any, Any]] = list(compress(values, map(is_, map(type, values),
                                                            repeat(dict))))
    del values
    if dicts:
        for ref in filterfalse(gc.is_tracked, gc.get_referents(*dicts)):
            found.setdefault(id(ref), ref)
    return found, dicts


def type_name(cls: type) -> str:
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def thread_target(thread: threading.Thread) -> str:
    target = getattr(thread, "_target", None)
    if target is None:
        return type(thread).__qualname__
    return getattr(target, "__qualname__", repr(target))


def fd_targets() -> list[str]:
    base = "/proc/self/fd"
    if not os.path.isdir(base):
        return []
    targets = []
    for name in os.listdir(base):
        try:
            targets.append(f"{name} -> {os.readlink(os.path.join(base, name))}")
        except OSError:
            continue
    return targets
