"""Text for failures and summaries. Reads verdicts and results; decides nothing."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_membudget.catalog import PROBES

if TYPE_CHECKING:
    from pytest_membudget.results import MembudgetResult
    from pytest_membudget.verdict import Outcome, ProbeJudgement

_BINARY = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_TIME = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
SPARKS = "▁▂▃▄▅▆▇█"
STOPPED = {
    "clear": "auto: stopped when the verdict was clear",
    "cap": "auto: reached the iteration or time cap",
    "fixed": "fixed count",
    "running": "cut short",
    "disabled": "measurement disabled",
}


def fmt(probe: str, value: float | None, *, per_iter: bool = False) -> str:
    """A probe's figure in readable units: '1.5 KiB/iter', '3 threads', '2.1 ms'."""
    suffix = "/iter" if per_iter else ""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return ("-" if value < 0 else "") + "inf" + suffix
    kind = PROBES[probe].kind if probe in PROBES else "count"
    if kind == "bytes":
        for unit, scale in _BINARY:
            if abs(value) >= scale:
                return f"{value / scale:.3g} {unit}{suffix}"
        return f"{value:.3g} B{suffix}"
    if kind == "seconds":
        for unit, scale in _TIME:
            if abs(value) >= scale or unit == "ns":
                return f"{value / scale:.3g} {unit}{suffix}"
    unit = PROBES[probe].unit if probe in PROBES else ""
    return f"{value:.3g} {unit}{suffix}".rstrip()


def sparkline(values: Sequence[float], width: int = 40) -> str:
    """A compact text picture of a series: each character is the mean of a slice."""
    n = len(values)
    if n == 0:
        return ""
    width = min(width, n)
    edges = [round(i * n / width) for i in range(width + 1)]
    points = [sum(values[a:b]) / max(b - a, 1) for a, b in zip(edges, edges[1:])]
    low, high = min(points), max(points)
    if high - low <= 0:
        return SPARKS[0] * width
    scale = (len(SPARKS) - 1) / (high - low)
    return "".join(SPARKS[int((p - low) * scale)] for p in points)


def describe_outcome(outcome: Outcome, judgement: ProbeJudgement) -> str:
    """One line saying what was measured against which budget."""
    budget = outcome.budget
    probe = budget.probe
    if budget.kind == "slope":
        t = judgement.trend
        return (
            f"{probe} still grows {fmt(probe, t.slope, per_iter=True)} at the end of the run "
            f"(lower bound {fmt(probe, t.lower, per_iter=True)}, upper "
            f"{fmt(probe, t.upper, per_iter=True)}), budget {fmt(probe, budget.limit, per_iter=True)}"
        )
    if budget.kind == "peak":
        return f"{probe} peaked at {fmt(probe, outcome.measured)}, budget {fmt(probe, budget.limit)}"
    return (
        f"{probe} grew {fmt(probe, outcome.measured)} after warm-up, "
        f"budget {fmt(probe, budget.limit)}"
    )


def failure_message(test: str, result: MembudgetResult, confidence: float) -> str:
    lines = [
        f"membudget: {len(result.failures)} budget(s) exceeded in {test}",
        f"  {result.iterations} iterations measured after {result.warmup} warm-up "
        f"({STOPPED.get(result.stopped, result.stopped)}; {result.seconds:.2f} s); "
        f"bounds are one-sided at {confidence:.0%}",
    ]
    lines += [f"  - {reason}" for reason in result.failures]
    lines.append("")
    lines += series_lines(result)
    lines += evidence_lines(result.evidence_data)
    return "\n".join(lines)


def series_lines(result: MembudgetResult) -> list[str]:
    lines = []
    for name, probe in result.probes.items():
        if not len(probe.samples):
            continue
        # The window only: warm-up samples are taken without collecting garbage.
        values = [float(v) for v, at in zip(probe.samples, probe.sample_iterations)
                  if at >= result.warmup]
        if not values:
            continue
        lines.append(
            f"  {name:<10} {sparkline(values)}  {fmt(name, values[0])} -> {fmt(name, values[-1])}"
            f"  peak {fmt(name, probe.peak)}  [{probe.verdict}]"
        )
    return lines


def evidence_lines(evidence: dict[str, Any]) -> list[str]:
    if not evidence:
        return []
    n = evidence.get("iterations", 0)
    lines = ["", f"Evidence from {n} more iterations:"]
    sites = evidence.get("sites")
    if sites is not None:
        if sites:
            lines.append("  top growing allocation sites (tracemalloc):")
            for s in sites:
                lines.append(
                    f"    {_short(s['file'])}:{s['line']}: +{fmt('heap', s['bytes'])} "
                    f"({fmt('heap', s['per_iter'], per_iter=True)}, {s['blocks']} blocks)"
                    + (f"\n        {s['code']}" if s.get("code") else "")
                    + (f"\n      called from {s['via']}: {s.get('via_code', '')}"
                       if s.get("via") else "")
                )
        else:
            lines.append(
                "  tracemalloc saw no growing Python allocation: the growth is native memory "
                "(C extensions, malloc, torch's CPU allocator), which tracemalloc cannot see"
            )
    types = evidence.get("types")
    if types:
        lines.append("  top growing object types:")
        lines += [f"    {t['type']}: +{t['count']} ({t['per_iter']}/iter)" for t in types]
    if evidence.get("threads"):
        lines.append("  threads started and still alive:")
        lines += [f"    {t['name']} (target {t['target']}, daemon={t['daemon']})"
                  for t in evidence["threads"]]
    if evidence.get("fds"):
        lines.append("  descriptors opened and still open:")
        lines += [f"    {fd}" for fd in evidence["fds"]]
    return lines


def _short(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def summary_rows(nodeid: str, data: dict[str, Any]) -> list[tuple[str, ...]]:
    """Rows of the terminal summary for one test's report dict."""
    rows = []
    for name, probe in data.get("probes", {}).items():
        budgets = probe.get("budgets", {})
        shown = [
            f"{fmt(name, v, per_iter=True)}" if kind == "slope" else f"{kind} {fmt(name, v)}"
            for kind, v in budgets.items() if v is not None
        ]
        lo, hi = probe.get("ci", [None, None])
        rows.append((
            nodeid, name, fmt(name, probe.get("slope"), per_iter=True),
            f"[{fmt(name, lo)}, {fmt(name, hi)}]", ", ".join(shown) or "-",
            fmt(name, probe.get("peak")), str(data.get("iterations", "")), probe["verdict"],
        ))
    return rows


SUMMARY_HEADER = ("test", "probe", "slope", "bounds/iter", "budget", "peak", "iters", "verdict")


def table(rows: Sequence[Sequence[str]], header: Sequence[str] = SUMMARY_HEADER) -> list[str]:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths))]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in rows]
    return out
