"""What the plugin assumes of the running interpreter, stated in one place and checked once, on
first use: the first budgeted test's set-up or the sweep's first screen (:func:`gc_facts`).

Not at import: the check freezes, thaws and collects the whole heap, which moves every object
to the collector's oldest generation and untracks the tuples it can. A session that measures
nothing must find the collector as it would without the plugin: a test that counts
``gc.get_objects()`` exactly reads those moves (code constants of freshly imported modules,
nested tuples, untracked by a full collection during its loop instead of before it).

The garbage collector. Two assumptions, each checked on a few new objects while everything
older is frozen, so that no collection walks the heap (counting the frozen objects does, once):

1. ``gc.collect()``, without an argument, collects every unreachable cycle that is not frozen
   before it returns. With ``gc="collect"`` each sample of the window follows one, so that
   cycles waiting for the collector never read as growth.
2. ``gc.freeze()`` takes every tracked object out of ``gc.get_objects()`` (without an
   argument) and counts it in ``gc.get_freeze_count()``; ``gc.unfreeze()`` gives it back. The
   window and the evidence freeze what came before them, so that their collections walk only
   what they made; the ``gc_objects`` probe counts ``get_objects()`` plus the freeze count,
   the same total frozen or not.

Objects frozen before the plugin acts are left frozen: a conftest's ``gc.freeze()`` before
forking workers is the program's choice, and thawing it would undo it. The interpreter's own are
the exception (:func:`session_froze`): CPython 3.12's collections put the immortal objects they
meet in the permanent generation (the bases tuples of its static types), so
``gc.get_freeze_count()`` is not zero from the start (docs/design/interpreters.md). A thaw gives
them back to the oldest generation, where ``gc.get_objects()`` lists them until the next full
collection freezes them again: the program's (a test that counts objects collects first) or the
collector's own. The plugin does not run that collection after each window: on a test session's
heap it costs tens of milliseconds, which the sweep would pay on every test. The evidence and
the check of the collector run it (:func:`refreeze_own`), once each.

Where the first does not hold, a test that asks for ``gc="collect"`` is skipped with the
reason; where the second does not hold, nothing is frozen (collections walk the whole heap:
slower, with the same verdicts). Neither is ever taken on trust once the check failed.

Not assumed: how many generations there are, what ``gc.collect(n)`` or ``gc.get_objects(n)``
do for a given ``n``, the thresholds, or when the collector runs by itself. Python 3.14.0 to
3.14.4 changed all of these (an incremental collector: ``gc.collect(1)`` runs one increment,
``gc.get_objects(1)`` is empty); the kind of collector found is reported, not relied on.

Free-threaded builds (``Py_GIL_DISABLED``) allocate every Python object, and the raw domain
too, from mimalloc: glibc's counters (the ``malloc`` probe) see none of it, and
``sys.getallocatedblocks()`` (``py_blocks``) visits every thread's heap.
"""

from __future__ import annotations

import gc
import sys
import sysconfig
import weakref
from dataclasses import dataclass


@dataclass(frozen=True)
class GcFacts:
    """What the check found. ``collects``/``freezes``: whether assumption 1/2 holds (True
    also where it could not be checked: see ``checked``)."""

    collects: bool
    freezes: bool
    #: "generational", "incremental" or "free-threaded"; "unknown" where not checked.
    kind: str
    #: False where the check could not run: objects were frozen already, and thawing them to
    #: check would undo a freeze the program made on purpose.
    checked: bool = True


class _Node:
    """A container the collector tracks and a weak reference can follow."""

    other: object = None


def _cycle() -> weakref.ref[_Node]:
    first, second = _Node(), _Node()
    first.other, second.other = second, first
    return weakref.ref(first)


def check_gc() -> GcFacts:
    """Check the assumptions of the module's docstring on this interpreter."""
    if not all(hasattr(gc, name) for name in ("freeze", "unfreeze", "get_freeze_count")):
        return GcFacts(collects=_collects_a_cycle(), freezes=False, kind="unknown")
    if session_froze():
        return GcFacts(collects=True, freezes=True, kind="unknown", checked=False)
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()  # other libraries' callbacks stay out of the check's collections
    try:
        gc.freeze()
        try:
            freezes = _freeze_counts()
            collects = _collects_a_cycle()
            kind = _collector_kind()
        finally:
            gc.unfreeze()
        freezes = freezes and gc.get_freeze_count() == 0
        refreeze_own()
    finally:
        gc.callbacks[:] = callbacks
    return GcFacts(collects=collects, freezes=freezes, kind=kind)


