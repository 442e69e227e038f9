"""Why the growth is still alive: a shortest reference path from a root to a sample of the new
objects of each type that grew most, found backwards over ``gc.get_referrers``.

A root is where a person can act: a module global, a class attribute, a closure's cell, a
local of a live frame, or nothing Python can see (an object held by C code only). The search
is bounded in time and in objects, and says so when it stopped short.
"""

from __future__ import annotations

import gc
import sys
import time
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_membudget.evidence.frames import is_own
from pytest_membudget.evidence.labels import Root, label, object_type, root_of_frame
from pytest_membudget.vocabulary import RootKind

#: Types that grew most whose new objects get a path.
PATH_TYPES = 3
#: New objects of one type the search starts from: the path leads to the nearest of them.
SAMPLES = 4
#: Objects passed to one ``gc.get_referrers`` call: each call walks the whole heap, and its
#: cost grows with the number of objects asked about (about 10 ms per million objects for
#: one, 30 ms for ten).
FRONTIER = 12
#: Objects the search may visit, and levels it may climb, before it stops short.
MOST_OBJECTS = 2000
MOST_DEPTH = 16


@dataclass(slots=True)
class _Search:
    """One backward search: each visited object's parent (the object it refers to, nearer the
    sample) and the search's own containers, which must never read as referrers."""

    deadline: float
    module_dicts: dict[int, types.ModuleType]
    frame_locals: dict[int, Root]
    ignored: set[int]
    #: Every object met, by id, and the id of the object below it (None for a sample). Two
    #: dicts, so that no tuple of the search's own refers to what it walks.
    seen: dict[int, object] = field(default_factory=dict)
    below: dict[int, int | None] = field(default_factory=dict)
    visited: int = 0
    stopped: str = ""
    kept_by_c: object | None = None


def retaining_paths(grown: Sequence[tuple[str, int]], new: dict[str, list[object]],
                    deadline: float, ignored: Iterable[object] = ()) -> list[dict[str, Any]]:
    """For each of the first PATH_TYPES of ``grown`` (type name, count; most first), a path
    from a root to one of the type's new objects (``new``: type name -> objects), or the
    reason there is none. Stops at ``deadline`` (a ``time.perf_counter()`` value)."""
    own = [*ignored, new, grown, *new.values()]
    found: list[dict[str, Any]] = []
    own.append(found)
    modules = {id(vars(m)): m for m in list(sys.modules.values())
               if isinstance(m, types.ModuleType)}
    frames = _frame_locals()
    top = grown[:PATH_TYPES]
    for index, (name, count) in enumerate(top):
        entry: dict[str, Any] = {"type": name, "count": count}
        found.append(entry)
        samples = new.get(name, [])[-SAMPLES:]
        if not samples:
            entry["reason"] = ("no new object of this type could be picked (it is not tracked "
                               "by the collector nor held by an object that is)")
            continue
        # An equal share of the time left to each type still to search: a type whose path
        # is long cannot take the time of the others.
        now = time.perf_counter()
        share = now + max(0.0, deadline - now) / (len(top) - index)
        search = _Search(share, modules, frames, {id(x) for x in own})
        search.ignored.update((id(samples), id(search), id(search.seen), id(search.below)))
        path = _search(search, samples)
        del samples
        if path is not None:
            entry["path"] = path
        else:
            entry["reason"] = search.stopped or "no root was found"
    return found


def _search(s: _Search, samples: list[object]) -> dict[str, Any] | None:
    """Breadth first from the samples up their referrers, level by level: the first root met
    is at the end of a shortest path."""
    frontier: list[object] = list(samples)
    s.ignored.add(id(frontier))
    for sample in samples:
        s.seen[id(sample)], s.below[id(sample)] = sample, None
    for _ in range(MOST_DEPTH):
        for obj in frontier:
            root = s.frame_locals.get(id(obj))
            if root is not None:
                return _path(s, root, obj)
        if time.perf_counter() > s.deadline:
            s.stopped = f"stopped short: its time ran out after {s.visited} objects"
            return None
        if s.visited > MOST_OBJECTS:
            s.stopped = f"stopped short after {s.visited} objects"
            return None
        ahead: list[object] = []
        s.ignored.add(id(ahead))
        for start in range(0, len(frontier), FRONTIER):
            batch = frontier[start:start + FRONTIER]
            s.ignored.add(id(batch))
            found = _climb(s, batch, ahead)
            if found is not None:
                return found
        if not ahead:
            break
        frontier = ahead
    if s.kept_by_c is not None:
        return _path(s, Root(RootKind.NATIVE, object_type(s.kept_by_c)), s.kept_by_c)
    s.stopped = s.stopped or f"no root within {MOST_DEPTH} references"
    return None


def _climb(s: _Search, batch: list[object], ahead: list[object]) -> dict[str, Any] | None:
    """One level up from ``batch``: each referrer not yet seen, its child, and whether it is a
    root. The referrers of a module's dict, a class's dict and a closure are not climbed."""
    wanted = {id(obj) for obj in batch}
    held = set()
    for ref in gc.get_referrers(*batch):
        if id(ref) in s.ignored or _own_code(ref):
            continue
        child = next((c for c in gc.get_referents(ref) if id(c) in wanted), None)
        if child is None:
            continue
        held.add(id(child))
        module = s.module_dicts.get(id(ref))
        if module is not None:
            return _path(s, Root(RootKind.MODULE, module.__name__, module), child)
        root = _class_or_closure(ref, child)
        if root is not None:
            return _path(s, root, child)
        if id(ref) in s.seen:
            continue
        s.seen[id(ref)], s.below[id(ref)] = ref, id(child)
        s.visited += 1
        ahead.append(ref)
    if s.kept_by_c is None:
        s.kept_by_c = next((obj for obj in batch if id(obj) not in held), None)
    return None


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


def _path(s: _Search, root: Root, top: object) -> dict[str, Any]:
    """The path from ``root`` down to the sample, as steps: how each object is reached from
    the one above it (``step``) and its type."""
    chain = [top]
    below = s.below.get(id(top))
    while below is not None:
        chain.append(s.seen[below])
        below = s.below[below]
    # A class's own dict, and a closure's tuple and cell, are how the root holds the first
    # object a person would name: the attribute, the variable.
    skip = {RootKind.CLASS: 1, RootKind.CLOSURE: 2}.get(root.kind, 0)
    first = root.first_step(chain[: skip + 1]) if len(chain) > skip else None
    if first is None:
        skip, first = 0, root.first_step(chain[:1])
    steps = [{"step": first, "type": object_type(chain[skip])}]
    for above, obj in zip(chain[skip:], chain[skip + 1:], strict=False):
        steps.append({"step": label(above, obj), "type": object_type(obj)})
    return {"root": root.describe(), "steps": _fold(steps)}


def _fold(steps: list[dict[str, str]]) -> list[dict[str, str]]:
    """An instance's ``__dict__`` and the key in it read as one step: ``.name``."""
    folded: list[dict[str, str]] = []
    for step in steps:
        if (folded and folded[-1]["step"] == "__dict__" and folded[-1]["type"] == "dict"
                and step["step"].startswith("['")):
            folded.pop()
            step = {**step, "step": "." + step["step"][2:-2]}
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
