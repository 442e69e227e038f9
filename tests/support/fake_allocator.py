"""The stand-in allocator behind fake_torch.py: its books (blocks, pools, segments, the
cuBLAS workspace, allocations past the cache) and torch's calls on them (``memory_stats``,
history recording, settings). fake_torch.py says what it models."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from support.fake_snapshot import ENGINE_FRAMES, OUTER_FRAMES, formatted_stack

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
    stream: int = 0
    forward_frames: list[str] = field(default_factory=list)

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
                 cublas: bool = False, devices: int = 1, workspace: int = WORKSPACE,
                 caching: bool = True, legacy: bool = False) -> None:
        self.leak = leak
        #: 32 MiB on Hopper; 1 MiB (small pool) for the cuBLASLt workspace when it is not
        #: unified with cuBLAS's (TORCH_CUBLASLT_UNIFIED_WORKSPACE=0).
        self.workspace_size = workspace
        self.backend = backend
        self.expandable = expandable
        self.cublas = cublas
        self.devices = devices
        #: torch reads PYTORCH_NO_CUDA_MEMORY_CACHING once, set to any value.
        self.caching = caching and os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") is None
        self.legacy = legacy
        self.initialised = False
        self.current = 0
        self.blocks: dict[int, Block] = {}
        #: Allocations made past the caching allocator (cudaMalloc): no figure, no snapshot.
        self.uncached: dict[int, Block] = {}
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
        #: The highest of each ``.current`` figure since the latest reset, by device.
        self.peaks: list[dict[str, float]] = [{} for _ in range(devices)]
        #: The settings string last set (torch returns it as it was given).
        self.settings = "expandable_segments:True" if expandable else ""

    # -- the workload's side ---------------------------------------------------------------

    def alloc(self, size: int, site: tuple[str, int, str] | None = None,
              device: int | None = None, stack: list[dict[str, Any]] | None = None,
              stream: int = 0) -> int:
        """``site``: the workload's line, beneath one of torch's; ``stack``: the Python frames
        in full, innermost first."""
        frames: list[dict[str, Any]] = []
        if stack is not None:
            frames = [dict(f) for f in stack]
        elif site:
            frames = [dict(TORCH_FRAME), {"filename": site[0], "line": site[1],
                                          "name": site[2]}, *OUTER_FRAMES]
        return self._allocate(size, device, frames if self._records() else [], stream)

    def backward(self, size: int, forward_site: tuple[str, int, str] | None = None,
                 forward_frames: bool = False, device: int | None = None) -> int:
        """An allocation on the autograd engine's thread (in backward) for the op of
        ``forward_site``: no Python frame; torch may keep the forward's stack."""
        frames: list[dict[str, Any]] = []
        if self._records() and self.recording and self.recording["stacks"] == "all":
            frames = [dict(f) for f in ENGINE_FRAMES]
        address = self._allocate(size, device, frames, 0)
        block = self.blocks.get(address)
        if forward_frames and forward_site and block is not None and self._records():
            site = {"filename": forward_site[0], "line": forward_site[1], "name": forward_site[2]}
            block.forward_frames = formatted_stack([TORCH_FRAME, site, *OUTER_FRAMES])
        return address

    def _records(self) -> bool:
        return self.recording is not None and self.recording["context"] is not None

    def _allocate(self, size: int, device: int | None, frames: list[dict[str, Any]],
                  stream: int) -> int:
        self.initialised = True
        size = round_up(size, 512)
        address = self.next_address
        self.next_address += round_up(size, SEGMENT)
        block = Block(address, size, self.current if device is None else device, frames,
                      stream)
        if not self.caching:
            self.uncached[address] = Block(address, size, block.device)
            return address
        self.blocks[address] = block
        self._record("alloc", block)
        self._reserve(block.device)
        self._note_peaks(block.device)
        return address

    def _note_peaks(self, device: int) -> None:
        peaks = self.peaks[device]
        for key, value in self._current(device).items():
            if key.endswith(".current") and value > peaks.get(key, 0):
                peaks[key] = value

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        index = self._index(device)
        self.peaks[index] = {key: value for key, value in self._current(index).items()
                             if key.endswith(".current")}

    def free(self, address: int) -> None:
        if self.uncached.pop(address, None) is not None:
            return
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
        stats = self._current(index)
        for key, value in self.peaks[index].items():
            stats[key[: -len("current")] + "peak"] = max(int(value), stats[key])
        return stats

    def _current(self, index: int) -> dict[str, int]:
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
        self.recording = {"enabled": enabled, "context": context, "stacks": stacks}
        self.max_entries = max_entries if enabled == "all" else 1
        if clear_history:
            self.trace.clear()

    def record_memory_history_2_0(self, enabled: bool, record_context: bool = True,
                                  trace_alloc_max_entries: int = 1,
                                  trace_alloc_record_context: bool = False,
                                  device: Any = None, record_context_cpp: bool = False) -> None:
        """torch 2.0's signature: a bool, and none of 2.1's ``context`` or ``stacks``."""
        self.history_calls.append({"enabled": enabled, "legacy": True})
        self.recording = ({"enabled": "state", "context": "state" if record_context else None,
                           "stacks": "all" if record_context_cpp else "python"}
                          if enabled else None)
        self.max_entries = trace_alloc_max_entries

    def set_settings(self, settings: str) -> None:
        """``torch._C._accelerator_setAllocatorSettings``: the keys given take effect, the
        others keep their values, and the string is kept as given."""
        self.settings = settings
        for item in settings.replace(" ", "").split(","):
            key, _, value = item.partition(":")
            if key == "expandable_segments":
                self.expandable = value == "True"

    def mem_get_info(self, device: Any = None) -> tuple[int, int]:
        index = self._index(device)
        direct = sum(b.size for b in self.uncached.values() if b.device == index)
        used = CONTEXT + self.reserved[index] + direct
        return TOTAL - used, TOTAL