#: What was frozen when the plugin was imported, taken as the interpreter's own (see the
#: module's docstring).
_INHERITED: int = gc.get_freeze_count() if hasattr(gc, "get_freeze_count") else 0


def session_froze() -> bool:
    """Whether objects are frozen that the plugin must not thaw: frozen by the program (a
    conftest, a fixture), beyond what the interpreter keeps frozen itself."""
    return gc.get_freeze_count() > _INHERITED


def refreeze_own() -> None:
    """Where the interpreter keeps objects frozen itself and a thaw gave them back, the full
    collection that freezes them again (see the module's docstring)."""
    if gc.get_freeze_count() < _INHERITED:
        collect_quietly()


def collect_quietly() -> None:
    """A collection of the plugin's own, with ``gc.callbacks`` set aside while it runs.
    Callbacks keep state in globals (hypothesis stores the time of each collection as a new
    float), so a collection between two snapshots of the evidence would name their lines as
    growth."""
    callbacks = gc.callbacks[:]
    gc.callbacks.clear()
    try:
        gc.collect()
    finally:
        gc.callbacks[:] = callbacks


def _freeze_counts() -> bool:
    """Right after ``gc.freeze()``: the frozen objects are counted and no longer listed."""
    frozen = gc.get_freeze_count()
    return frozen > 0 and len(gc.get_objects()) < frozen


def _collects_a_cycle() -> bool:
    ref = _cycle()
    gc.collect()
    return ref() is None


def _collector_kind() -> str:
    """A survivor of a young collection is in generation 1 of a generational collector, and
    nowhere the generation's number finds in an incremental one."""
    if free_threaded():
        return "free-threaded"
    survivor = _Node()
    gc.collect(0)
    found = any(obj is survivor for obj in gc.get_objects(1))
    return "generational" if found else "incremental"


def free_threaded() -> bool:
    """A build without the GIL (``python3.13t``): the allocator differs even where the GIL
    was turned back on."""
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def gil_enabled() -> bool:
    is_enabled = getattr(sys, "_is_gil_enabled", None)
    return True if is_enabled is None else bool(is_enabled())


def gc_collect_reason(facts: GcFacts) -> str | None:
    """Why ``gc="collect"`` cannot be honoured here, or None."""
    if facts.collects:
        return None
    return ("gc.collect() left a fresh reference cycle uncollected on this interpreter "
            f"(Python {sys.version.split()[0]}), so cycles waiting for the collector would "
            "read as growth; set gc='off' to measure with the collector left alone")


def notes(facts: GcFacts) -> list[str]:
    """One line each on what in this interpreter differs from what most users run."""
    found = []
    if free_threaded():
        found.append("free-threaded build (GIL "
                     f"{'enabled' if gil_enabled() else 'disabled'}): Python memory comes "
                     "from mimalloc, so the malloc probe sees none of it, and py_blocks "
                     "visits every thread's heap (its cost grows with the heap)")
    if facts.kind == "incremental":
        found.append("incremental garbage collector (Python 3.14.0 to 3.14.4): with "
                     "gc='off', cyclic garbage waits longer for the collector and can read "
                     "as growth over a short window; gc='collect' (the default) is unaffected")
    if not facts.freezes:
        found.append("gc.freeze() does not take objects out of the collector's reach here: "
                     "nothing is frozen, so each collection walks the whole heap (slower, "
                     "same verdicts)")
    reason = gc_collect_reason(facts)
    if reason:
        found.append(f"tests with gc='collect' are skipped: {reason}")
    return found


_FACTS: GcFacts | None = None


def gc_facts() -> GcFacts:
    """The facts of :func:`check_gc`, checked on the first call (see the module's docstring)."""
    global _FACTS
    if _FACTS is None:
        _FACTS = check_gc()
    return _FACTS


def usual() -> bool:
    """A GIL build of CPython 3.10 to 3.13: the collector is the generational one the plugin
    assumes, so the report's header needs no check (it says nothing there)."""
    return (sys.implementation.name == "cpython" and sys.version_info < (3, 14)
            and not free_threaded())


def header_notes() -> list[str]:
    """The notes for the session's header: checked there only on an interpreter that is not
    :func:`usual` (or where the facts are known already), so that a session that measures
    nothing leaves the collector alone."""
    if _FACTS is None and usual():
        return []
    return notes(gc_facts())
