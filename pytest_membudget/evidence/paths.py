"""Why the growth is still alive: a shortest reference path from a root to a sample of the new
objects of each type that grew most, found backwards over ``gc.get_referrers``.

A root is where a person can act: a module global, a class attribute, a closure's cell, a
local of a live frame, or nothing Python can see (an object held by C code only). The search
is bounded in time and in depth, and says so when it stopped short.
"""

from __future__ import annotations

import gc
import sys
import time
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_membudget.evidence.caches import describe as describe_cache
from pytest_membudget.evidence.labels import Root, label, object_type, root_of_frame
from pytest_membudget.evidence.records import FEW, CacheInfo, PathEntry, PathStep, RetainingPath
from pytest_membudget.evidence.steps import Deadline
from pytest_membudget.frames import is_own
from pytest_membudget.vocabulary import RootKind

#: New objects of one type the search starts from: the path leads to the nearest of them.
SAMPLES = 4
#: Objects passed to one ``gc.get_referrers`` call, the samples of every type searched: the
#: first level is one call. Each call walks the whole heap, nothing interrupts it, and its
#: cost grows with the number of objects asked about (about 10 ms per million objects for
#: one, 30 ms for ten); the clock is read between two calls.
FRONTIER = FEW * SAMPLES
#: Levels the search may climb: the longest path it names (the search's time is bounded by
#: its deadline alone).
MOST_DEPTH = 16


@dataclass(slots=True)
class _Search:
    """One backward search from the samples of every type at once (each ``get_referrers``
    walks the whole heap, so the types share the walks): each object met, the object below
    it (nearer the sample), the type whose sample it leads to, and the search's own
    containers, which must never read as referrers."""

    deadline: float
    module_dicts: dict[int, types.ModuleType]
    frame_locals: dict[int, Root]
    ignored: set[int]
    #: ids of the new objects of the types searched, by type: a path through one of them
    #: is that type's path too.
    new_ids: dict[int, str]
    #: The untracked dicts alive, which ``gc.get_referrers`` never walks (an lru_cache's
    #: dict of results, once collected, is one).
    untracked: Sequence[dict[Any, Any]] = ()
    #: Every object met, by id; and for each type searched, the id of the object below each
    #: one it met (None for a sample). Keyed by ids, so that nothing of the search's own but
    #: these dicts refers to what it walks. Each type keeps its own: two types' paths may
    #: share objects (a registry's list holds the dicts that hold the bytes).
    seen: dict[int, object] = field(default_factory=dict)
    below: dict[tuple[str, int], int | None] = field(default_factory=dict)
    paths: dict[str, RetainingPath] = field(default_factory=dict)
    kept_by_c: dict[str, object] = field(default_factory=dict)
    #: The bounded caches met on the paths found, by id, with the description each path
    #: shows (one per cache: several paths may run through it).
    caches: dict[int, tuple[object, CacheInfo]] = field(default_factory=dict)
    visited: int = 0
    stopped: str = ""


def retaining_paths(grown: Sequence[tuple[str, int]], new: dict[str, list[object]],
                    deadline: float, ignored: Iterable[object] = (),
                    caches: list[tuple[object, CacheInfo]] | None = None,
                    untracked: Sequence[dict[Any, Any]] = (),
                    ) -> list[PathEntry]:
    """For each of the first FEW of ``grown`` (type name, count; most first), a path
    from a root to one of the type's new objects (``new``: type name -> objects), or the
    reason there is none. Stops at ``deadline`` (a ``time.perf_counter()`` value). A path
    through a bounded cache says so (``cache``); ``caches`` receives each such cache and the
    description its paths show, for the caller to read how fast it fills. ``untracked``: the
    untracked dicts alive (evidence.census), looked into for what no tracked object holds."""
    top = list(grown[:FEW])
    modules = {id(vars(m)): m for m in list(sys.modules.values())
               if isinstance(m, types.ModuleType)}
    new_ids = {id(obj): name for name, _ in top for obj in new.get(name, ())}
    search = _Search(deadline, modules, _frame_locals(), set(), new_ids, untracked)
    samples = [obj for name, _ in top for obj in new.get(name, ())[-SAMPLES:]]
    own = [*ignored, new, grown, top, *new.values(), samples, search, search.seen,
           search.kept_by_c, search.caches, untracked]
    search.ignored.update(map(id, own))
    del own
    if samples:
        _search(search, samples)
    del samples
    found = []
    for name, count in top:
        entry: PathEntry = {"type": name, "count": count}
        if name in search.paths:
            entry["path"] = search.paths[name]
        elif not new.get(name):
            entry["reason"] = ("no new object of this type could be picked (it is not tracked "
                               "by the collector nor held by an object that is)")
        else:
            entry["reason"] = search.stopped or f"no root within {MOST_DEPTH} references"
        found.append(entry)
    if caches is not None:
        caches.extend(search.caches.values())
    search.caches.clear()
    return found


