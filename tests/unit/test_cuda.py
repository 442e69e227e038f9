"""CUDA probes on CPU: memory_stats parsing, snapshot evidence, and a whole run against a
stand-in allocator (see fake_torch.py: synthetic figures with torch's keys)."""

from __future__ import annotations

import sys

import pytest

from pytest_membudget.cudaevidence import live_window_blocks, user_frame
from pytest_membudget.probes.cuda import STAT_KEYS, stat, unavailable_reason
from pytest_membudget.results import BudgetExceeded, build_result
from pytest_membudget.runner import capacity_for, measure
from pytest_membudget.sampling import Measurement
from pytest_membudget.settings import default_run
from pytest_membudget.spec import build_spec

from . import fake_torch

RUN = default_run(iterations=60, warmup=3)


def test_every_probe_reads_its_documented_key() -> None:
    _, allocator = fake_torch.make(512)
    stats = allocator.memory_stats()
    assert stat(stats, "cuda_small_pool") == allocator.small_bytes
    assert stat(stats, "cuda_small_blocks") == allocator.small_blocks
    assert stat(stats, "cuda_large_pool") == allocator.large_bytes
    assert set(STAT_KEYS.values()) <= set(stats)
    assert stat({}, "cuda_alloc_retries") == 0  # no allocation yet: key absent


def test_user_frame_skips_torch_frames() -> None:
    frames = [{"filename": "/x/site-packages/torch/nn/functional.py", "line": 1, "name": "f"},
              {"filename": "/proj/model.py", "line": 9, "name": "forward"}]
    assert user_frame(frames)["line"] == 9
    assert user_frame(frames[:1])["line"] == 1
    assert user_frame([]) is None


def test_live_window_blocks_groups_by_line_and_pool() -> None:
    frame = {"filename": "/proj/rssm.py", "line": 42, "name": "observe"}
    snapshot = {"segments": [
        {"device": 0, "segment_type": "small", "blocks": [
            {"size": 512, "state": "active_allocated", "frames": [frame]},
            {"size": 1024, "state": "active_allocated", "frames": [frame]},
            {"size": 512, "state": "inactive", "frames": [frame]},          # freed
            {"size": 4096, "state": "active_allocated", "frames": []},      # before the window
        ]},
        {"device": 1, "segment_type": "large", "blocks": [
            {"size": 1 << 21, "state": "active_allocated", "frames": [frame]}]},
    ]}
    rows = live_window_blocks(snapshot, device=0)
    assert rows == [{"file": "/proj/rssm.py", "line": 42, "function": "observe",
                     "pool": "small", "bytes": 1536, "blocks": 2}]
    assert len(live_window_blocks(snapshot)) == 2


def test_unavailable_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert "torch is not installed" in str(unavailable_reason(None))


def test_unavailable_without_device(monkeypatch: pytest.MonkeyPatch) -> None:
    torch, _ = fake_torch.make(0, available=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert "is_available() is False" in str(unavailable_reason(None))


def test_unknown_device_index(monkeypatch: pytest.MonkeyPatch) -> None:
    torch, _ = fake_torch.make(0)
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert "only 1 CUDA device" in str(unavailable_reason("cuda:3"))
    assert unavailable_reason("0") is None


def run(monkeypatch: pytest.MonkeyPatch, leak: int, **marker: object):
    from pytest_membudget.probes import create

    torch, allocator = fake_torch.make(leak)
    monkeypatch.setitem(sys.modules, "torch", torch)
    spec = build_spec(RUN, (), marker, "in test")
    options = {"device": spec.run.device, "cuda_history": spec.run.cuda_history}
    probes = {name: create(name, options) for name in spec.probes}
    m = Measurement(spec, probes, capacity_for(spec))
    for _ in measure(spec, probes, m):
        allocator.step()
    return build_result(m), allocator


def test_small_pool_leak_is_caught_with_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, 4096, cuda_small_pool=0, cuda_large_pool=0,
                            cuda_small_blocks=0, cuda_large_blocks=0, cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    assert result["cuda_small_blocks"].verdict == "fail"
    assert result["cuda_large_pool"].verdict == "pass"
    assert result["cuda_small_pool"].slope == pytest.approx(4096)
    assert allocator.workspace_cleared == 1  # once, before the window
    assert allocator.synced >= len(result["cuda_small_pool"].samples) - 1
    blocks = result.evidence_data["cuda_blocks"]
    assert blocks[0]["file"] == "/work/project/rssm.py" and blocks[0]["pool"] == "small"
    assert not allocator.recording  # history switched off again

    from pytest_membudget.report import failure_message

    text = failure_message("t", result, 0.99)
    assert "CUDA pool" in text and "small pool" in text and "active blocks" in text
    assert "rssm.py:42 in observe" in text


def test_flat_pools_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, 0, cuda_small_pool=0, cuda_large_pool=0)
    assert result.passed and not allocator.history


def test_history_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, 4096, cuda_small_pool=0)
    assert result["cuda_small_pool"].verdict == "fail"
    assert "cuda_blocks" not in result.evidence_data and not allocator.history


def test_budget_exceeded_is_an_assertion() -> None:
    assert issubclass(BudgetExceeded, AssertionError)


@pytest.mark.parametrize("budgets, fetches", [
    ({"cuda_device_used": 0}, False),
    ({"cuda_device_used": 0, "cuda_small_pool": 0}, True),
])
def test_memory_stats_are_fetched_only_for_probes_that_read_them(
        monkeypatch: pytest.MonkeyPatch, budgets: dict[str, object], fetches: bool) -> None:
    torch, allocator = fake_torch.make(0)
    calls = []
    fetch = torch.cuda.memory_stats  # type: ignore[attr-defined]
    torch.cuda.memory_stats = lambda device=None: calls.append(1) or fetch(device)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    from pytest_membudget.probes import create

    spec = build_spec(RUN, (), budgets, "in test")
    probes = {name: create(name, {"device": None}) for name in spec.probes}
    m = Measurement(spec, probes, capacity_for(spec))
    for _ in measure(spec, probes, m):
        allocator.step()
    assert build_result(m).passed
    assert bool(calls) == fetches
    assert allocator.synced > 0  # every sample still waits for the device
