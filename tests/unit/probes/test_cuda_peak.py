"""CUDA peaks: torch's own peak figures (reset at the run's start, kept across a phase's
reset), the blocks live at the peak replayed from the allocator's trace, and what the reserve
was made of at its peak. Against the stand-in allocator of fake_torch.py."""

from __future__ import annotations

import pytest
from support import fake_torch
from support.cuda_runs import run

from pytest_membudget.probes.cuda.peak import replay, reserved_at_peak

TEMPORARY = ("/work/project/test_step.py", 12, "step")
MIB = 1024 * 1024


def test_replay_finds_the_blocks_live_at_the_highest_total() -> None:
    trace = [{"action": "alloc", "addr": 1, "size": 100},
             {"action": "alloc", "addr": 2, "size": 200},
             {"action": "free_requested", "addr": 1, "size": 100},
             {"action": "free_completed", "addr": 1, "size": 100},
             {"action": "alloc", "addr": 3, "size": 50},
             {"action": "free_completed", "addr": 9, "size": 999}]  # allocated before: skipped
    best, held = replay(trace)
    assert best == 300 and sorted(e["addr"] for e in held) == [1, 2]


def test_the_reserve_at_its_peak_is_allocated_split_or_whole() -> None:
    found = reserved_at_peak({"reserved_bytes.all.peak": 100, "allocated_bytes.all.peak": 60,
                              "inactive_split_bytes.all.peak": 15, "num_alloc_retries": 2})
    assert found == {"reserved": 100.0, "allocated": 60.0, "free_in_split_blocks": 15.0,
                     "free_in_whole_blocks": 25.0, "retries": 2.0}


def transient(allocator: fake_torch.FakeAllocator) -> None:
    """8 MiB allocated and freed inside the call: a peak no sample between calls sees."""
    allocator.free(allocator.alloc(8 * MIB, TEMPORARY))


def test_a_rise_inside_one_call_is_seen_by_the_allocators_peak(
        monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, None, transient, cuda_allocated_rise="4 MiB",
                            cuda_history=True)
    probe = result["cuda_allocated"]
    assert probe.verdict == "fail" and probe.rise >= 8 * MIB
    assert allocator.history_calls[0]["enabled"] == "all"  # the trace a peak replays
    evidence = result.peak_evidence
    rows = evidence["cuda_peak"]["blocks"]
    assert rows[0]["line"] == TEMPORARY[1] and rows[0]["bytes"] == 8 * MIB
    assert evidence["cuda_reserved"]["allocated"] >= 8 * MIB


def test_without_a_footprint_budget_nothing_is_reset_nor_traced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    result, allocator = run(monkeypatch, None, transient, cuda_allocated=0, cuda_history=True)
    assert result["cuda_allocated"].verdict == "pass"
    assert allocator.history_calls[0]["enabled"] == "state"


def test_a_reset_for_an_inner_mark_keeps_the_outer_marks_peak(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from support.cuda_runs import install

    from pytest_membudget.probes.cuda.device import DeviceStats

    _, allocator = install(monkeypatch)
    source = DeviceStats.for_device(None, True, False)
    try:
        source.init_context()
        outer = source.open_mark()
        allocator.free(allocator.alloc(8 * MIB, TEMPORARY))
        inner = source.open_mark()  # resets torch's peaks: the outer mark keeps its own
        allocator.free(allocator.alloc(2 * MIB, TEMPORARY))
        key = "allocated_bytes.all.peak"
        # The model's weights (2 MiB) are allocated throughout.
        assert source.peaks(inner)[key] < 8 * MIB <= source.peaks(outer)[key]
        source.close_mark(inner)
        source.close_mark(outer)
    finally:
        source.release(stat_users=True, sync_users=False)


def test_the_failure_shows_the_reserve_and_the_blocks_at_the_peak(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_membudget.render.failure import failure_message

    result, _ = run(monkeypatch, None, transient, cuda_allocated_rise="4 MiB",
                    cuda_history=True)
    text = failure_message("t.py::test_step", result, 0.99)
    assert "cuda_allocated rose" in text
    assert "CUDA allocator at its peak (each figure at its own peak):" in text
    assert "blocks live at the peak of the window's allocations (8 MiB" in text
    assert f"test_step.py:{TEMPORARY[1]} in step" in text
