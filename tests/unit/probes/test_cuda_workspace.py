"""cuBLAS workspaces never read as growth: a flat loop of cuBLAS calls passes every slope and
growth budget, and the workspace never shows in the evidence.

cuBLAS takes a workspace (32 MiB on Hopper, large pool) from the caching allocator at its
first call on a stream, and again at the first call after the workspaces were cleared. The
probes release the workspaces right before each reading, so no reading counts one."""

from __future__ import annotations

import pytest
from support import fake_torch
from support.cuda_runs import run

SLOPES = {name: 0 for name in (
    "cuda_allocated", "cuda_reserved", "cuda_small_pool", "cuda_large_pool",
    "cuda_small_blocks", "cuda_large_blocks", "cuda_segments", "cuda_alloc_retries",
    "cuda_device_used")}
GROWTH = {"cuda_allocated_growth": 0, "cuda_large_pool_growth": 0,
          "cuda_large_blocks_growth": 0, "cuda_small_pool_growth": 0,
          "cuda_small_blocks_growth": 0, "cuda_reserved_growth": 0}


@pytest.mark.parametrize("workspace", [fake_torch.WORKSPACE, fake_torch.MiB],
                         ids=["large-pool workspace", "small-pool Lt workspace"])
def test_flat_cublas_loop_passes_slope_and_growth_budgets(
        monkeypatch: pytest.MonkeyPatch, workspace: int) -> None:
    result, allocator = run(monkeypatch, {"cublas": True, "workspace": workspace},
                            **SLOPES, **GROWTH)
    assert result.passed, result.failures
    samples = len(result["cuda_allocated"].samples)
    assert allocator.cleared >= samples  # released before every reading
    # ... and taken again by every iteration's matmul (two samples follow no iteration: the
    # very first, and the window's first).
    assert allocator.workspaces_taken >= samples - 2


def test_workspace_never_shows_in_the_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _allocator = run(monkeypatch, {"leak": 4096, "cublas": True},
                            cuda_small_pool=0, cuda_large_pool=0, cuda_allocated=0,
                            cuda_large_pool_growth=0, cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    assert result["cuda_large_pool"].verdict == "pass"
    assert {o.probe for o in result.failures} == {"cuda_allocated", "cuda_small_pool"}
    rows = result.evidence_data["cuda_blocks"]
    assert [(r["line"], r["pool"]) for r in rows] == [(fake_torch.LEAK_SITE[1], "small")]
