"""The sweep's screening rule: every delta at least one for the memory counters (CPython's
leak hunter's rule), net growth for threads and descriptors."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_membudget.catalog import PAGE, ScreenRule
from pytest_membudget.judge.screen import (
    RULES,
    SCREEN_PROBES,
    flagged,
    quiet,
    reading_points,
    rule_columns,
)


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
    rules = {"py_blocks": ScreenRule(2.0)}
    assert flagged({"py_blocks": series(1, 2, 3)}, rules) == {}
    assert flagged({"py_blocks": series(1, 3, 5)}, rules) == {"py_blocks": 4.0}


def block(**columns: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The samples of a screen so far as the quiet check takes them, with the rules."""
    least, every = rule_columns(tuple(columns))
    return np.column_stack([series(*v) for v in columns.values()]), least, every


def test_a_screen_is_quiet_once_no_probe_can_be_flagged() -> None:
    # Each counter missed its threshold once; threads and descriptors never moved.
    assert quiet(*block(py_blocks=(10, 11, 11, 12), malloc=(0, 0, 0, 0),
                          threads=(3, 3, 3, 3), fds=(7, 7, 7, 7)))


@pytest.mark.parametrize("columns", [
    # grew on every call so far: more calls could flag it
    {"py_blocks": (10, 11, 12, 13), "fds": (7, 7, 7, 7)},
    {"rss": (0.0, PAGE, 2.0 * PAGE, 3.0 * PAGE)},
    # a descriptor or a thread moved (even back): only the whole screen's net growth tells
    {"py_blocks": (1, 1, 1, 1), "fds": (7, 8, 7, 7)},
    {"py_blocks": (1, 1, 1, 1), "threads": (3, 3, 4, 4)},
])
def test_a_screen_goes_on_while_a_probe_could_still_be_flagged(
        columns: dict[str, tuple[float, ...]]) -> None:
    assert not quiet(*block(**columns))


def test_a_single_sample_is_not_quiet() -> None:
    assert not quiet(*block(py_blocks=(1,)))


def test_the_reading_points_are_every_second_call_at_the_default_length_and_half_a_longer_screen(
        ) -> None:
    assert reading_points(8) == (2, 4, 6) and reading_points(4) == (2,)
    assert reading_points(2) == () and reading_points(3) == (2,)
    assert reading_points(16) == (8,) and reading_points(32) == (16,)
    # A slow test's screen reads after its first measured call too, at the default length
    # and below; a longer screen, asked for to see intermittent leaks, does not.
    assert reading_points(8, slow=True) == (1, 2, 4, 6) and reading_points(2, slow=True) == (1,)
    assert reading_points(16, slow=True) == (8,)
    # Whatever is quiet at the reading point would not be flagged by the whole screen either.
    values = (10, 11, 11, 12, 13, 14, 15, 16, 17)
    assert quiet(*block(py_blocks=values[:5])) and flagged({"py_blocks": series(*values)}) == {}


def test_a_skipped_delta_is_left_out_of_the_rule_but_not_of_the_growth() -> None:
    # The delta across the screen's reading (index 2 here) read 0: a leak all the same.
    values = series(10, 11, 12, 12, 13, 14)
    assert flagged({"py_blocks": values}) == {}
    assert flagged({"py_blocks": values}, skip=[2]) == {"py_blocks": 4.0}
    # Any other delta under the threshold still rules the probe out.
    assert flagged({"py_blocks": series(10, 11, 11, 12, 13, 14)}, skip=[2]) == {}


def test_the_deltas_across_several_readings_are_left_out_and_one_delta_is_always_judged(
        ) -> None:
    values = series(10, 11, 12, 12, 13, 13, 14, 15, 16)
    assert flagged({"py_blocks": values}, skip=[2]) == {}
    assert flagged({"py_blocks": values}, skip=[2, 4]) == {"py_blocks": 6.0}
    # Deltas past the series (a screen that stopped at a reading) are ignored.
    assert flagged({"py_blocks": series(10, 11, 12)}, skip=[2, 4, 6]) == {"py_blocks": 2.0}
    # Leaving every delta out would judge none: the rule then reads them all.
    assert flagged({"py_blocks": series(10, 11, 11)}, skip=[0, 1]) == {}
