"""A stand-in for torch's CUDA API, so the CUDA probes' code paths run on CPU machines.

It models a caching allocator whose small pool grows by ``leak`` bytes (one block) each time
the workload calls ``step()``. The memory_stats keys are those torch documents; the figures
are synthetic, not captured from a device.
"""

from __future__ import annotations

import types
from typing import Any


class FakeDevice:
    def __init__(self, spec: str) -> None:
        self.type, _, index = spec.partition(":")
        self.index = int(index) if index else 0


class FakeAllocator:
    def __init__(self, leak: int) -> None:
        self.leak = leak
        self.small_bytes = 512 * 8
        self.small_blocks = 8
        self.large_bytes = 2 * 1024**2
        self.synced = 0
        self.workspace_cleared = 0
        self.history: list[dict[str, Any]] = []
        self.recording = False

    def step(self) -> None:
        self.small_bytes += self.leak
        self.small_blocks += 1
        if self.recording:
            self.history.append({
                "size": self.leak, "state": "active_allocated",
                "frames": [
                    {"filename": "/site-packages/torch/nn/modules/linear.py", "line": 125,
                     "name": "forward"},
                    {"filename": "/work/project/rssm.py", "line": 42, "name": "observe"},
                ],
            })

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        return {
            "allocated_bytes.all.current": self.small_bytes + self.large_bytes,
            "reserved_bytes.all.current": 20 * 1024**2,
            "active_bytes.small_pool.current": self.small_bytes,
            "active_bytes.large_pool.current": self.large_bytes,
            "active.small_pool.current": self.small_blocks,
            "active.large_pool.current": 1,
            "segment.all.current": 3,
            "num_alloc_retries": 0,
        }

    def snapshot(self, device: Any = None) -> dict[str, Any]:
        return {"segments": [
            {"device": 0, "segment_type": "small", "blocks": list(self.history)},
            {"device": 0, "segment_type": "large",
             "blocks": [{"size": self.large_bytes, "state": "active_allocated", "frames": []}]},
        ]}


def make(leak: int, available: bool = True) -> tuple[types.ModuleType, FakeAllocator]:
    allocator = FakeAllocator(leak)
    torch = types.ModuleType("torch")
    cuda = types.SimpleNamespace()
    memory = types.SimpleNamespace()

    def record(enabled: Any = "all", **_: Any) -> None:
        allocator.recording = enabled is not None

    def clear() -> None:
        allocator.workspace_cleared += 1

    def sync(device: Any = None) -> None:
        allocator.synced += 1

    memory._record_memory_history = record
    memory._snapshot = allocator.snapshot
    cuda.is_available = lambda: available
    cuda.device_count = lambda: 1
    cuda.init = lambda: None
    cuda.synchronize = sync
    cuda.memory_stats = allocator.memory_stats
    cuda.mem_get_info = lambda device=None: (70 * 1024**3, 80 * 1024**3)
    cuda.memory = memory
    torch.cuda = cuda  # type: ignore[attr-defined]
    torch.device = FakeDevice  # type: ignore[attr-defined]
    torch.empty = lambda *a, **k: None  # type: ignore[attr-defined]
    torch._C = types.SimpleNamespace(_cuda_clearCublasWorkspaces=clear)  # type: ignore[attr-defined]
    return torch, allocator
