"""Formatting of figures and series."""

from __future__ import annotations

import math

from pytest_membudget.evidence.labels import NAME_WIDTH, clip
from pytest_membudget.render.units import fmt, round_up, sparkline, table


def test_fmt_units() -> None:
    assert fmt("rss", 4096.0, per_iter=True) == "4 KiB/iter"
    assert fmt("rss", 512.0) == "512 B"
    assert fmt("rss", 3 * 1024**3) == "3 GiB"
    assert fmt("iter_time", 0.0025) == "2.5 ms"
    assert fmt("threads", 3.0) == "3 threads"
    assert fmt("gc_objects", 43102.0) == "43,102 objects"  # a count in full, not 4.31e+04
    assert fmt("gc_objects", 1.5, per_iter=True) == "1.5 objects/iter"
    assert fmt("rss", math.nan) == "n/a"
    assert fmt("rss", -math.inf, per_iter=True) == "-inf/iter"


def test_sparkline_shape() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5, 5, 5]) == "▁▁▁"
    assert len(sparkline(list(range(1000)), width=40)) == 40
    assert sparkline([]) == ""


def test_table_aligns() -> None:
    lines = table([("a", "bb")], header=("x", "y"))
    assert lines == ["x  y", "a  bb"]  # no trailing blanks


def test_round_up_keeps_two_significant_digits_and_never_goes_below() -> None:
    for value, expected in [(236, 240), (495, 500), (4.71, 4.8), (6, 6), (1234, 1300),
                            (0.0123, 0.013), (100, 100)]:
        assert round_up(value) == expected
        assert round_up(value) >= value


def test_clip_cuts_a_long_name_to_the_width() -> None:
    assert clip("python -m worker") == "python -m worker"
    long = "python -m worker " + "--flag " * 20
    assert len(clip(long)) == NAME_WIDTH and clip(long).endswith("...")
    assert clip(long).startswith("python -m worker")
