"""Objects tracked by the garbage collector."""

from __future__ import annotations

import gc

from pytest_membudget.probes import Probe


class GcObjectsProbe(Probe):
    """Container objects the collector tracks (lists, dicts, instances, frames...). Atoms such
    as ints, strings and arrays are not tracked; their holders are."""

    name = "gc_objects"

    def read(self) -> float:
        return float(len(gc.get_objects()))


PROBE_CLASSES: dict[str, type[Probe]] = {"gc_objects": GcObjectsProbe}
