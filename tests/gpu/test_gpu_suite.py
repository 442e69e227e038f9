"""The CUDA probes on a real device (marked ``cuda``; skipped with the reason elsewhere):
seed 001's retained autograd graph caught in the small pool with its line, the no_grad +
detach fix flat, a large tensor per step caught in the large pool only, cuBLAS workspaces
never read as growth, churn of varying shapes flat, allocator-history evidence on real
snapshots (growth allocated in backward, which carries no Python frame, included), and the
same verdicts under pytest-xdist ``-n 2``."""

from __future__ import annotations

import pytest

from .gpu_expected import BACKWARD_STEPS, EXPECTED, GRADIENT_BYTES, line_of
from .inner import InnerRun, missing_device

MISSING = missing_device()
pytestmark = [pytest.mark.cuda, pytest.mark.skipif(MISSING is not None, reason=str(MISSING))]


def verdicts(run: InnerRun, name: str, probes: object = None) -> tuple[str, dict[str, str]]:
    entry = run.test(name)
    wanted = probes if probes is not None else entry["probes"]
    return entry["outcome"], {p: entry["probes"][p]["verdict"] for p in wanted}  # type: ignore[attr-defined]


def test_every_workload_reported(inner: InnerRun) -> None:
    assert set(inner.tests) == set(EXPECTED), inner.output[-4000:]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_verdict(inner: InnerRun, name: str) -> None:
    outcome, expected = EXPECTED[name]
    assert verdicts(inner, name, expected) == (outcome, expected), inner.output[-4000:]


def test_retained_graph_evidence_names_the_leaking_line(inner: InnerRun) -> None:
    rows = inner.cuda_rows("test_retained_graph_leaks_in_the_small_pool")
    leak = line_of(str(inner.path), "# LEAK_GRAPH")
    assert rows and rows[0] == (inner.path.name, leak, "small"), rows


def test_cublas_workspace_never_shows_in_the_evidence(inner: InnerRun) -> None:
    rows = inner.cuda_rows("test_history_small_leak_beside_cublas")
    cublas = line_of(str(inner.path), "# CUBLAS")
    assert rows == [(inner.path.name, line_of(str(inner.path), "# LEAK_SMALL"), "small")], (
        f"expected the leaking line only (the cuBLAS line is {cublas})")


def test_blocks_of_an_earlier_recorded_test_are_not_reported(serial_run: InnerRun) -> None:
    # Serially, the earlier recorded tests' kept blocks are alive in the same process.
    rows = serial_run.cuda_rows("test_history_after_an_earlier_recorded_test")
    assert rows == [(serial_run.path.name, line_of(str(serial_run.path), "# LEAK_LARGE"),
                     "large")]


def test_backward_growth_is_named_in_the_evidence(inner: InnerRun) -> None:
    # Gradients kept per step are allocated on the autograd engine's thread: torch records
    # no Python frame for them, and the evidence reports them as such, with their bytes.
    name = "test_backward_leak_grows_in_backward"
    rows = inner.cuda_blocks(name)
    unframed = sum(r["bytes"] for r in rows if not r.get("file"))
    assert unframed >= (BACKWARD_STEPS - 5) * GRADIENT_BYTES, rows
    assert "no Python frame: +" in inner.output, inner.output[-4000:]


def test_same_verdicts_under_xdist(serial_run: InnerRun, xdist_run: InnerRun) -> None:
    assert {name: verdicts(xdist_run, name) for name in EXPECTED} == {
        name: verdicts(serial_run, name) for name in EXPECTED}


def test_a_transient_peak_is_named_with_its_line(inner: InnerRun) -> None:
    name = "test_transient_activation_rises_above_the_budget"
    evidence = inner.test(name)["peak_evidence"]
    rows = evidence["cuda_peak"]["blocks"]
    assert rows[0]["line"] == line_of(str(inner.path), "# PEAK_TRANSIENT"), rows
    assert rows[0]["bytes"] >= 64 * 2**20 and evidence["cuda_reserved"]["allocated"] >= 64 * 2**20
    assert inner.test(name)["probes"]["cuda_allocated"]["rise"] >= 64 * 2**20
