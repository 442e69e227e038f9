"""The interpreter's type attribute cache, cleared between a full verdict's repeats and
refilled after them.

The cache (4,096 entries) keeps a reference to each attribute name it caches, so code that
looks up names built per call (ast's ``"visit_" + name`` under ``inspect.signature`` on
builtins, pickle's ``find_class``) fills it over thousands of calls, which reads as growth:
the sweep clears it after each repeat, the screen's and the full verdict's, as CPython's own
leak hunter does between runs (it measured 2 to 4 blocks per call on three of toolz's tests
without, none with; on gymnasium's space tests 556 of 1,349 screens flagged such names when
the screen left the cache alone).

Clearing points every entry at ``None``. Where ``None`` is an ordinary object (CPython up to
3.11), each later lookup that lands on such an entry drops ``None``'s reference count by one,
so a test that compares ``sys.getrefcount(None)`` around a call would see it fall: a trace of
the sweep in the next test's first call. A long-running interpreter has no such entries
(startup alone fills them all), so after the repeats every entry is pointed back at a name:
lookups of the sweep's own names on its own classes, each kept because it took an entry from
``None`` (read on ``None``'s reference count). The entries then hold the sweep's own names,
not ``None``, and no test's objects. Replaying the plan costs a fraction of a millisecond
per swept test (0.48 s over the 740 tests of gymnasium's ``test_spaces.py``: 0.65 ms
each); the search for lookups that complete it (about 10 ms: the whole grid of names and
classes) runs again only when the plan reaches fewer entries than the search last could.
A grid reaches a few entries short of all 4,096 (measured: 4,082 on a replay); in that
sweep the search ran once.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable

#: Entries of the cache (``MCACHE_SIZE_EXP`` is 12 in every CPython that has it).
ENTRIES = 4096
#: Names and classes the plan is drawn from: an entry is picked by the type's version tag and
#: the name's address, so names of several lengths (several allocator size classes) and
#: several classes reach every entry (measured: 64 classes of 2,000 names reached all).
NAMES = 2000
CLASSES = 64

#: A reference count at or above this is an immortal object's (CPython 3.12 and later).
IMMORTAL = 1 << 30

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

    def refill(self) -> None:
        """Point every entry of the cache at a name, none at ``None``, where ``None``'s
        reference count shows them (elsewhere ``None`` is immortal and nothing shows)."""
        cleared, self.cleared, self.armed = self.cleared, False, False
        if not cleared or _clear is None or sys.getrefcount(None) >= IMMORTAL:
            return
        start, taken = self._replay()
        if taken < self.reach:
            self.shortfalls += 1
            self._extend(start - ENTRIES)
            # What the completed plan reaches, counted on a replay of it alone (the search's
            # own classes and names move None's count too).
            self.reach = min(ENTRIES, self._replay()[1])

    def _replay(self) -> tuple[int, int]:
        """Clear the cache and look the plan up again: ``None``'s reference count before the
        lookups, and the entries they took from ``None``."""
        assert _clear is not None
        getrefcount, types, names = sys.getrefcount, self.types, self.names
        # Cleared once more, so that between the clear and the count only the plan's lookups
        # run (an attribute read here would take an entry of its own).
        _clear()
        start = getrefcount(None)
        deque(map(getattr, types, names), 0)
        return start, start - getrefcount(None)

    def _extend(self, target: int) -> None:
        """Add to the plan the lookups that take an entry from ``None`` (read on ``None``'s
        reference count) until none is left, from names of several lengths (several
        allocator size classes) on several classes: an entry is picked by the type's
        version tag and the name's address."""
        if not self.grid:
            names = [f"_membudget_entry_{i}_" + "x" * (i % 61) for i in range(NAMES)]
            self.grid = (names, [type(f"_MembudgetEntries{i}", (), dict.fromkeys(names, 0))
                                 for i in range(CLASSES)])
        names, classes = self.grid
        getrefcount, add_type, add_name = sys.getrefcount, self.types.append, self.names.append
        # Read after the classes were made (making one looks attributes up too), and with no
        # attribute read in the loop but the plan's own.
        left = getrefcount(None)
        for name in names:
            for cls in classes:
                getattr(cls, name)
                now = getrefcount(None)
                if now < left:
                    add_type(cls)
                    add_name(name)
                    left = now
                    if left <= target:
                        return


#: One per process: the plan is found once, and completed when it falls short.
TYPE_CACHE = TypeCache()
