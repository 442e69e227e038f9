"""The CUDA caching allocator of this process, read from ``torch.cuda.memory_stats``.

Every figure here is per process: the caching allocator's own books, valid when several
processes (pytest-xdist workers) share one GPU. Only ``cuda_device_used`` is device-wide.

The allocator books every allocation and free on the host, when the op is dispatched, so its
figures need no synchronize; only ``cuda_device_used``, which asks the driver, waits for the
device. cuBLAS workspaces are handed back to the allocator right before each reading, as
torch's own leak check does, so that no reading ever counts one (docs/cuda.md says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_membudget.probes import Probe
from pytest_membudget.probes.cuda.allocator import STAT_KEYS, stat, unavailable_reason
from pytest_membudget.probes.cuda.device import PEAK, DeviceStats
from pytest_membudget.probes.cuda.history import CudaEvidence


class CudaProbe(Probe):
    """One figure of the caching allocator. The CUDA context is created before warm-up;
    cuBLAS workspaces are released before each reading."""

    #: Whether read() looks at memory_stats (fetched once per sample for all such probes).
    reads_stats = True
    #: Whether read() asks the driver, so that queued work must have run first.
    syncs = False

    def __init__(self, options: Mapping[str, Any] | None = None, name: str = "") -> None:
        super().__init__(options)
        self.name = name
        self.device: str | None = self.options.get("device")
        self.source: DeviceStats | None = None
        self.mark: dict[str, float] | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.device, self.name)

    def start(self) -> None:
        self.source = DeviceStats.for_device(self.device, self.reads_stats, self.syncs)
        self.source.init_context()
        # Only where a peak or rise is budgeted: the reset is torch's, for the whole process.
        self.mark = self.source.open_mark() if self.options.get("cuda_peaks") else None

    def before_window(self) -> None:
        assert self.source is not None
        if self.mark is not None:  # the window's peak is its own, not the warm-up's
            self.source.close_mark(self.mark)
            self.mark = self.source.open_mark()
        if self.options.get("cuda_history"):
            self.source.start_history(trace=bool(self.options.get("cuda_peaks")))

    def evidence(self) -> CudaEvidence | None:
        return self.source.evidence() if self.source is not None else None

    def peak(self) -> float | None:
        """The allocator's own peak of this figure since the window began (torch keeps it
        between samples: a peak inside one call is seen)."""
        key = STAT_KEYS.get(self.name, "")
        if self.mark is None or self.source is None or not key.endswith(".current"):
            return None
        return self.source.peaks(self.mark).get(key[: -len(".current")] + PEAK)

    def peak_evidence(self) -> CudaEvidence | None:
        return self.source.peak_evidence(self.mark) if self.source is not None else None

    def sync(self) -> None:
        assert self.source is not None
        self.source.refresh()

    def read(self) -> float:
        assert self.source is not None
        return stat(self.source.stats, self.name)

    def stop(self) -> None:
        if self.source is not None and self.mark is not None:
            self.source.close_mark(self.mark)
            self.mark = None
        if self.source is not None:
            self.source.release(stat_users=self.reads_stats, sync_users=self.syncs)
            self.source = None


class DeviceUsedProbe(CudaProbe):
    """Bytes in use on the whole device (every process on it), from cudaMemGetInfo."""

    reads_stats = False
    syncs = True

    def read(self) -> float:
        assert self.source is not None
        free, total = self.source.torch.cuda.mem_get_info(self.source.device)
        return float(total - free)


def _factory(name: str) -> type[Probe]:
    base = DeviceUsedProbe if name == "cuda_device_used" else CudaProbe

    class Named(base):  # type: ignore[misc, valid-type]
        def __init__(self, options: Mapping[str, Any] | None = None) -> None:
            super().__init__(options, name=name)

    Named.__name__ = Named.__qualname__ = f"CudaProbe[{name}]"
    return Named


PROBE_CLASSES: dict[str, type[Probe]] = {
    name: _factory(name) for name in (*STAT_KEYS, "cuda_device_used")
}