def paths_from(evidence: Mapping[str, Any], deadline: Deadline) -> None:
    """Where a probe's own evidence left objects to start a retaining path from (a
    ``path_from`` of a label, a count and the objects: JAX's arrays the window left alive),
    the path in their place (``paths``), searched until the ``path_from`` share of
    ``deadline`` (a growth evidence's, begun for this search); the objects are let go either
    way."""
    for part in _parts(evidence):
        start = part.pop("path_from", None)
        if start:
            label, objects = start["label"], start["objects"]
            part["paths"] = retaining_paths(
                [(label, start["count"])], {label: objects},
                deadline.until("path_from"), ignored=(start, objects, part))
            del start, objects


def _parts(evidence: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dicts of a probe's evidence, two levels deep (a source's key, then a section)."""
    found = []
    for value in evidence.values():
        if isinstance(value, dict):
            found.append(value)
            found += [inner for inner in value.values() if isinstance(inner, dict)]
    return found


def _search(s: _Search, samples: list[object]) -> None:
    """Breadth first from the samples up their referrers, level by level: the first root met
    on the way up from a type's samples ends a shortest path for that type."""
    frontier: list[object] = list(samples)
    origins = [s.new_ids[id(x)] for x in samples]
    s.ignored.update((id(frontier), id(origins)))
    for sample, name in zip(samples, origins, strict=True):
        s.seen[id(sample)], s.below[name, id(sample)] = sample, None
    for _ in range(MOST_DEPTH):
        for obj, name in zip(frontier, origins, strict=True):
            root = s.frame_locals.get(id(obj))
            if root is not None and name not in s.paths:
                _found(s, root, obj, name)
        left = [i for i, name in enumerate(origins) if name not in s.paths]
        frontier, origins = [frontier[i] for i in left], [origins[i] for i in left]
        s.ignored.update((id(frontier), id(origins)))
        if not frontier:
            break
        ahead: list[object] = []
        ahead_origins: list[str] = []
        s.ignored.update((id(ahead), id(ahead_origins)))
        for start in range(0, len(frontier), FRONTIER):
            if time.perf_counter() > s.deadline:
                s.stopped = f"stopped short: its time ran out after {s.visited} objects"
                return
            batch = frontier[start:start + FRONTIER]
            s.ignored.add(id(batch))
            _climb(s, batch, origins[start:start + FRONTIER], ahead, ahead_origins)
        frontier, origins = ahead, ahead_origins
    for name, obj in s.kept_by_c.items():
        if name not in s.paths:
            _found(s, Root(RootKind.NATIVE, object_type(obj)), obj, name)


def _climb(s: _Search, batch: list[object], origins: list[str], ahead: list[object],
           ahead_origins: list[str]) -> None:
    """One level up from ``batch``: each referrer not yet met on the way from its type's
    samples, and whether it is a root. The referrers of a module's dict, a class's dict and a
    closure are not climbed."""
    wanted: dict[int, list[str]] = {}
    for obj, name in zip(batch, origins, strict=True):
        wanted.setdefault(id(obj), []).append(name)
    held: set[int] = set()
    for ref in gc.get_referrers(*batch):
        if id(ref) in s.ignored or _own_code(ref):
            continue
        child = next((c for c in gc.get_referents(ref) if id(c) in wanted), None)
        if child is not None:
            held.add(id(child))
            _step(s, ref, child, wanted[id(child)], ahead, ahead_origins)
    missing = {i: names for i, names in wanted.items() if i not in held}
    for ref in s.untracked if missing else ():
        if time.perf_counter() > s.deadline:
            # Not every holder was looked at: what has none so far is not found, which
            # is not "held by C code only" (a module's dict may be among the rest).
            s.stopped = f"stopped short: its time ran out after {s.visited} objects"
            return
        if id(ref) in s.ignored:
            continue
        child = next((c for c in gc.get_referents(ref) if id(c) in missing), None)
        if child is not None:
            held.add(id(child))
            _step(s, ref, child, missing.pop(id(child)), ahead, ahead_origins)
            if not missing:
                break
    for obj, name in zip(batch, origins, strict=True):
        if id(obj) not in held:
            s.kept_by_c.setdefault(name, obj)


