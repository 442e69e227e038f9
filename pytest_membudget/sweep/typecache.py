"""The interpreter's type attribute cache, cleared between a full verdict's repeats and
refilled after them.

The cache (4,096 entries) keeps a reference to each attribute name it caches, so code that
looks up names built per call (ast's ``"visit_" + name`` under ``inspect.signature`` on
builtins, pickle's ``find_class``) fills it over thousands of calls, which reads as growth:
the sweep clears it after each repeat, the screen's and the full verdict's, as CPython's own
leak hunter does between runs (docs/design/sweep.md gives the figures).

Clearing points every entry at ``None``. Where ``None`` is an ordinary object (CPython up to
3.11), each later lookup that lands on such an entry drops ``None``'s reference count by
one, so a test that compares ``sys.getrefcount(None)`` around a call would see it fall: a
trace of the sweep in the next test's first call. A long-running interpreter has no such
entries (startup alone fills them all), so after the repeats every entry is pointed back at
a name: lookups of the sweep's own names on its own classes, each kept because it took an
entry from ``None`` (read on ``None``'s reference count). The entries then hold the sweep's
own names, not ``None``, and no test's objects. Replaying the plan costs a fraction of a
millisecond per swept test; the search for lookups that complete it (the whole grid of names
and classes) runs again only when the plan reaches fewer entries than the search last could.
The plan reaches all 4,096 entries (counted by each entry's index, from the classes' version
tags, on 3.11; a fresh grid of lookups after a replay finds none left at ``None`` on 3.10
and 3.11); in that sweep the search ran once.

CPython 3.10 clears differently: it empties the entries, points them at ``None`` at the next
lookup, and gives each class a new version tag in the order of the lookups after a clear. A
replay therefore starts with one lookup on each of the plan's classes in a fixed order, and
counts ``None`` from there: the same tags, so the same entries, on every replay (without it a
plan reached 3,175 entries on 3.10, and a test's next lookups still moved ``None``'s count).
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable

#: Entries of the cache (``MCACHE_SIZE_EXP`` is 12 in every CPython that has it).
ENTRIES = 4096
#: Names and classes the plan is drawn from: an entry is picked by the type's version tag and
#: the name's address, so names of several lengths (several allocator size classes) and
#: several classes reach every entry.
NAMES = 2000
CLASSES = 64

#: Whether ``None`` is immortal, its reference count fixed (CPython 3.12 and later, PEP 683).
IMMORTAL_NONE = sys.version_info >= (3, 12)

_clear: Callable[[], object] | None = getattr(sys, "_clear_type_cache", None)


class TypeCache:
    """``after_call()`` after each repeat: a clear once ``arm()`` was called (by the sweep
    of a test, before its screen), and ``refill()`` once the repeats are over."""

    def __init__(self) -> None:
        self.types: list[type] = []
        self.names: list[str] = []
        self.cleared = False
        self.armed = False
        self.shortfalls = 0
        #: The entries the plan could be made to reach: all of them, until a search of the
        #: whole grid fell short.
        self.reach = ENTRIES
        #: The names and classes the lookups are drawn from, made when first needed.
        self.grid: tuple[list[str], list[type]] | None = None

    def arm(self) -> None:
        self.armed = True

    def after_call(self) -> None:
        if self.armed and _clear is not None:
            _clear()
            self.cleared = True

    def prepare(self) -> None:
        """Find the plan before the first swept test (the sweep calls this when the session
        starts): the search of the whole grid takes about 20 ms, more on a loaded machine,
        and inside a test's call it counts against the test's own timeout. It clears the
        cache, and leaves every entry pointing at a name of the plan's."""
        if _clear is None or IMMORTAL_NONE or self.types:
            return
        self.cleared = True
        self.refill()

    def refill(self) -> None:
        """Point every entry of the cache at a name, none at ``None``, where ``None``'s
        reference count shows them (elsewhere ``None`` is immortal and nothing shows)."""
        cleared, self.cleared, self.armed = self.cleared, False, False
        if not cleared or _clear is None or IMMORTAL_NONE:
            return
        names, classes = self._grid()
        if self._replay(names[0], classes) < self.reach:
            self.shortfalls += 1
            self._extend(names, classes)
            # What the completed plan reaches, counted on a replay of it alone.
            self.reach = min(ENTRIES, self._replay(names[0], classes))

    def _grid(self) -> tuple[list[str], list[type]]:
        """The names and classes the plan is drawn from, made once, before any replay (making
        a class looks attributes up, and a replay's lookups must be the same each time)."""
        if self.grid is None:
            names = [f"_membudget_entry_{i}_" + "x" * (i % 61) for i in range(NAMES)]
            self.grid = (names, [type(f"_MembudgetEntries{i}", (), dict.fromkeys(names, 0))
                                 for i in range(CLASSES)])
        return self.grid

    def _replay(self, first: str, classes: list[type]) -> int:
        """Clear the cache and look the plan up again: the entries its lookups took from
        ``None``."""
        assert _clear is not None
        getrefcount, types, names = sys.getrefcount, self.types, self.names
        # Cleared once more, so that between the clear and the count only the sweep's own
        # lookups run (an attribute read here would take an entry of its own). Before the
        # count, one lookup on each class in a fixed order: CPython 3.10 empties the entries on
        # a clear and points them at None only at the next lookup, and gives every class a new
        # version tag (which picks its entries) in the order of the lookups after a clear; this
        # order makes the tags, and so the entries the plan reaches, the same on every replay.
        _clear()
        deque(map(getattr, classes, [first] * len(classes)), 0)
        start = getrefcount(None)
        deque(map(getattr, types, names), 0)
        return start - getrefcount(None)

    def _extend(self, names: list[str], classes: list[type]) -> None:
        """Add to the plan the lookups that take an entry from ``None`` (read on ``None``'s
        reference count), over the whole grid: names of several lengths (several allocator
        size classes) on several classes, as an entry is picked by the type's version tag and
        the name's address. It starts from a replay, with no attribute read between the
        replay and the search but the plan's own: an entry some other lookup took there would
        be missed by the search and left at ``None`` by every later replay."""
        getrefcount, add_type, add_name = sys.getrefcount, self.types.append, self.names.append
        replay = self._replay
        replay(names[0], classes)
        left = getrefcount(None)
        for name in names:
            for cls in classes:
                getattr(cls, name)
                now = getrefcount(None)
                if now < left:
                    add_type(cls)
                    add_name(name)
                    left = now


#: One per process: the plan is found once, and completed when it falls short.
TYPE_CACHE = TypeCache()
