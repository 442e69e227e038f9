"""The allocator history behind ``cuda_history``: recorded only as far as the evidence reads
it, one snapshot per failing run, a user's own recording left alone, and only blocks that
appeared in this window reported."""

from __future__ import annotations

import pytest
from support import fake_torch
from support.cuda_runs import run

LEAK_LINE = fake_torch.LEAK_SITE[1]
EARLIER = ("/work/project/earlier_test.py", 7, "test_earlier")
FAILING = {"cuda_small_pool": 0, "cuda_small_blocks": 0, "cuda_allocated": 0,
           "cuda_reserved_peak": 1}


def test_only_the_frames_of_live_blocks_are_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    longest = []

    def workload(allocator: fake_torch.FakeAllocator) -> None:
        allocator.step()
        longest.append(len(allocator.trace))

    result, allocator = run(monkeypatch, {"leak": 4096}, workload, cuda_small_pool=0,
                            cuda_history=True)
    assert result["cuda_small_pool"].verdict == "fail"
    assert allocator.history_calls[0]["enabled"] == "state"
    assert allocator.history_calls[0]["context"] == "state"
    assert max(longest) <= 1  # no trace of every event kept through the window
    assert result.evidence_data["cuda_blocks"][0]["line"] == LEAK_LINE


def test_one_snapshot_however_many_budgets_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, {"leak": 4096}, **FAILING, cuda_history=True)
    assert len(result.failures) == len(FAILING)
    # One when the window opens (the blocks already live), one for the evidence.
    assert allocator.snapshots == 2


def test_a_users_recording_is_left_on_with_its_buffer(monkeypatch: pytest.MonkeyPatch) -> None:
    def record(torch: object, allocator: fake_torch.FakeAllocator) -> None:
        allocator.record_memory_history("all", context="alloc", stacks="python")
        allocator.kept.append(allocator.alloc(8192, EARLIER))

    result, allocator = run(monkeypatch, {"leak": 4096}, prepare=record, cuda_small_pool=0,
                            cuda_history=True)
    assert allocator.recording == {"enabled": "all", "context": "alloc", "stacks": "python"}
    assert len(allocator.history_calls) == 1  # the user's own call, nothing after it
    assert allocator.trace[0]["frames"][1]["filename"] == EARLIER[0]  # buffer intact
    rows = result.evidence_data["cuda_blocks"]
    assert [r["line"] for r in rows] == [LEAK_LINE]  # read from the user's recording


@pytest.mark.parametrize("still_on", [False, True], ids=["earlier test", "user, still on"])
def test_blocks_of_an_earlier_recording_are_not_this_windows(
        monkeypatch: pytest.MonkeyPatch, still_on: bool) -> None:
    def earlier(torch: object, allocator: fake_torch.FakeAllocator) -> None:
        allocator.record_memory_history("state", context="state", stacks="python")
        allocator.kept += [allocator.alloc(8192, EARLIER) for _ in range(20)]
        if not still_on:
            allocator.record_memory_history(None)  # the blocks keep their frames

    result, allocator = run(monkeypatch, {"leak": 4096}, prepare=earlier, cuda_small_pool=0,
                            cuda_history=True)
    rows = result.evidence_data["cuda_blocks"]
    assert [(r["file"], r["line"]) for r in rows] == [(fake_torch.LEAK_SITE[0], LEAK_LINE)]
    assert (allocator.recording is not None) == still_on


def test_no_live_block_from_the_window_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.render.failure import evidence_lines

    def cache_grows(allocator: fake_torch.FakeAllocator) -> None:
        allocator.step()
        allocator.reserved[0] += fake_torch.SEGMENT  # the cache grows, no block stays live

    result, _ = run(monkeypatch, {}, cache_grows, cuda_reserved=0, cuda_history=True)
    assert result["cuda_reserved"].verdict == "fail"
    assert result.evidence_data["cuda_blocks"] == []
    assert "no block allocated in the window is still live" in "\n".join(
        evidence_lines(result.evidence_data))
