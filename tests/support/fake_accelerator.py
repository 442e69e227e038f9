"""A stand-in for torch's accelerator API (torch.accelerator, torch 2.9 and later) on an XPU
or an MPS device, so that the xpu_* and mps_* probes run on CPU machines. It follows torch
2.13's Python source (torch/accelerator/memory.py) and the allocators' C++ as torch's sources
give them:

- ``torch.accelerator.is_available()``, ``current_accelerator()`` (a device with ``type``),
  ``current_device_index()``; with no accelerator, every ``torch.accelerator.memory`` call
  raises RuntimeError("Cannot access accelerator device when none is available."), as the
  CPU build does;
- ``memory_stats(index)`` flattens the allocator's DeviceStats with dots, ``{}`` before the
  allocator exists; XPU's caching allocator (c10/xpu/XPUCachingAllocator.cpp) books every
  figure per pool (blocks of 1 MiB or less in the small pool); MPS's (MPSAllocator.mm,
  ``getDeviceStats``) only the aggregate allocated and reserved bytes;
- ``reset_peak_memory_stats(index)`` sets every peak to its current value;
- ``legacy=True``: a torch before torch.accelerator.memory (``torch.xpu.memory_stats``, or
  ``torch.mps.current_allocated_memory`` and ``driver_allocated_memory``).
"""

from __future__ import annotations

import types
from collections import OrderedDict
from typing import Any

SMALL = 1024 * 1024
SEGMENT = 2 * 1024 * 1024
NONE_AVAILABLE = "Cannot access accelerator device when none is available."


class Allocator:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.ready = False
        self.blocks: dict[int, int] = {}
        self.next = 1
        self.reserved = 0
        self.peaks: dict[str, int] = {}

    def alloc(self, size: int) -> int:
        self.ready = True
        size = -(-size // 512) * 512
        handle, self.next = self.next, self.next + 1
        self.blocks[handle] = size
        while self.reserved < sum(self.blocks.values()):
            self.reserved += SEGMENT
        for key, value in self.current().items():
            self.peaks[key] = max(self.peaks.get(key, 0), value)
        return handle

    def free(self, handle: int) -> None:
        del self.blocks[handle]

    def current(self) -> dict[str, int]:
        small = [s for s in self.blocks.values() if s <= SMALL]
        large = [s for s in self.blocks.values() if s > SMALL]
        figures = {"allocated_bytes.all": sum(self.blocks.values()),
                   "reserved_bytes.all": self.reserved}
        if self.kind == "xpu":
            figures.update({"active_bytes.small_pool": sum(small),
                            "active_bytes.large_pool": sum(large),
                            "active.small_pool": len(small), "active.large_pool": len(large),
                            "segment.all": self.reserved // SEGMENT})
        return figures

    def stats(self) -> OrderedDict[str, Any]:
        if not self.ready:
            return OrderedDict()
        flat: dict[str, Any] = {}
        for key, value in self.current().items():
            flat[f"{key}.current"] = value
            flat[f"{key}.peak"] = max(self.peaks.get(key, 0), value)
        if self.kind == "xpu":
            flat["num_alloc_retries"] = 0
        return OrderedDict(sorted(flat.items()))

    def reset_peaks(self) -> None:
        self.peaks = dict(self.current())


class Tensor:
    """A tensor on the device: its block goes back to the allocator when it is dropped."""

    def __init__(self, allocator: Allocator, size: int) -> None:
        self.allocator, self.handle = allocator, allocator.alloc(size)

    def __del__(self) -> None:
        self.allocator.free(self.handle)


def make(kind: str | None = "xpu", legacy: bool = False) -> tuple[Any, Allocator]:
    """A ``torch`` module whose accelerator is ``kind`` (None: none)."""
    allocator = Allocator(kind or "none")

    def check() -> None:
        if kind is None:
            raise RuntimeError(NONE_AVAILABLE)

    def memory_stats(index: Any = None) -> OrderedDict[str, Any]:
        check()
        return allocator.stats()

    def reset(index: Any = None) -> None:
        check()
        allocator.reset_peaks()

    memory = types.SimpleNamespace(memory_stats=memory_stats, reset_peak_memory_stats=reset)
    accelerator = types.SimpleNamespace(
        is_available=lambda: kind is not None,
        current_accelerator=lambda: types.SimpleNamespace(type=kind) if kind else None,
        current_device_index=lambda: 0)
    if not legacy:
        accelerator.memory = memory
    torch = types.SimpleNamespace(
        empty=lambda n, device=None: Tensor(allocator, 4 * n),
        xpu=types.SimpleNamespace(is_available=lambda: kind == "xpu",
                                  memory_stats=lambda device=None: allocator.stats(),
                                  reset_peak_memory_stats=lambda device=None: reset()),
        mps=types.SimpleNamespace(
            current_allocated_memory=lambda: allocator.current()["allocated_bytes.all"],
            driver_allocated_memory=lambda: allocator.reserved + SEGMENT),
        backends=types.SimpleNamespace(mps=types.SimpleNamespace(
            is_available=lambda: kind == "mps")))
    if not legacy:
        torch.accelerator = accelerator
    return torch, allocator
