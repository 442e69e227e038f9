"""The interpreter's own count of allocated memory blocks."""

from __future__ import annotations

import sys

from pytest_membudget.probes import Probe


class PyBlocksProbe(Probe):
    """``sys.getallocatedblocks()``: the blocks the interpreter's allocator has handed out and
    not taken back, one or more per Python object, whether the collector tracks it or not
    (floats, strings, bytes and most objects of C extensions too). The count CPython's own
    leak hunter uses. Memory a C extension takes with ``malloc`` directly is not in it."""

    name = "py_blocks"
    # Read before the other probes, whose reads create and drop Python objects.
    read_first = True

    def read(self) -> float:
        return float(sys.getallocatedblocks())


PROBE_CLASSES: dict[str, type[Probe]] = {"py_blocks": PyBlocksProbe}
