"""Text for a comparison with a baseline: the terminal section and ``membudget compare``.
Slopes and footprint figures share one table: a slope shows its bounds, a rise or a peak its
one reading."""

from __future__ import annotations

from pytest_membudget.judge.regression import (
    BETTER,
    REGRESSED,
    SAME,
    UNJUDGED,
    WORSE,
    Comparison,
    ProbeChange,
    Reading,
)
from pytest_membudget.judge.tolerance import Tolerance
from pytest_membudget.render.units import fmt, slope_text, table

HEADER = ("test", "figure", "baseline", "new", "change", "tolerance", "status")
RULE = ("a regression: a slope whose new lower bound is above 0 and above the baseline's upper "
        "bound plus the tolerance; a rise or peak above the baseline's plus the tolerance")


def figure_name(c: ProbeChange) -> str:
    """'rss' (its slope), 'rss rise', 'rss rise, phase load'."""
    name = c.probe if not c.kind.footprint else f"{c.probe} {c.kind.value}"
    return name if c.phase is None else f"{name}, phase {c.phase}"


def reading_text(c: ProbeChange, reading: Reading) -> str:
    if c.kind.footprint:
        return fmt(c.probe, reading.value)
    return slope_text(c.probe, reading.value, [reading.lower, reading.upper])


def describe_tolerance(tolerance: Tolerance, probe: str, *, per_iter: bool = True) -> str:
    """'10% or 1 KiB/iter', '0' (no margin) or 'off' (not gated)."""
    if not tolerance.gated:
        return "off"
    parts = [f"{tolerance.relative * 100:.3g}%"] if tolerance.relative else []
    if tolerance.absolute:
        parts.append(fmt(probe, tolerance.absolute, per_iter=per_iter))
    return " or ".join(parts) or "0"


def rows(comparison: Comparison, *, everything: bool) -> list[tuple[str, ...]]:
    shown: list[tuple[str, ...]] = []
    for c in comparison.changes:
        if not everything and c.status != REGRESSED:
            continue
        change = c.change
        shown.append((c.nodeid, figure_name(c), reading_text(c, c.base), reading_text(c, c.new),
                       "n/a" if change is None else f"{change:+.0%}",
                       describe_tolerance(c.tolerance, c.probe, per_iter=not c.kind.footprint),
                       c.status.value))
    return shown


def summary(comparison: Comparison) -> str:
    tests = len({c.nodeid for c in comparison.changes})
    slopes = sum(1 for c in comparison.changes if not c.kind.footprint)
    footprints = len(comparison.changes) - slopes
    counts = ", ".join(f"{comparison.count(s)} {label}" for s, label in (
        (REGRESSED, "regressed"), (WORSE, "worse within tolerance"), (BETTER, "better"),
        (SAME, "same"), (UNJUDGED, "unjudged")) if comparison.count(s) or s == REGRESSED)
    return (f"{slopes} slope(s) and {footprints} rise(s) or peak(s) in {tests} test(s): "
            f"{counts}")


def comparison_lines(comparison: Comparison, baseline: object, *, verbose: bool) -> list[str]:
    """The comparison section: a summary, every regressed test, and at -v every figure."""
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
        lines.append("every compared figure:")
        lines += ["  " + line for line in table(rows(comparison, everything=True), HEADER)]
    return lines
