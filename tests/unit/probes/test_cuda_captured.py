"""The parsing of memory_stats and snapshots against data captured on a real device by
bench/cuda_capture.py (committed under tests/support/data/cuda/; see its CAPTURED.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_membudget.probes.cuda.allocator import STAT_KEYS, stat
from pytest_membudget.probes.cuda.snapshot import live_keys, live_window_blocks

DATA = Path(__file__).resolve().parents[2] / "support" / "data" / "cuda"
pytestmark = pytest.mark.skipif(
    not (DATA / "capture.json").exists(),
    reason="no captured data yet: run bench/cuda_capture.py on a CUDA device and commit its "
           "files under tests/support/data/cuda/")


def load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_every_probe_key_is_in_a_real_memory_stats() -> None:
    stats = load("memory_stats.json")
    steps = load("capture.json")["steps"]
    assert set(STAT_KEYS.values()) <= set(stats)
    assert stat(stats, "cuda_small_pool") >= steps * 16 * 1024
    assert stat(stats, "cuda_large_pool") >= steps * 3 * 1024**2
    assert stat(stats, "cuda_large_blocks") >= steps


def window_rows() -> list[dict[str, Any]]:
    """The evidence's rows: the blocks live at the end less those live when the recording
    started (every live block where the capture has no start)."""
    start = DATA / "snapshot_start.json"
    before = live_keys(load(start.name)) if start.exists() else frozenset()
    return live_window_blocks(load("snapshot.json"), top=50, exclude=before)


def test_evidence_names_both_leaking_lines_and_nothing_else_of_the_workload() -> None:
    facts = load("capture.json")
    name = Path(facts["file"]).name
    lines = facts["lines"]
    # The backward step's forward and its call of autograd.grad aside: the kept gradient's
    # graph holds their outputs (torch's grad_outputs, one 512-byte block a step).
    graph = {facts.get("forward_line"), facts.get("backward_line")}
    mine = {(r["line"], r["pool"], r["blocks"]) for r in window_rows()
            if r.get("file") and Path(r["file"]).name == name and r["line"] not in graph}
    assert mine == {(lines["small"], "small", facts["steps"]),
                    (lines["large"], "large", facts["steps"])}


def test_growth_in_backward_is_reported_without_frames() -> None:
    facts = load("capture.json")
    if "gradient_bytes" not in facts:
        pytest.skip("captured before bench/cuda_capture.py kept a gradient per step")
    unframed = [r for r in window_rows() if not r.get("file")]
    assert sum(r["bytes"] for r in unframed) >= facts["steps"] * facts["gradient_bytes"]
