"""Allocator settings that change what the figures mean: the cudaMallocAsync backend (no
pool, block, segment or retry figures; no history) and expandable segments (segments that
grow in place, so their count never moves)."""

from __future__ import annotations

import pytest
from support.cuda_runs import install, run

from pytest_membudget.probes.cuda.allocator import (
    BACKEND_NEUTRAL,
    STAT_KEYS,
    expandable_segments,
    unavailable_reason,
)

NATIVE_ONLY = [name for name in STAT_KEYS if name not in BACKEND_NEUTRAL]


@pytest.mark.parametrize("probe", NATIVE_ONLY)
def test_pool_block_and_segment_probes_name_the_async_backend(
        monkeypatch: pytest.MonkeyPatch, probe: str) -> None:
    install(monkeypatch, backend="cudaMallocAsync")
    reason = str(unavailable_reason(None, probe))
    assert "allocator backend is cudaMallocAsync" in reason
    assert "PYTORCH_CUDA_ALLOC_CONF" in reason


@pytest.mark.parametrize("probe", BACKEND_NEUTRAL)
def test_totals_still_measure_under_the_async_backend(
        monkeypatch: pytest.MonkeyPatch, probe: str) -> None:
    install(monkeypatch, backend="cudaMallocAsync")
    assert unavailable_reason(None, probe) is None


def test_async_backend_totals_catch_a_leak_and_history_says_why_it_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.render.failure import evidence_lines

    result, allocator = run(monkeypatch, {"leak": 4096, "backend": "cudaMallocAsync"},
                            cuda_allocated=0, cuda_history=True)
    assert result["cuda_allocated"].verdict == "fail"
    message = result.evidence_data["cuda_history"]
    assert "cudaMallocAsync allocator backend records no allocation history" in message
    assert "no CUDA allocator history: the cudaMallocAsync" in "\n".join(
        evidence_lines(result.evidence_data))
    assert not allocator.history_calls


@pytest.mark.parametrize("settings, on", [
    ("expandable_segments:True", True),
    ("max_split_size_mb:128, expandable_segments : True", True),  # spaces dropped, as torch
    ("roundup_power2_divisions:[256:1,512:2],expandable_segments:False", False),
    ("", False),
])
def test_expandable_segments_setting(settings: str, on: bool) -> None:
    assert expandable_segments(settings) is on


def test_segments_budget_says_expandable_segments_are_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, expandable=True)
    assert "expandable segments are on" in str(unavailable_reason(None, "cuda_segments"))
    assert unavailable_reason(None, "cuda_reserved") is None


def test_expandable_segments_from_the_environment_when_torch_cannot_say(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A torch whose snapshot has no allocator_settings (before 2.5) reads this variable only.
    install(monkeypatch, snapshot_settings=False, settings_query=False)
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        monkeypatch.delenv(name, raising=False)
    assert unavailable_reason(None, "cuda_segments") is None
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True")
    assert "expandable segments are on" in str(unavailable_reason(None, "cuda_segments"))


def test_the_setting_in_force_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    torch, _ = install(monkeypatch)
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    torch._C._accelerator_setAllocatorSettings("expandable_segments:False")  # at run time
    assert unavailable_reason(None, "cuda_segments") is None
