"""The sweep's screening rule: every delta at least one for the memory counters (CPython's
leak hunter's rule), net growth for threads and descriptors."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_membudget.catalog import PAGE
from pytest_membudget.sweep.screen import RULES, SCREEN_PROBES, Step, flagged


def series(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def test_every_screen_probe_has_a_rule() -> None:
    assert set(RULES) == set(SCREEN_PROBES)


@pytest.mark.parametrize("probe", ["py_blocks", "malloc"])
def test_counters_flag_growth_on_every_call(probe: str) -> None:
    assert flagged({probe: series(10, 11, 12, 14, 15)}) == {probe: 5.0}
    # One call without growth: a cache hit, a free list refilled; not flagged.
    assert flagged({probe: series(10, 11, 11, 12, 13)}) == {}
    # Up and down (a sawtooth, a cache emptied now and then): not flagged.
    assert flagged({probe: series(10, 14, 9, 13, 9)}) == {}


def test_rss_needs_a_page_on_every_call() -> None:
    page = float(PAGE)
    assert flagged({"rss": series(0, page, 2 * page, 3 * page)}) == {"rss": 3 * page}
    assert flagged({"rss": series(0, 100, 200, 300)}) == {}
    assert flagged({"rss": series(0, page, page, 2 * page)}) == {}


@pytest.mark.parametrize("probe", ["threads", "fds"])
def test_threads_and_descriptors_flag_net_growth(probe: str) -> None:
    # A descriptor left open every fifth call shows as net growth, not on every call.
    assert flagged({probe: series(5, 5, 5, 6, 6, 6)}) == {probe: 1.0}
    # Opened and closed again: not flagged.
    assert flagged({probe: series(5, 6, 5, 6, 5, 5)}) == {}


def test_several_probes_and_unknown_ones() -> None:
    found = flagged({"py_blocks": series(1, 2, 3), "fds": series(3, 3, 3),
                     "iter_time": series(1, 2, 3)})
    assert found == {"py_blocks": 2.0}


def test_a_single_sample_says_nothing() -> None:
    assert flagged({"py_blocks": series(1)}) == {}


def test_rules_can_be_given() -> None:
    rules = {"py_blocks": Step(2.0)}
    assert flagged({"py_blocks": series(1, 2, 3)}, rules) == {}
    assert flagged({"py_blocks": series(1, 3, 5)}, rules) == {"py_blocks": 4.0}
