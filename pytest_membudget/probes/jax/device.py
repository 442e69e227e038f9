"""JAX's device allocator on a GPU or TPU (Device.memory_stats()), summed over the local
devices of the default backend, and what it says of its highest point.

The allocator keeps its own high-water mark (``peak_bytes_in_use``), since the process
started, and JAX cannot reset it. A run's peak is read from it only where the mark moved
during the run: then the run set it, and its value is the run's highest point, a peak inside
a call included. Where it did not move, an earlier test (or the process's start-up) went
higher, and the run's highest point is the highest sample, taken between calls. With several
local devices, each keeps its own mark: their sum is at least the highest total.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pytest_membudget.probes.jax.arrays import aval_bytes, creation_lines
from pytest_membudget.probes.jax.runtime import CURRENT_KEYS, PEAK_KEYS, first_key
from pytest_membudget.probes.records import TOP, DeviceRow, JaxDevicePeak


def figure(stats: list[Any], keys: tuple[str, ...]) -> float:
    """The sum over the devices of the first of ``keys`` each device reports."""
    total = 0.0
    for one in stats:
        key = first_key(one, keys)
        if key is not None:
            total += float(one[key])
    return total


class DeviceAllocator:
    """The device statistics of one sample, fetched once for the device probes of a run."""

    def __init__(self, jax: Any) -> None:
        self.jax = jax
        self.devices = list(jax.local_devices())
        self.stats: list[Any] = []
        #: The peak marks when the run started, by probe.
        self.marks_before: dict[str, float] = {}
        self.highest = -1.0
        #: Where a peak is budgeted: the arrays alive at the highest sample of bytes in use,
        #: by (creation stack, abstract value).
        self.census: Counter[Any] | None = None
        self.census_of_peak = False

    def refresh(self) -> None:
        self.stats = [device.memory_stats() or {} for device in self.devices]

    def start(self, peaks: bool) -> None:
        self.refresh()
        self.marks_before = {probe: figure(self.stats, keys) for probe, keys in PEAK_KEYS.items()}
        self.census_of_peak = peaks

    def read(self, probe: str) -> float:
        return figure(self.stats, CURRENT_KEYS[probe])

    def after_sample(self) -> None:
        """At a new highest sample of bytes in use, where a peak is budgeted: the arrays
        alive now, by creation stack and abstract value (not yet by line: cheap)."""
        if not self.census_of_peak:
            return
        used = self.read("jax_device_used")
        if used <= self.highest:
            return
        self.highest = used
        arrays = self.jax.live_arrays()
        # Past a hundred thousand arrays the census (a walk of each one's stack, at every new
        # highest sample) would cost the run more than its rows tell.
        if len(arrays) > 100_000:
            self.census = None
            return
        self.census = Counter((getattr(a, "traceback", None), a.aval) for a in arrays)

    def peak(self, probe: str) -> float | None:
        """The allocator's high-water mark where the run moved it (see the module's
        docstring), else None."""
        self.refresh()
        now = figure(self.stats, PEAK_KEYS[probe])
        return now if now > self.marks_before.get(probe, 0.0) else None

    def peak_evidence(self) -> JaxDevicePeak:
        """The mark before and after the run, and the arrays alive at the highest sample by
        the line that created them."""
        self.refresh()
        found: JaxDevicePeak = {
            "mark_before": self.marks_before.get("jax_device_used"),
            "mark_after": figure(self.stats, PEAK_KEYS["jax_device_used"]),
            "highest_sample": self.highest if self.highest >= 0 else None}
        if self.census is not None:
            found["arrays"] = census_rows(self.census)
        return found


def census_rows(census: Counter[Any], top: int = TOP) -> list[DeviceRow]:
    """The census's arrays by creation line, most bytes first."""
    rows: dict[tuple[Any, ...], list[int]] = {}
    for (stack, aval), count in census.items():
        user, library = creation_lines(stack.frames) if stack is not None else (None, None)
        key = (user.file_name if user else None, int(user.line_num) if user else None,
               user.function_name if user else None,
               library.file_name if library else None,
               int(library.line_num) if library else None)
        entry = rows.setdefault(key, [0, 0])
        entry[0] += count
        entry[1] += count * aval_bytes(aval)
    found: list[DeviceRow] = [
        {"file": k[0], "line": k[1], "function": k[2], "library_file": k[3],
         "library_line": k[4], "count": n, "bytes": size} for k, (n, size) in rows.items()]
    found.sort(key=lambda row: -int(row["bytes"]))
    return found[:top]
