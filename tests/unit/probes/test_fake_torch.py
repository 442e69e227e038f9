"""The stand-in allocator behaves as torch does where the CUDA probes depend on it: against
the real torch where a CPU build can tell, against torch's source (CUDA-REVIEW.md) where
only a device could."""

from __future__ import annotations

import importlib.util
import inspect
import traceback

import pytest
from support import fake_torch
from support.fake_snapshot import formatted_stack

MiB = fake_torch.MiB
real_torch = importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not real_torch, reason="torch is not installed")
@pytest.mark.parametrize("spec", ["cuda", "cuda:1", "cpu", "meta"])
def test_device_index_as_torch_gives_it(spec: str) -> None:
    import torch

    assert fake_torch.FakeDevice(spec).index == torch.device(spec).index


@pytest.mark.skipif(not real_torch, reason="torch is not installed")
@pytest.mark.parametrize("spec", ["cuda:x", "gpu"])
def test_malformed_device_raises_as_torch_does(spec: str) -> None:
    import torch

    with pytest.raises(RuntimeError):
        torch.device(spec)
    with pytest.raises(RuntimeError):
        fake_torch.FakeDevice(spec)


@pytest.mark.skipif(not real_torch, reason="torch is not installed")
def test_memory_stats_are_empty_before_cuda_is_initialised() -> None:
    import torch

    if torch.cuda.is_initialized():
        pytest.skip("CUDA was initialised in this process already")
    torch_fake, _allocator = fake_torch.make()
    assert torch.cuda.memory_stats() == {} == torch_fake.cuda.memory_stats()
    torch_fake.cuda.init()
    stats = torch_fake.cuda.memory_stats()
    assert len(stats) > 100 and stats["active.small_pool.current"] == 8


def test_pools_split_at_one_mib() -> None:
    _, allocator = fake_torch.make()
    assert allocator.blocks[allocator.alloc(MiB)].pool == "small"
    assert allocator.blocks[allocator.alloc(MiB + 1)].pool == "large"


def test_workspace_comes_back_at_the_next_cublas_call_after_a_clear() -> None:
    torch, allocator = fake_torch.make()
    torch.cuda.init()
    before = torch.cuda.memory_stats()["active_bytes.large_pool.current"]
    allocator.matmul()
    torch._C._cuda_clearCublasWorkspaces()
    assert torch.cuda.memory_stats()["active_bytes.large_pool.current"] == before
    allocator.matmul()
    grown = torch.cuda.memory_stats()["active_bytes.large_pool.current"] - before
    assert grown == fake_torch.WORKSPACE


def test_history_side_effects() -> None:
    torch, allocator = fake_torch.make()
    memory = torch.cuda.memory
    memory._record_memory_history("all", context="alloc", stacks="python")
    kept = [allocator.alloc(4096, fake_torch.LEAK_SITE) for _ in range(3)]
    allocator.free(allocator.alloc(4096, fake_torch.LEAK_SITE))
    assert len(allocator.trace) == 6  # alloc, free requested and completed: unbounded
    memory._record_memory_history(None)
    assert not torch._C._cuda_isHistoryEnabled() and allocator.trace == []
    frames = [b["frames"] for s in memory._snapshot()["segments"] for b in s["blocks"]
              if b["address"] in kept]
    assert len(frames) == 3 and all(frames)  # block frames outlive the recording
    memory._record_memory_history("state", context="state", stacks="python")
    for _ in range(5):
        allocator.alloc(4096, fake_torch.LEAK_SITE)
    assert len(allocator.trace) == 1  # "state" keeps one entry at most


def test_async_backend_books_totals_only_and_refuses_history() -> None:
    torch, allocator = fake_torch.make(backend="cudaMallocAsync")
    torch.cuda.init()
    allocator.alloc(4096)
    stats = torch.cuda.memory_stats()
    assert stats["allocated_bytes.all.current"] > 0
    assert stats["active_bytes.small_pool.current"] == stats["segment.all.current"] == 0
    with pytest.raises(RuntimeError, match="cudaMallocAsync"):
        torch.cuda.memory._record_memory_history("state")
    with pytest.raises(RuntimeError, match="cudaMallocAsync"):
        torch.cuda.memory._snapshot()


def test_expandable_segments_grow_in_place() -> None:
    torch, allocator = fake_torch.make(expandable=True)
    torch.cuda.init()
    before = torch.cuda.memory_stats()
    for _ in range(8):
        allocator.alloc(3 * MiB)
    after = torch.cuda.memory_stats()
    assert after["reserved_bytes.all.current"] > before["reserved_bytes.all.current"]
    assert after["segment.all.current"] == before["segment.all.current"]


def test_forward_frames_are_formatted_as_traceback_formats_a_stack() -> None:
    frames = [fake_torch.TORCH_FRAME, {"filename": "/work/project/rssm.py", "line": 42,
                                       "name": "observe"}]
    summaries = [traceback.FrameSummary(f["filename"], f["line"], f["name"], lookup_line=False,
                                        line="") for f in reversed(frames)]
    assert formatted_stack(frames) == traceback.format_list(summaries)


@pytest.mark.skipif(not real_torch, reason="torch is not installed")
def test_the_2_0_history_call_takes_the_arguments_torch_kept_from_2_0() -> None:
    # torch keeps 2.0's signature as _record_memory_history_legacy, later arguments appended.
    import torch

    legacy = list(inspect.signature(torch.cuda.memory._record_memory_history_legacy).parameters)
    _, allocator = fake_torch.make(legacy=True)
    fake = list(inspect.signature(allocator.record_memory_history_2_0).parameters)
    assert legacy[:len(fake)] == fake
