"""A stand-in for torch's CUDA API, so the CUDA probes' code paths run on CPU machines.

It behaves as torch 2.13's caching allocator does where the plugin depends on it (read from
torch's Python and C++ source; ../shared/CUDA-REVIEW.md has the references). The figures are
synthetic; the behaviour is torch's:

- ``torch.device("cuda").index`` is None; the current device resolves it;
- ``memory_stats()`` is ``{}`` until CUDA is initialised, then holds the allocator's whole key
  set, whatever was allocated; a block of 1 MiB or less is in the small pool;
- a cuBLAS call (``matmul``) allocates a workspace (32 MiB, large pool) when none is live;
  clearing the workspaces frees it, and the next cuBLAS call allocates it again;
- history is process-wide; ``enabled="all"`` keeps a trace entry per alloc and free (up to
  ``max_entries``, unbounded by default), ``"state"`` at most one; a block allocated while
  a context is recorded keeps its frames until it is freed, also after recording stops;
  switching recording off clears the trace;
- backend ``cudaMallocAsync``: only the all-pool totals are booked, every pool, block,
  segment and retry figure reads 0; history and snapshots raise;
- expandable segments: one segment per pool, grown in place: the segment count stays put.

A workload calls ``alloc``/``free``/``matmul``, or ``step()``: keep ``leak`` bytes allocated
at LEAK_SITE, allocate and free a transient, and (``cublas=True``) run one matmul.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

MiB = 1024**2
SMALL_LIMIT = MiB
WORKSPACE = 32 * MiB
SEGMENT = 2 * MiB
CONTEXT = 512 * MiB
TOTAL = 80 * 1024**3
TORCH_FRAME = {"filename": "/site-packages/torch/nn/modules/linear.py", "line": 125,
               "name": "forward"}
LEAK_SITE = ("/work/project/rssm.py", 42, "observe")
MATMUL_SITE = ("/work/project/rssm.py", 40, "observe")
TRANSIENT_SITE = ("/work/project/rssm.py", 41, "observe")
STAT_GROUPS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
               "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
POOLS = ("all", "small_pool", "large_pool")
METRICS = ("current", "peak", "allocated", "freed")
SCALARS = ("num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams",
           "num_device_alloc", "num_device_free")


def round_up(size: int, step: int) -> int:
    return -(-max(size, 1) // step) * step


@dataclass
class Block:
    address: int
    size: int
    device: int
    frames: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pool(self) -> str:
        return "small" if self.size <= SMALL_LIMIT else "large"


class FakeDevice:
    """torch.device: ``"cuda"`` has index None; a malformed string raises RuntimeError."""

    def __init__(self, spec: Any, index: int | None = None) -> None:
        kind, _, number = str(spec).partition(":")
        if kind not in ("cuda", "cpu", "meta") or (number and not number.isdigit()):
            raise RuntimeError(f"Invalid device string: '{spec}'")
        self.type = kind
        self.index = int(number) if number else index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"


class FakeAllocator:
    def __init__(self, leak: int, backend: str = "native", expandable: bool = False,
                 cublas: bool = False, devices: int = 1, workspace: int = WORKSPACE) -> None:
        self.leak = leak
        #: 32 MiB on Hopper; 1 MiB (small pool) for the cuBLASLt workspace when it is not
        #: unified with cuBLAS's (TORCH_CUBLASLT_UNIFIED_WORKSPACE=0).
        self.workspace_size = workspace
        self.backend = backend
        self.expandable = expandable
        self.cublas = cublas
        self.devices = devices
        self.initialised = False
        self.current = 0
        self.blocks: dict[int, Block] = {}
        self.next_address = 0x7F0000000000
        self.reserved = [0] * devices
        self.segments = [0] * devices
        self.workspace: int | None = None
        self.workspaces_taken = 0
        self.kept: list[int] = []
        #: The active recording's settings, None when history is off.
        self.recording: dict[str, Any] | None = None
        self.max_entries = 0
        self.trace: list[dict[str, Any]] = []
        self.history_calls: list[dict[str, Any]] = []
        self.synced = 0
        self.cleared = 0
        self.snapshots = 0
        self.settings = "expandable_segments:True" if expandable else ""

    # -- the workload's side ---------------------------------------------------------------

    def alloc(self, size: int, site: tuple[str, int, str] | None = None,
              device: int | None = None) -> int:
        self.initialised = True
        size = round_up(size, 512)
        address = self.next_address
        self.next_address += round_up(size, SEGMENT)
        frames: list[dict[str, Any]] = []
        if self.recording is not None and self.recording["context"] is not None and site:
            frames = [dict(TORCH_FRAME), {"filename": site[0], "line": site[1],
                                          "name": site[2]}]
        block = Block(address, size, self.current if device is None else device, frames)
        self.blocks[address] = block
        self._record("alloc", block)
        self._reserve(block.device)
        return address

    def free(self, address: int) -> None:
        block = self.blocks.pop(address)
        self._record("free_requested", block)
        self._record("free_completed", block)

    def matmul(self, site: tuple[str, int, str] = MATMUL_SITE) -> None:
        """A cuBLAS call: takes a workspace from the allocator when none is live."""
        if self.workspace is None:
            self.workspace = self.alloc(self.workspace_size, site)
            self.workspaces_taken += 1

    def step(self) -> None:
        if self.leak:
            self.kept.append(self.alloc(self.leak, LEAK_SITE))
        self.free(self.alloc(4096, TRANSIENT_SITE))
        if self.cublas:
            self.matmul()

    def clear_workspaces(self) -> None:
        self.cleared += 1
        if self.workspace is not None:
            self.free(self.workspace)
            self.workspace = None

    # -- torch's side ----------------------------------------------------------------------

    def _record(self, action: str, block: Block) -> None:
        if self.recording is None:
            return
        self.trace.append({"action": action, "addr": block.address, "size": block.size,
                           "frames": list(block.frames)})
        del self.trace[:-self.max_entries]

    def _reserve(self, device: int) -> None:
        live = sum(b.size for b in self.blocks.values() if b.device == device)
        if live <= self.reserved[device]:
            return
        grown = round_up(live - self.reserved[device], SEGMENT)
        self.reserved[device] += grown
        self.segments[device] = 2 if self.expandable else self.segments[device] + grown // SEGMENT

    def _index(self, device: Any) -> int:
        if device is None:
            return self.current
        if isinstance(device, int):
            return device
        resolved = device if isinstance(device, FakeDevice) else FakeDevice(device)
        if resolved.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {resolved}")
        return self.current if resolved.index is None else resolved.index

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        if not self.initialised:
            return {}
        index = self._index(device)
        stats = {f"{group}.{pool}.{metric}": 0
                 for group in STAT_GROUPS for pool in POOLS for metric in METRICS}
        stats.update({name: 0 for name in SCALARS})
        stats.update({f"oversize_{kind}.{metric}": 0
                      for kind in ("allocations", "segments") for metric in METRICS})
        live = [b for b in self.blocks.values() if b.device == index]
        total = sum(b.size for b in live)
        for key in ("allocated_bytes", "active_bytes", "requested_bytes"):
            stats[f"{key}.all.current"] = total
        stats["reserved_bytes.all.current"] = self.reserved[index]
        if self.backend != "native":
            return stats  # cudaMallocAsync books the totals only
        stats["segment.all.current"] = self.segments[index]
        stats["allocation.all.current"] = stats["active.all.current"] = len(live)
        for pool in ("small", "large"):
            mine = [b for b in live if b.pool == pool]
            for key in ("allocated_bytes", "active_bytes", "requested_bytes"):
                stats[f"{key}.{pool}_pool.current"] = sum(b.size for b in mine)
            stats[f"active.{pool}_pool.current"] = len(mine)
            stats[f"allocation.{pool}_pool.current"] = len(mine)
        return stats

    def record_memory_history(self, enabled: Any = "all", context: Any = "all",
                              stacks: str = "all", max_entries: int = sys.maxsize,
                              device: Any = None, clear_history: bool = False,
                              **_: Any) -> None:
        if self.backend != "native":
            raise RuntimeError("cudaMallocAsync does not yet support recordHistory. If you "
                               "need it, please file an issue describing your use case.")
        self.history_calls.append({"enabled": enabled, "context": context, "stacks": stacks,
                                   "max_entries": max_entries})
        if enabled is None:
            self.recording = None
            self.trace.clear()  # and the blocks keep their frames
            return
        self.recording = {"enabled": enabled, "context": context}
        self.max_entries = max_entries if enabled == "all" else 1
        if clear_history:
            self.trace.clear()

    def snapshot(self, device: Any = None) -> dict[str, Any]:
        if self.backend != "native":
            raise RuntimeError("cudaMallocAsync does not yet support snapshot.")
        self.snapshots += 1  # every device at once, whatever ``device`` says
        segments = []
        for index in range(self.devices):
            for pool in ("small", "large"):
                blocks = [{"address": b.address, "size": b.size, "requested_size": b.size,
                           "state": "active_allocated", "frames": [dict(f) for f in b.frames]}
                          for b in self.blocks.values() if b.device == index and b.pool == pool]
                if blocks:
                    segments.append({"device": index, "segment_type": pool,
                                     "is_expandable": self.expandable, "blocks": blocks})
        return {"segments": segments, "device_traces": [list(self.trace)]}

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        used = CONTEXT + self.reserved[self._index(device)]
        return TOTAL - used, TOTAL


def make(leak: int = 0, available: bool = True, backend: str = "native",
         expandable: bool = False, cublas: bool = False, devices: int = 1,
         workspace: int = WORKSPACE) -> tuple[types.ModuleType, FakeAllocator]:
    allocator = FakeAllocator(leak, backend, expandable, cublas, devices, workspace)
    # The model's weights: allocated before any test, without history.
    for _ in range(8):
        allocator.alloc(512)
    allocator.alloc(2 * MiB)
    allocator.initialised = False
    torch = types.ModuleType("torch")
    cuda = types.SimpleNamespace()
    memory = types.SimpleNamespace()

    def init() -> None:
        allocator.initialised = True

    def current_device() -> int:
        init()  # torch.cuda.current_device() initialises CUDA
        return allocator.current

    def synchronize(device: Any = None) -> None:
        allocator._index(device)
        allocator.synced += 1

    def empty(*size: int, device: Any = None, **_: Any) -> None:
        allocator.free(allocator.alloc(4 * max(1, *size), device=allocator._index(device)))

    memory._record_memory_history = allocator.record_memory_history
    memory._snapshot = allocator.snapshot
    memory.get_allocator_backend = lambda: allocator.backend
    cuda.is_available = lambda: available
    cuda.is_initialized = lambda: allocator.initialised
    cuda.device_count = lambda: devices
    cuda.init = init
    cuda.current_device = current_device
    cuda.get_device_name = lambda device=None: (current_device(), "Fake GPU")[1]
    cuda.synchronize = synchronize
    cuda.memory_stats = allocator.memory_stats
    cuda.mem_get_info = allocator.mem_get_info
    cuda.memory = memory
    torch.fake_allocator = allocator  # type: ignore[attr-defined]  # for inner test runs
    torch.cuda = cuda  # type: ignore[attr-defined]
    torch.device = FakeDevice  # type: ignore[attr-defined]
    torch.empty = empty  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(  # type: ignore[attr-defined]
        _cuda_clearCublasWorkspaces=allocator.clear_workspaces,
        _cuda_isHistoryEnabled=lambda: allocator.recording is not None,
        _accelerator_getAllocatorSettings=lambda: allocator.settings,
    )
    return torch, allocator
