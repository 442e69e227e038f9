"""Formatting of figures and series."""

from __future__ import annotations

import math

from pytest_membudget.render.units import fmt, sparkline, table


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