def _step(s: _Search, ref: object, child: object, names: list[str], ahead: list[object],
          ahead_origins: list[str]) -> None:
    """``ref`` holds ``child``: a root for the types of ``names`` that have no path yet, or
    the next level's object."""
    module = s.module_dicts.get(id(ref))
    root = (Root(RootKind.MODULE, module.__name__, module) if module is not None
            else _class_or_closure(ref, child))
    for name in names:
        if name in s.paths:
            continue
        if root is not None:
            _found(s, root, child, name)
        elif (name, id(ref)) not in s.below:
            s.seen[id(ref)], s.below[name, id(ref)] = ref, id(child)
            s.visited += 1
            ahead.append(ref)
            ahead_origins.append(name)


def _found(s: _Search, root: Root, top: object, name: str) -> None:
    """A path for the type ``name``, and for the types of the new objects on it."""
    chain = [top]
    below = s.below.get((name, id(top)))
    while below is not None:
        chain.append(s.seen[below])
        below = s.below[name, below]
    for depth, obj in enumerate(chain):
        other = s.new_ids.get(id(obj))
        if other is not None and other not in s.paths:
            s.paths[other] = _with_cache(s, root, chain[: depth + 1])
    if name not in s.paths:
        s.paths[name] = _with_cache(s, root, chain)


def _with_cache(s: _Search, root: Root, chain: list[object]) -> RetainingPath:
    """The path down ``chain``, with the first bounded cache on it (the root's own object
    first: a closure or a module global may be the cache)."""
    path = _path(root, chain)
    for obj in (root.holder, *chain):
        known = s.caches.get(id(obj))
        cache = known[1] if known is not None else describe_cache(obj)
        if cache is not None:
            s.caches[id(obj)] = (obj, cache)
            path["cache"] = cache
            break
    return path


def _class_or_closure(ref: object, child: object) -> Root | None:
    """A class whose own dict is ``child``, or a function whose closure is ``child``."""
    if isinstance(ref, type) and isinstance(child, dict) and _is_class_dict(ref, child):
        return Root(RootKind.CLASS, f"{ref.__module__}.{ref.__qualname__}", ref)
    if isinstance(ref, types.FunctionType) and child is ref.__closure__:
        return Root(RootKind.CLOSURE, ref.__qualname__, ref)
    return None


def _is_class_dict(cls: type, candidate: dict[Any, Any]) -> bool:
    try:
        return candidate.keys() == cls.__dict__.keys()
    except Exception:  # a metaclass with an odd __dict__: not a class attribute then
        return False


def _path(root: Root, chain: list[object]) -> RetainingPath:
    """The path from ``root`` down ``chain`` (the object the root holds first, the sample
    last), as steps: how each object is reached from the one above it, and its type."""
    # A class's own dict, and a closure's tuple and cell, are how the root holds the first
    # object a person would name: the attribute, the variable.
    skip = {RootKind.CLASS: 1, RootKind.CLOSURE: 2}.get(root.kind, 0)
    first = root.first_step(chain[: skip + 1]) if len(chain) > skip else None
    if first is None:
        skip, first = 0, root.first_step(chain[:1])
    steps: list[PathStep] = [{"step": first, "type": object_type(chain[skip])}]
    for above, obj in zip(chain[skip:], chain[skip + 1:], strict=False):
        steps.append({"step": label(above, obj), "type": object_type(obj)})
    return {"root": root.describe(), "steps": _fold(steps)}


def _fold(steps: list[PathStep]) -> list[PathStep]:
    """An instance's ``__dict__`` and the key in it read as one step: ``.name``."""
    folded: list[PathStep] = []
    for step in steps:
        if (folded and folded[-1]["step"] == "__dict__" and folded[-1]["type"] == "dict"
                and step["step"].startswith("['")):
            folded.pop()
            step = {"step": "." + step["step"][2:-2], "type": step["type"]}
        folded.append(step)
    return folded


def _frame_locals() -> dict[int, Root]:
    """The locals of every live frame outside pytest and this plugin, by the id of their
    value: a running function's locals are out of the collector's sight."""
    held: dict[int, Root] = {}
    for frame in sys._current_frames().values():
        walk: types.FrameType | None = frame
        while walk is not None:
            # A module's own frame: its locals are its globals, named as such.
            if not _own_frame(walk) and walk.f_locals is not walk.f_globals:
                for name, value in walk.f_locals.items():
                    held.setdefault(id(value), root_of_frame(walk, name))
            walk = walk.f_back
    return held


def _own_frame(frame: types.FrameType) -> bool:
    return is_own(frame.f_code.co_filename)


def _own_code(ref: object) -> bool:
    """A frame, generator or coroutine of pytest or this plugin (the evidence's own, which
    runs and holds what it measures)."""
    code = getattr(ref, "f_code", None) or getattr(ref, "gi_code", None) or getattr(
        ref, "cr_code", None) or getattr(ref, "ag_code", None)
    return isinstance(code, types.CodeType) and is_own(code.co_filename)
