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
- expandable segments: one segment per pool, grown in place: the segment count stays put;
  the snapshot's ``allocator_settings`` say whether they are on (torch 2.5 and later), and
  ``_accelerator_getAllocatorSettings`` returns the settings string last set, which need not
  name them;
- the caching allocator off (``caching=False``, or PYTORCH_NO_CUDA_MEMORY_CACHING set when
  the fake is made, or ``caching_allocator_enable(False)``): allocations bypass it, so
  ``memory_stats`` stays at 0 and snapshots hold no block;
- blocks allocated in backward (``backward``), on the autograd engine's thread: no Python
  frame (``frames: []`` under ``stacks="python"``; C++ frames only under ``"all"``), and,
  where asked (``forward_frames=True``, as newer torch records in anomaly mode), the forward's
  stack as formatted strings, outermost first;
- torch 2.0 (``legacy=True``): ``_record_memory_history`` takes a bool and none of 2.1's
  arguments, there is no ``_cuda_isHistoryEnabled``, and snapshot blocks carry ``history``
  (newest first) instead of ``address`` and ``frames``.

A workload calls ``alloc``/``free``/``matmul``/``backward``, or ``step()``: keep ``leak``
bytes allocated at LEAK_SITE, allocate and free a transient, and (``cublas=True``) run one
matmul. ``alloc(stack=...)`` gives the Python frames in full (innermost first), for stacks
through libraries.
"""

from __future__ import annotations

import types
from typing import Any

from support.fake_allocator import (
    CONTEXT,
    LEAK_SITE,
    MATMUL_SITE,
    SEGMENT,
    SMALL_LIMIT,
    TORCH_FRAME,
    TOTAL,
    TRANSIENT_SITE,
    WORKSPACE,
    Block,
    FakeAllocator,
    FakeDevice,
    MiB,
)
from support.fake_snapshot import snapshot_of

__all__ = ["CONTEXT", "LEAK_SITE", "MATMUL_SITE", "SEGMENT", "SMALL_LIMIT", "TORCH_FRAME",
           "TOTAL", "TRANSIENT_SITE", "WORKSPACE", "Block", "FakeAllocator", "FakeDevice",
           "MiB", "make", "snapshot_of"]


def make(leak: int = 0, available: bool = True, backend: str = "native",
         expandable: bool = False, cublas: bool = False, devices: int = 1,
         workspace: int = WORKSPACE, caching: bool = True, legacy: bool = False,
         snapshot_settings: bool = True, settings_query: bool = True,
         caching_query: bool = True) -> tuple[types.ModuleType, FakeAllocator]:
    """A fake torch. ``legacy``: torch 2.0's history API and snapshot shape;
    ``snapshot_settings``: the snapshot has ``allocator_settings`` (torch 2.5 and later);
    ``settings_query``: ``torch._C._accelerator_getAllocatorSettings`` exists;
    ``caching_query``: ``torch._C._cuda_cudaCachingAllocator_is_enabled`` exists."""
    allocator = FakeAllocator(leak, backend, expandable, cublas, devices, workspace, caching,
                              legacy)
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

    def caching_allocator_enable(value: bool = True) -> None:
        if allocator.initialised:  # as torch: a no-op before CUDA is initialised
            allocator.caching = value

    memory._record_memory_history = (allocator.record_memory_history_2_0 if legacy
                                     else allocator.record_memory_history)
    memory._snapshot = lambda device=None: snapshot_of(allocator, snapshot_settings)
    memory.get_allocator_backend = lambda: allocator.backend
    memory.caching_allocator_enable = caching_allocator_enable
    cuda.is_available = lambda: available
    cuda.is_initialized = lambda: allocator.initialised
    cuda.device_count = lambda: devices
    cuda.init = init
    cuda.current_device = current_device
    cuda.get_device_name = lambda device=None: (current_device(), "Fake GPU")[1]
    cuda.synchronize = synchronize
    cuda.memory_stats = allocator.memory_stats
    cuda.reset_peak_memory_stats = allocator.reset_peak_memory_stats
    cuda.mem_get_info = allocator.mem_get_info
    cuda.memory = memory
    torch.fake_allocator = allocator  # type: ignore[attr-defined]  # for inner test runs
    torch.cuda = cuda  # type: ignore[attr-defined]
    torch.device = FakeDevice  # type: ignore[attr-defined]
    torch.empty = empty  # type: ignore[attr-defined]
    functions: dict[str, Any] = {"_cuda_clearCublasWorkspaces": allocator.clear_workspaces}
    if not legacy:
        functions["_cuda_isHistoryEnabled"] = lambda: allocator.recording is not None
    if settings_query:
        functions["_accelerator_getAllocatorSettings"] = lambda: allocator.settings
        functions["_accelerator_setAllocatorSettings"] = allocator.set_settings
    if caching_query:
        functions["_cuda_cudaCachingAllocator_is_enabled"] = lambda: allocator.caching
    torch._C = types.SimpleNamespace(**functions)  # type: ignore[attr-defined]
    return torch, allocator
