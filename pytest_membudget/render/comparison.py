"""Text for a comparison with a baseline: the terminal section and ``membudget compare``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_membudget.judge.regression import (
    BETTER,
    REGRESSED,
    SAME,
    UNJUDGED,
    WORSE,
    Comparison,
    Tolerance,
)
from pytest_membudget.render.units import fmt, slope_text, table

HEADER = ("test", "probe", "baseline slope [bounds]", "new slope [bounds]", "change",
          "tolerance", "status")
RULE = ("a regression: the new run's lower bound is above 0 and above the baseline's upper "
        "bound plus the tolerance")


def interval(probe: str, data: Mapping[str, Any]) -> str:
    return slope_text(probe, data.get("slope"), data.get("ci"))


def describe_tolerance(tolerance: Tolerance, probe: str) -> str:
    """'10% or 1 KiB/iter', '0' (no margin) or 'off' (not gated)."""
    if not tolerance.gated:
        return "off"
    parts = [f"{tolerance.relative * 100:.3g}%"] if tolerance.relative else []
    if tolerance.absolute:
        parts.append(fmt(probe, tolerance.absolute, per_iter=True))
    return " or ".join(parts) or "0"


def rows(comparison: Comparison, *, everything: bool) -> list[tuple[str, ...]]:
    shown: list[tuple[str, ...]] = []
    for c in comparison.changes:
        if not everything and c.status != REGRESSED:
            continue
        change = c.change
        shown.append((c.nodeid, c.probe, interval(c.probe, c.base), interval(c.probe, c.new),
                       "n/a" if change is None else f"{change:+.0%}",
                       describe_tolerance(c.tolerance, c.probe), c.status.value))
    return shown


def summary(comparison: Comparison) -> str:
    tests = len({c.nodeid for c in comparison.changes})
    counts = ", ".join(f"{comparison.count(s)} {label}" for s, label in (
        (REGRESSED, "regressed"), (WORSE, "worse within tolerance"), (BETTER, "better"),
        (SAME, "same"), (UNJUDGED, "unjudged")) if comparison.count(s) or s == REGRESSED)
    return f"{len(comparison.changes)} probe slope(s) in {tests} test(s): {counts}"


def comparison_lines(comparison: Comparison, baseline: object, *, verbose: bool) -> list[str]:
    """The comparison section: a summary, every regressed test, and at -v every probe."""
    lines = [f"membudget: compared with baseline {baseline}: {summary(comparison)}"]
    if comparison.missing:
        lines.append(f"  {len(comparison.missing)} budgeted test(s) of the baseline did not "
                     "run: " + ", ".join(comparison.missing[:5])
                     + (" ..." if len(comparison.missing) > 5 else ""))
    if comparison.added:
        lines.append(f"  {len(comparison.added)} budgeted test(s) are new since the baseline")
    if comparison.regressions:
        lines.append(f"MEMORY REGRESSIONS ({RULE}):")
        lines += ["  " + line for line in table(rows(comparison, everything=False), HEADER)]
    if verbose and comparison.changes:
        lines.append("every compared probe:")
        lines += ["  " + line for line in table(rows(comparison, everything=True), HEADER)]
    return lines
