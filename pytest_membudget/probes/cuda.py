"""The CUDA caching allocator of this process, read from ``torch.cuda.memory_stats``.

Every figure here is per process: the caching allocator's own books, valid when several
processes (pytest-xdist workers) share one GPU. Only ``cuda_device_used`` is device-wide.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pytest_membudget.probes import Probe

#: probe name -> key in torch.cuda.memory_stats()
STAT_KEYS: dict[str, str] = {
    "cuda_allocated": "allocated_bytes.all.current",
    "cuda_reserved": "reserved_bytes.all.current",
    "cuda_small_pool": "active_bytes.small_pool.current",
    "cuda_large_pool": "active_bytes.large_pool.current",
    "cuda_small_blocks": "active.small_pool.current",
    "cuda_large_blocks": "active.large_pool.current",
    "cuda_segments": "segment.all.current",
    "cuda_alloc_retries": "num_alloc_retries",
}


def stat(stats: Mapping[str, Any], probe: str) -> float:
    """One probe's figure from a memory_stats dict; absent keys (no allocation yet) are 0."""
    return float(stats.get(STAT_KEYS[probe], 0))


def unavailable_reason(device: str | None) -> str | None:
    """Why CUDA cannot be measured here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'pytest-membudget[torch]')"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA device, or a CPU build of torch)"
    if device is not None:
        try:
            index = torch.device(device if not device.isdigit() else f"cuda:{device}").index
        except (RuntimeError, ValueError) as exc:
            return f"device={device!r} is not a CUDA device ({exc})"
        if index is not None and index >= torch.cuda.device_count():
            return f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) exist"
    return None


class DeviceStats:
    """memory_stats of one device, fetched once per sample for all CUDA probes."""

    _shared: ClassVar[dict[str | None, DeviceStats]] = {}

    def __init__(self, device: str | None) -> None:
        import torch

        self.torch = torch
        self.device = torch.device(
            f"cuda:{device}" if device and device.isdigit() else (device or "cuda")
        )
        self.stats: Mapping[str, Any] = {}
        self.users = 0
        #: Users that read ``stats``; without any, a sample only synchronizes.
        self.stat_users = 0
        self.recording = False
        self.ready = False
        self.window_ready = False

    @classmethod
    def acquire(cls, device: str | None, reads_stats: bool = True) -> DeviceStats:
        source = cls._shared.get(device)
        if source is None:
            source = cls._shared[device] = cls(device)
        source.users += 1
        source.stat_users += reads_stats
        return source

    def release(self, device: str | None, reads_stats: bool = True) -> None:
        self.users -= 1
        self.stat_users -= reads_stats
        if self.users <= 0:
            self._shared.pop(device, None)

    def init_context(self) -> None:
        if self.ready:
            return
        self.ready = True
        self.torch.cuda.init()
        self.torch.empty(1, device=self.device)
        self.torch.cuda.synchronize(self.device)

    def refresh(self) -> None:
        self.torch.cuda.synchronize(self.device)
        if self.stat_users:
            self.stats = self.torch.cuda.memory_stats(self.device)

    def record_history(self, on: bool) -> None:
        """Record the Python frames of each allocation (torch's allocator history); costly,
        so only when asked for (the ``cuda_history`` setting)."""
        if on == self.recording:
            return
        memory = self.torch.cuda.memory
        if on:
            memory._record_memory_history(enabled="all", context="alloc", stacks="python",
                                          device=self.device)
        else:
            memory._record_memory_history(enabled=None, device=self.device)
        self.recording = on

    def clear_workspaces(self) -> None:
        if self.window_ready:
            return
        self.window_ready = True
        # cuBLAS keeps a workspace per stream and handle, allocated on first use; a window
        # that begins before it exists reads its allocation as growth.
        clear = getattr(self.torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        self.torch.cuda.synchronize(self.device)


class CudaProbe(Probe):
    """One figure of the caching allocator. The CUDA context is created before warm-up;
    cuBLAS workspaces are cleared before the window; each sample follows a synchronize."""

    #: Whether read() looks at memory_stats (fetched once per sample for all such probes).
    reads_stats = True

    def __init__(self, options: Mapping[str, Any] | None = None, name: str = "") -> None:
        super().__init__(options)
        self.name = name
        self.device: str | None = self.options.get("device")
        self.source: DeviceStats | None = None

    def unavailable(self) -> str | None:
        return unavailable_reason(self.device)

    def start(self) -> None:
        self.source = DeviceStats.acquire(self.device, self.reads_stats)
        self.source.init_context()

    def before_window(self) -> None:
        assert self.source is not None
        self.source.clear_workspaces()
        if self.options.get("cuda_history"):
            self.source.record_history(True)

    def evidence(self) -> dict[str, Any] | None:
        if self.source is None or not self.source.recording:
            return None
        from pytest_membudget.cudaevidence import live_window_blocks

        snapshot = self.source.torch.cuda.memory._snapshot(self.source.device)
        return {"cuda_blocks": live_window_blocks(snapshot, device=self.source.device.index)}

    def sync(self) -> None:
        assert self.source is not None
        self.source.refresh()

    def read(self) -> float:
        assert self.source is not None
        return stat(self.source.stats, self.name)

    def stop(self) -> None:
        if self.source is not None:
            self.source.record_history(False)
            self.source.release(self.device, self.reads_stats)
            self.source = None


class DeviceUsedProbe(CudaProbe):
    """Bytes in use on the whole device (every process on it), from cudaMemGetInfo."""

    reads_stats = False

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
