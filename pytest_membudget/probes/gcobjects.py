"""Objects tracked by the garbage collector."""

from __future__ import annotations

import gc

from pytest_membudget.probes import Probe


class GcObjectsProbe(Probe):
    """Container objects the collector tracks (lists, dicts, instances, frames...). Atoms such
    as ints, strings and arrays are not tracked; their holders are."""

    name = "gc_objects"

    def read(self) -> float:
        # Frozen objects (the runner freezes what was alive before the window) are not
        # listed by get_objects(); counting them keeps the series continuous.
        return float(len(gc.get_objects()) + gc.get_freeze_count())


PROBE_CLASSES: dict[str, type[Probe]] = {"gc_objects": GcObjectsProbe}
