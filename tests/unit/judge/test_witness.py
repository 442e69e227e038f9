"""The witness rule (verdict.hold_back): a coarse probe's flat window is no pass while the
exact count sampled beside it grows faster than the budget allows; and the witness is
sampled only where it can change a decision, and never reported."""

from __future__ import annotations

import numpy as np
from support import series

from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.judge.verdict import AMBIGUOUS, PASS, judge
from pytest_membudget.judge.witness import hold_back, witnesses
from pytest_membudget.measure.loop import open_measurement
from pytest_membudget.settings import default_run

AUTO = default_run()
N = 800
X = series.x(N)
FLAT_RSS = np.full(N, 50e6)
ONE_BLOCK_PER_ITER = 200_000.0 + X


FLAT_MALLOC = np.full(N, 3e6)


def rss_status(blocks: np.ndarray, limit: float = 0.0, run=AUTO,
               malloc: np.ndarray = FLAT_MALLOC) -> str:
    spec = BudgetSpec((Budget("rss", "slope", limit, "test"),), run)
    verdict = judge(spec, X, {"rss": FLAT_RSS}, {}, longest_tail=1000.0)
    held = hold_back(verdict, X, {"rss": FLAT_RSS, "py_blocks": blocks, "malloc": malloc},
                     witnesses(spec), run.confidence, 1000.0)
    return held.probes["rss"].outcomes[0].status


def test_flat_rss_while_blocks_grow_is_not_a_pass() -> None:
    assert rss_status(ONE_BLOCK_PER_ITER) == AMBIGUOUS


def test_flat_rss_with_flat_blocks_passes() -> None:
    assert rss_status(np.full(N, 200_000.0)) == PASS


def test_blocks_that_filled_and_stopped_do_not_hold_a_pass() -> None:
    filled = 200_000.0 + np.minimum(X, 150.0)  # a cache of 150 entries, full before the tail
    assert rss_status(filled) == PASS


def test_blocks_within_the_budget_do_not_hold_a_pass() -> None:
    # One block an iteration is at least 16 bytes; a budget of 1 KiB/iter allows it.
    assert rss_status(ONE_BLOCK_PER_ITER, limit=1024.0) == PASS


def test_witnesses_only_for_the_slope_budgets_of_auto_runs() -> None:
    auto = BudgetSpec((Budget("rss", "slope", 0.0, "t"), Budget("uss", "peak", 1e9, "t"),
                       Budget("heap", "slope", 0.0, "t")), AUTO)
    assert witnesses(auto) == {"rss": ("py_blocks", "malloc")}
    fixed = BudgetSpec((Budget("rss", "slope", 0.0, "t"),), default_run(iterations=100))
    assert witnesses(fixed) == {}


def test_the_witness_is_sampled_but_not_reported() -> None:
    from pytest_membudget.measure.loop import measure
    from pytest_membudget.measure.results import build_result

    spec = BudgetSpec((Budget("rss", "slope", 0.0, "t"),), default_run(max_seconds=0.5))
    m = open_measurement(spec, ("rss",))
    assert list(m.probes) == ["rss", "py_blocks", "malloc"]
    assert m.hidden == {"py_blocks", "malloc"}
    for _ in measure(spec, m.probes, m):
        pass
    assert list(build_result(m).probes) == ["rss"]


def test_a_measured_probe_serves_as_its_own_witness() -> None:
    spec = BudgetSpec((Budget("rss", "slope", 0.0, "t"),), AUTO)
    m = open_measurement(spec, ("rss", "py_blocks"))
    assert m.hidden == {"malloc"} and list(m.probes) == ["rss", "py_blocks", "malloc"]


FLAT_BLOCKS = np.full(N, 200_000.0)


def test_flat_rss_while_native_bytes_in_use_grow_is_not_a_pass() -> None:
    # 80 B a call kept by a C extension, served from free chunks RSS already counts.
    assert rss_status(FLAT_BLOCKS, malloc=3e6 + 80.0 * X) == AMBIGUOUS


def test_native_bytes_within_the_malloc_witness_wiggle_do_not_hold_a_pass() -> None:
    from pytest_membudget.catalog import PROBES

    # Free lists filling: less than the witness's resolution over the whole window.
    wiggle = 3e6 + np.minimum(X, N / 2) * (PROBES["malloc"].witness_resolution / N)
    assert rss_status(FLAT_BLOCKS, malloc=wiggle) == PASS


def test_native_bytes_that_filled_and_stopped_do_not_hold_a_pass() -> None:
    assert rss_status(FLAT_BLOCKS, malloc=3e6 + 80.0 * np.minimum(X, 150.0)) == PASS


def test_native_bytes_within_the_budget_do_not_hold_a_pass() -> None:
    # Bytes in use count bytes: 80 B a call is within rss=128 but not within rss=16.
    grows = 3e6 + 80.0 * X
    assert rss_status(FLAT_BLOCKS, limit=128.0, malloc=grows) == PASS
    assert rss_status(FLAT_BLOCKS, limit=16.0, malloc=grows) == AMBIGUOUS


def test_without_mallinfo2_the_native_witness_is_skipped(monkeypatch) -> None:
    from pytest_membudget.probes import malloc

    monkeypatch.setattr(malloc, "mallinfo2", lambda: None)
    spec = BudgetSpec((Budget("rss", "slope", 0.0, "t"),), AUTO)
    m = open_measurement(spec, ("rss",))
    assert m.hidden == {"py_blocks"} and list(m.probes) == ["rss", "py_blocks"]
