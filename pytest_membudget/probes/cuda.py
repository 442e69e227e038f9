"""The CUDA caching allocator of this process, read from ``torch.cuda.memory_stats``.

Every figure here is per process: the caching allocator's own books, valid when several
processes (pytest-xdist workers) share one GPU. Only ``cuda_device_used`` is device-wide.

The allocator books every allocation and free on the host, when the op is dispatched, so its
figures need no synchronize; only ``cuda_device_used``, which asks the driver, waits for the
device. cuBLAS workspaces are handed back to the allocator right before each reading, as
torch's own leak check does, so that no reading ever counts one (docs/cuda.md says why).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_membudget.probes import Probe

if TYPE_CHECKING:
    from pytest_membudget.probes.cudahistory import History

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
#: The probes that still measure under an allocator backend other than the native caching
#: allocator: cudaMallocAsync books only the all-pool totals and reports every pool, block,
#: segment and retry figure as 0.
BACKEND_NEUTRAL = ("cuda_allocated", "cuda_reserved", "cuda_device_used")
NATIVE = "native"
#: Where torch reads the allocator's settings from, the newer name first.
CONF_VARIABLES = ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")


def stat(stats: Mapping[str, Any], probe: str) -> float:
    """One probe's figure from a memory_stats dict. Once CUDA is initialised the dict holds
    every key whatever was allocated (it is ``{}`` before: the probes initialise CUDA first)."""
    return float(stats.get(STAT_KEYS[probe], 0))


def allocator_backend(torch: Any) -> str:
    """``native`` or ``cudaMallocAsync``, as torch reports it (no CUDA context is created)."""
    query = getattr(torch.cuda.memory, "get_allocator_backend", None)
    return str(query()) if query is not None else NATIVE


def allocator_settings(torch: Any) -> str:
    """The allocator's settings string: the one in force where torch can say (it may have
    been changed at run time), else the environment's."""
    query = getattr(torch._C, "_accelerator_getAllocatorSettings", None)
    if query is not None:
        return str(query())
    return next((os.environ[name] for name in CONF_VARIABLES if os.environ.get(name)), "")


def expandable_segments(settings: str) -> bool:
    """Whether ``expandable_segments:True`` is among the allocator settings."""
    for item in settings.split(","):
        key, _, value = item.partition(":")
        if key.strip() == "expandable_segments":
            return value.strip().lower() == "true"
    return False


def unavailable_reason(device: str | None, probe: str | None = None) -> str | None:
    """Why CUDA (or ``probe`` on this allocator) cannot be measured here, or None."""
    try:
        import torch
    except ImportError:
        return "torch is not installed (pip install 'pytest-membudget[torch]')"
    if not torch.cuda.is_available():
        return "torch.cuda.is_available() is False (no CUDA device, or a CPU build of torch)"
    if device is not None:
        try:
            index = torch.device(f"cuda:{device}" if device.isdigit() else device).index
        except (RuntimeError, ValueError) as exc:
            return f"device={device!r} is not a CUDA device ({exc})"
        if index is not None and index >= torch.cuda.device_count():
            return f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) exist"
    if probe is None or probe in BACKEND_NEUTRAL:
        return None
    backend = allocator_backend(torch)
    if backend != NATIVE:
        return (f"the CUDA allocator backend is {backend} (set in {' or '.join(CONF_VARIABLES)}), "
                "which keeps no pool, block, segment or retry figures: torch reports them as 0. "
                f"Only {', '.join(BACKEND_NEUTRAL)} measure under it")
    if probe == "cuda_segments" and expandable_segments(allocator_settings(torch)):
        return ("expandable segments are on (expandable_segments:True in the allocator "
                "settings): segments grow in place, so their count never moves; budget "
                "cuda_reserved instead")
    return None


class DeviceStats:
    """One device's allocator, shared by every CUDA probe of a run: memory_stats fetched once
    per sample, the device synchronized only where a probe asks the driver, and the
    allocator history of the window (for evidence)."""

    _shared: ClassVar[dict[str | None, DeviceStats]] = {}

    def __init__(self, device: str | None) -> None:
        import torch

        self.torch = torch
        self.option = device
        #: Resolved when CUDA is initialised: torch.device("cuda").index is None.
        self.device: Any = None
        self.index = 0
        self.stats: Mapping[str, Any] = {}
        self.users = 0
        #: Users that read ``stats``; before each fetch, cuBLAS workspaces are cleared.
        self.stat_users = 0
        #: Users that read the driver (cudaMemGetInfo), which needs the device drained.
        self.sync_users = 0
        self.ready = False
        self.clear_workspaces = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        self.history: History | None = None

    @classmethod
    def acquire(cls, device: str | None, reads_stats: bool, syncs: bool) -> DeviceStats:
        source = cls._shared.get(device)
        if source is None:
            source = cls._shared[device] = cls(device)
        source.users += 1
        source.stat_users += reads_stats
        source.sync_users += syncs
        return source

    def release(self, reads_stats: bool, syncs: bool) -> None:
        self.users -= 1
        self.stat_users -= reads_stats
        self.sync_users -= syncs
        if self.users <= 0:
            self.stop_history()
            self._shared.pop(self.option, None)

    def init_context(self) -> None:
        """Create the CUDA context before warm-up, and fix the device: a workload that
        switches the current device does not switch what the probes read."""
        if self.ready:
            return
        self.ready = True
        torch = self.torch
        torch.cuda.init()
        option = self.option
        requested = torch.device(f"cuda:{option}" if option and option.isdigit()
                                 else (option or "cuda"))
        self.index = requested.index if requested.index is not None else (
            torch.cuda.current_device())
        self.device = torch.device("cuda", self.index)
        torch.empty(1, device=self.device)
        torch.cuda.synchronize(self.device)

    def refresh(self) -> None:
        if self.stat_users:
            self.release_workspaces()
            self.stats = self.torch.cuda.memory_stats(self.device)
        if self.sync_users:
            self.torch.cuda.synchronize(self.device)

    def release_workspaces(self) -> None:
        """Hand cuBLAS workspaces back to the allocator's cache: the next cuBLAS call takes
        one again, so no reading counts a workspace and none is live in a snapshot."""
        if self.clear_workspaces is not None:
            self.clear_workspaces()

    def start_history(self) -> None:
        if self.history is None:
            from pytest_membudget.probes.cudahistory import History

            self.release_workspaces()
            self.history = History(self.torch, self.index)
            self.history.start()

    def evidence(self) -> dict[str, Any] | None:
        if self.history is None:
            return None
        self.release_workspaces()
        return self.history.evidence()

    def stop_history(self) -> None:
        if self.history is not None:
            self.history.stop()
            self.history = None


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

    def unavailable(self) -> str | None:
        return unavailable_reason(self.device, self.name)

    def start(self) -> None:
        self.source = DeviceStats.acquire(self.device, self.reads_stats, self.syncs)
        self.source.init_context()

    def before_window(self) -> None:
        assert self.source is not None
        if self.options.get("cuda_history"):
            self.source.start_history()

    def evidence(self) -> dict[str, Any] | None:
        return self.source.evidence() if self.source is not None else None

    def sync(self) -> None:
        assert self.source is not None
        self.source.refresh()

    def read(self) -> float:
        assert self.source is not None
        return stat(self.source.stats, self.name)

    def stop(self) -> None:
        if self.source is not None:
            self.source.release(self.reads_stats, self.syncs)
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
