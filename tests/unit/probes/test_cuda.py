"""CUDA probes on CPU: memory_stats parsing, snapshot evidence, and whole runs against a
stand-in allocator (fake_torch.py: synthetic figures, torch's behaviour)."""

from __future__ import annotations

import sys

import pytest
from support import fake_torch
from support.cuda_runs import install, run

from pytest_membudget.measure.results import BudgetExceeded
from pytest_membudget.probes.cuda.allocator import STAT_KEYS, stat, unavailable_reason
from pytest_membudget.probes.cuda.snapshot import live_keys, live_window_blocks
from pytest_membudget.probes.cuda.stacks import site_and_caller


def test_every_probe_reads_its_documented_key() -> None:
    _, allocator = fake_torch.make(512)
    allocator.initialised = True
    stats = allocator.memory_stats()
    small = [b for b in allocator.blocks.values() if b.pool == "small"]
    assert stat(stats, "cuda_small_pool") == sum(b.size for b in small)
    assert stat(stats, "cuda_small_blocks") == len(small)
    assert stat(stats, "cuda_large_pool") == 2 * fake_torch.MiB
    assert set(STAT_KEYS.values()) <= set(stats)


def test_the_line_named_is_the_first_outside_torch() -> None:
    frames = [{"filename": "/x/site-packages/torch/nn/functional.py", "line": 1, "name": "f"},
              {"filename": "/proj/model.py", "line": 9, "name": "forward"}]
    assert site_and_caller(frames)[0]["line"] == 9  # type: ignore[index]
    assert site_and_caller(frames[:1])[0]["line"] == 1  # type: ignore[index]
    assert site_and_caller([]) == (None, None)


def test_live_window_blocks_groups_by_line_and_pool() -> None:
    frame = {"filename": "/proj/rssm.py", "line": 42, "name": "observe"}
    snapshot = {"segments": [
        {"device": 0, "segment_type": "small", "blocks": [
            {"size": 512, "state": "active_allocated", "frames": [frame]},
            {"size": 1024, "state": "active_allocated", "frames": [frame]},
            {"size": 512, "state": "inactive", "frames": [frame]},          # freed
            {"size": 4096, "state": "active_allocated", "frames": []},      # live before
        ]},
        {"device": 1, "segment_type": "large", "blocks": [
            {"size": 1 << 21, "state": "active_allocated", "frames": [frame]}]},
    ]}
    for block in snapshot["segments"][0]["blocks"]:  # type: ignore[index]
        block["address"] = 0x1000 * block["size"]  # type: ignore[index, operator]
    before = {"segments": [{"device": 0, "segment_type": "small",
                            "blocks": [snapshot["segments"][0]["blocks"][3]]}]}  # type: ignore[index]
    rows = live_window_blocks(snapshot, device=0, exclude=live_keys(before))
    assert rows == [{"origin": "python", "file": "/proj/rssm.py", "line": 42,
                     "function": "observe", "pool": "small", "bytes": 1536, "blocks": 2}]
    assert len(live_window_blocks(snapshot, exclude=live_keys(before))) == 2


def test_unavailable_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    assert "torch is not installed" in str(unavailable_reason(None))


def test_unavailable_without_device(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, available=False)
    assert "is_available() is False" in str(unavailable_reason(None))


def test_unknown_device_index(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch)
    assert "only 1 CUDA device" in str(unavailable_reason("cuda:3"))
    assert unavailable_reason("0") is None
    assert unavailable_reason("cuda") is None


def test_small_pool_leak_is_caught_with_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {"leak": 4096}, cuda_small_pool=0, cuda_large_pool=0,
                            cuda_small_blocks=0, cuda_large_blocks=0, cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    assert result["cuda_small_blocks"].verdict == "fail"
    assert result["cuda_large_pool"].verdict == "pass"
    assert result["cuda_small_pool"].slope == pytest.approx(4096)
    blocks = result.evidence_data["cuda_blocks"]
    assert blocks[0]["file"] == "/work/project/rssm.py" and blocks[0]["pool"] == "small"
    assert allocator.recording is None  # history switched off again

    from pytest_membudget.render.failure import failure_message

    text = failure_message("t", result, 0.99)
    assert "CUDA pool" in text and "small pool" in text and "active blocks" in text
    assert "rssm.py:42 in observe" in text


def test_flat_pools_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    result, _allocator = run(monkeypatch, {}, cuda_small_pool=0, cuda_large_pool=0,
                            cuda_small_blocks=0, cuda_large_blocks=0, cuda_allocated=0,
                            cuda_reserved=0, cuda_segments=0, cuda_alloc_retries=0)
    assert result.passed, result.failures


def test_history_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {"leak": 4096}, cuda_small_pool=0)
    assert result["cuda_small_pool"].verdict == "fail"
    assert "cuda_blocks" not in result.evidence_data
    assert not allocator.history_calls and not allocator.snapshots


def test_budget_exceeded_is_an_assertion() -> None:
    assert issubclass(BudgetExceeded, AssertionError)


@pytest.mark.parametrize("budgets, fetches", [
    ({"cuda_device_used": 0}, False),
    ({"cuda_device_used": 0, "cuda_small_pool": 0}, True),
])
def test_memory_stats_are_fetched_only_for_probes_that_read_them(
        monkeypatch: pytest.MonkeyPatch, budgets: dict[str, object], fetches: bool) -> None:
    calls = []

    def count(torch: object, allocator: fake_torch.FakeAllocator) -> None:
        torch.cuda.memory_stats = (  # type: ignore[attr-defined]
            lambda device=None: calls.append(1) or allocator.memory_stats(device))

    result, _ = run(monkeypatch, {}, prepare=count, **budgets)
    assert result.passed
    assert bool(calls) == fetches
