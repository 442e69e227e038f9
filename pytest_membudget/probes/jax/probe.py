"""The jax_* probes: the live arrays (count and bytes), the compilations, and JAX's device
allocator. One source per run serves them all (:class:`JaxSource`): the arrays are listed
once per sample, the device statistics fetched once."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes import Probe
from pytest_membudget.probes.jax.arrays import by_line, new_since, on_row, remember, tally
from pytest_membudget.probes.jax.compiles import CompileLog
from pytest_membudget.probes.jax.device import DeviceAllocator
from pytest_membudget.probes.jax.runtime import DEVICE_PROBES, load, unavailable_reason
from pytest_membudget.probes.records import ArraysFound, JaxDevicePeak, JaxEvidence
from pytest_membudget.probes.shared import SharedSource

ARRAY_PROBES = ("jax_arrays", "jax_array_bytes")


class JaxSource(SharedSource):
    """What the jax_* probes of a run read: the live arrays, listed once per sample; the
    compile log; the device allocator's statistics, fetched once per sample."""

    def __init__(self) -> None:
        super().__init__(None)
        self.jax = load()
        self.array_users = self.bytes_users = self.compile_users = self.device_users = 0
        self.count = self.bytes = 0
        self.compiles: CompileLog | None = None
        self.device: DeviceAllocator | None = None
        self.before: dict[int, Any] = {}
        self.found: JaxEvidence | None = None

    @classmethod
    def for_probe(cls, name: str) -> JaxSource:
        return cls.acquire(None, cls, **_uses(name))

    def start(self, name: str, peaks: bool) -> None:
        if name == "jax_compiles" and self.compiles is None:
            self.compiles = CompileLog(self.jax)
            self.compiles.start()
        if name in DEVICE_PROBES:
            if self.device is None:
                self.device = DeviceAllocator(self.jax)
                self.device.start(peaks)
            self.device.census_of_peak |= peaks

    def before_window(self) -> None:
        if self.array_users and not self.before:
            self.before = remember(self.jax.live_arrays())
        if self.compiles is not None:
            self.compiles.open_window()

    def refresh(self) -> None:
        if self.bytes_users:
            self.count, self.bytes = tally(self.jax.live_arrays())
        elif self.array_users:
            self.count = len(self.jax.live_arrays())
        if self.device is not None:
            self.device.refresh()

    def after_sample(self) -> None:
        if self.device is not None:
            self.device.after_sample()

    def evidence(self) -> dict[str, JaxEvidence]:
        """Once per failing run: the arrays made in the window and still alive, by line, and
        what keeps the largest row alive; the functions that compiled in the window."""
        if self.found is None:
            self.found = {}
            if self.array_users:
                self.found["arrays"] = self._arrays()
            if self.compiles is not None:
                self.found["compiles"] = self.compiles.evidence()
        return {"jax": self.found}

    def _arrays(self) -> ArraysFound:
        began = time.perf_counter()
        new = new_since(self.jax.live_arrays(), self.before)
        rows = by_line(new)
        found: ArraysFound = {"rows": rows, "count": len(new)}
        if rows:
            # A few of the largest row's arrays (four: a short path needs a few samples), for
            # the evidence to start a retaining path from (evidence/paths.py's paths_from,
            # which puts the path in their place).
            found["path_from"] = {"label": "jax.Array", "count": rows[0]["count"],
                                  "objects": [a for a in new if on_row(a, rows[0])][-4:]}
        del new
        found["seconds"] = round(time.perf_counter() - began, 6)
        return found

    def close(self) -> None:
        if self.compiles is not None:
            self.compiles.stop()
            self.compiles = None
        self.before = {}


class JaxProbe(Probe):
    """One figure of JAX's: the live arrays, their bytes, the compilations, or the device
    allocator's bytes in use or held."""

    def __init__(self, options: Mapping[str, Any] | None = None, name: str = "") -> None:
        super().__init__(options)
        self.name = name
        self.source: JaxSource | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.name)

    def start(self) -> None:
        self.source = JaxSource.for_probe(self.name)
        footprint = self.options.get("footprint") or ()
        self.source.start(self.name, peaks=self.name in footprint)

    def before_window(self) -> None:
        assert self.source is not None
        self.source.before_window()

    def sync(self) -> None:
        assert self.source is not None
        self.source.refresh()

    def read(self) -> float:
        source = self.source
        assert source is not None
        if self.name == "jax_arrays":
            return float(source.count)
        if self.name == "jax_array_bytes":
            return float(source.bytes)
        if self.name == "jax_compiles":
            assert source.compiles is not None
            return float(source.compiles.count)
        assert source.device is not None
        return source.device.read(self.name)

    def after_sample(self) -> None:
        if self.source is not None:
            self.source.after_sample()

    def peak(self) -> float | None:
        source = self.source
        if source is None or source.device is None or self.name not in DEVICE_PROBES:
            return None
        if self.name not in (self.options.get("footprint") or ()):
            return None
        return source.device.peak(self.name)

    def evidence(self) -> dict[str, JaxEvidence] | None:
        return self.source.evidence() if self.source is not None else None

    def peak_evidence(self) -> dict[str, JaxDevicePeak] | None:
        source = self.source
        if source is None or source.device is None or self.name not in DEVICE_PROBES:
            return None
        return {"jax_device": source.device.peak_evidence()}

    def stop(self) -> None:
        if self.source is not None:
            self.source.release(**_uses(self.name))
            self.source = None


def _uses(name: str) -> dict[str, bool]:
    """What the probe ``name`` needs of the run's source."""
    return {"array_users": name in ARRAY_PROBES, "bytes_users": name == "jax_array_bytes",
            "compile_users": name == "jax_compiles", "device_users": name in DEVICE_PROBES}


def _factory(name: str) -> type[Probe]:
    class Named(JaxProbe):
        def __init__(self, options: Mapping[str, Any] | None = None) -> None:
            super().__init__(options, name=name)

    Named.__name__ = Named.__qualname__ = f"JaxProbe[{name}]"
    return Named


PROBE_CLASSES: dict[str, type[Probe]] = {
    name: _factory(name) for name in (*ARRAY_PROBES, "jax_compiles", *DEVICE_PROBES)}
