"""Objects tracked by the garbage collector."""

from __future__ import annotations

import gc

from pytest_membudget.probes import Probe


class GcObjectsProbe(Probe):
    """Container objects the collector tracks (lists, dicts, instances, frames...). Atoms such
    as ints, strings and arrays are not tracked; their holders are."""

    name = "gc_objects"

    def start(self) -> None:
        self._offset = 0
        self._last = 0

    def before_window(self) -> None:
        # The runner has just frozen what was alive: get_objects() no longer lists it. The
        # objects it stopped listing are added back, so that the series stays continuous.
        # (Counting them with get_freeze_count() would walk every frozen object, about 1 ms
        # per 50,000, at every sample.)
        self._offset = self._last - len(gc.get_objects())

    def read(self) -> float:
        self._last = len(gc.get_objects()) + self._offset
        return float(self._last)


PROBE_CLASSES: dict[str, type[Probe]] = {"gc_objects": GcObjectsProbe}
