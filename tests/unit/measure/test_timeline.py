"""The watch's timeline: a row's traced bytes are the most tracemalloc held since the row
before, including a peak made while the watch could not read."""

from __future__ import annotations

from pytest_membudget.measure.timeline import TIMELINE_ROWS, Timeline

MiB = 1 << 20


def test_a_peak_between_two_readings_is_the_row_s_traced_bytes() -> None:
    # A pool's workers fill 150 MiB and let go of it between two readings: tracemalloc's
    # current bytes are back at 1 MiB, its peak says what was held meanwhile.
    timeline = Timeline()
    timeline.record(0.0, 100 * MiB, 1 * MiB, 1 * MiB)
    timeline.record(0.1, 250 * MiB, 1 * MiB, 151 * MiB)
    timeline.record(0.2, 250 * MiB, 1 * MiB, 151 * MiB)
    rows = timeline.rows()
    assert list(rows[:, 2]) == [1 * MiB, 151 * MiB, 1 * MiB]


def test_a_peak_reset_between_readings_is_still_the_most_since_the_reset() -> None:
    timeline = Timeline()
    timeline.record(0.0, 0.0, 10 * MiB, 40 * MiB)
    # reset_peak() between the readings, then 20 MiB held and let go again
    timeline.record(0.1, 0.0, 5 * MiB, 20 * MiB)
    assert timeline.rows()[1, 2] == 20 * MiB


def test_thinning_keeps_the_most_of_the_rows_it_merges() -> None:
    timeline = Timeline()
    spike = 777  # an odd row, dropped by the thinning: its bytes go to the row after it
    for i in range(TIMELINE_ROWS + 1):
        traced = 50.0 * MiB if i == spike else 1.0 * MiB
        timeline.record(float(i), float(i), traced, traced if i == spike else 50.0 * MiB)
    rows = timeline.rows()
    assert len(rows) == TIMELINE_ROWS // 2 + 1
    # the rows kept are the even ones, and each holds the most of itself and the odd one
    # before it
    assert rows[(spike + 1) // 2, 0] == spike + 1
    assert rows[(spike + 1) // 2, 2] == 50.0 * MiB
    assert rows[:, 2].max() == 50.0 * MiB
    assert (rows[:, 2] == 50.0 * MiB).sum() == 1


def test_the_first_row_holds_its_own_bytes_not_a_peak_from_before_the_watch() -> None:
    timeline = Timeline()
    timeline.record(0.0, 0.0, 2 * MiB, 90 * MiB)
    assert timeline.rows()[0, 2] == 2 * MiB
