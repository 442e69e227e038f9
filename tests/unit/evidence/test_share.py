"""What the evidence explains: the traced share of a failing coarse slope, and what the rest
is, from the slopes alone (evidence/share.py)."""

from __future__ import annotations

import pytest

from pytest_membudget.evidence.share import explain


def test_python_growth_is_explained_by_the_traced_allocations() -> None:
    found = explain({"rss": 8192.0}, 8300.0, 40.0)
    assert found is not None
    assert found["rest"] == "python" and found["share"] == pytest.approx(8300 / 8192)


def test_native_memory_in_use_is_the_rest_when_malloc_grows_with_it() -> None:
    found = explain({"rss": 32 * 1024.0}, 290.0, 109 * 1024.0)
    assert found is not None and found["rest"] == "native"
    assert found["native"] == 109 * 1024.0


def test_memory_kept_free_is_the_rest_when_malloc_stays_flat() -> None:
    # The shape of a fragmenting tokenizer: RSS +28 KiB/call, bytes in use +193 B/call.
    found = explain({"rss": 28 * 1024.0}, 290.0, 193.0)
    assert found is not None and found["rest"] == "free"
    assert found["share"] < 0.02


def test_an_unsampled_malloc_leaves_the_rest_unknown() -> None:
    found = explain({"rss": 28 * 1024.0}, 0.0, None)
    assert found is not None and found["rest"] == "unknown"


def test_the_steepest_coarse_probe_is_explained_and_exact_ones_are_not() -> None:
    found = explain({"heap": 9000.0, "py_blocks": 3.0, "uss": 100.0, "rss": 4096.0},
                    100.0, None)
    assert found is not None and found["probe"] == "rss"
    assert explain({"heap": 9000.0, "py_blocks": 3.0}, 100.0, None) is None
    assert explain({"rss": 4096.0}, None, None) is None


def test_a_failing_malloc_budget_leaves_native_memory_as_the_rest() -> None:
    found = explain({"malloc": 4096.0}, 10.0, None)
    assert found is not None and found["rest"] == "native"
