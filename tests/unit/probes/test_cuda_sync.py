"""The device is drained only where a probe needs it: the allocator books allocations on the
host when an op is dispatched, so memory_stats needs no synchronize; cudaMemGetInfo, which
the driver answers, does."""

from __future__ import annotations

import pytest
from support.cuda_runs import run


def test_allocator_probes_never_synchronize(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {"leak": 4096}, cuda_small_pool=0, cuda_allocated=0)
    assert result["cuda_small_pool"].verdict == "fail"
    assert allocator.synced == 1  # once, when the CUDA context is created


def test_device_used_synchronizes_before_each_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {}, cuda_small_pool=0, cuda_device_used=0)
    assert result.passed
    assert allocator.synced >= 1 + len(result["cuda_device_used"].samples)
