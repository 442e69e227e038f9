"""One PNG per budgeted test: each probe's series, the warm-up, the judged fit and the budget.

matplotlib is the optional extra ``[plot]``; it is imported only when a plot is drawn, with
the non-interactive Agg backend, so that no window opens and no display is needed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard, cast

from pytest_membudget.evidence.peakrecords import Composition, PeakEvidence, WatchTimeline
from pytest_membudget.measure.records import PhaseRecord, ProbeRecord, ResultRecord
from pytest_membudget.render.units import fmt, unit_scale
from pytest_membudget.vocabulary import ProbeVerdict


def missing_matplotlib(what: str) -> str | None:
    """Why ``what`` cannot work here, or None when matplotlib is installed."""
    if importlib.util.find_spec("matplotlib") is not None:
        return None
    return (f"{what} draws with matplotlib, which is not installed; install the extra: "
            "pip install 'pytest-membudget[plot]' (or pip install matplotlib)")


def file_name(nodeid: str) -> str:
    """A file name per test: readable, safe on every OS, unique through a short hash."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", nodeid.replace("::", "__")).strip("_.")
    digest = hashlib.sha1(nodeid.encode()).hexdigest()[:8]
    return f"{readable[:120]}-{digest}.png"


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(float(value))


def _scale(probe: str, values: list[float]) -> tuple[float, str]:
    return unit_scale(probe, max((abs(v) for v in values), default=0.0))


def _tail(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]] | None:
    """The judged tail as fit.trend takes it: the second half of the measured window; None
    where the judge judged none (a block of the tail without a sample)."""
    from pytest_membudget.judge.fit import TAIL_BLOCKS, tail_length

    n = len(xs)
    length = tail_length(n)
    if length < TAIL_BLOCKS:
        return None
    return xs[n - length:], ys[n - length:]


def _anchor(xs: list[float], ys: list[float], slope: float) -> tuple[float, float]:
    """A point the fitted line passes through: the median offset of the tail's block floors
    (the fit is made on the floors, so the line runs along the bottom of the series)."""
    import numpy as np

    from pytest_membudget.judge.fit import TAIL_BLOCKS, block_floors

    fx, fy = block_floors(np.asarray(xs, dtype=float), np.asarray(ys, dtype=float), TAIL_BLOCKS)
    centre = float(np.median(fx))
    return centre, float(np.median(fy - slope * (fx - centre)))


def draw_probe(axes: Any, probe: str, data: ProbeRecord, warmup: int,
               window_start: int) -> None:
    pairs = list(zip(data.get("sample_iterations", []), data.get("samples", []), strict=False))
    # Samples that JSON could not hold (NaN) are left out; the window starts at the same
    # sample as before.
    window_start -= sum(1 for _, y in pairs[:window_start] if not _finite(y))
    points = [(float(x), float(y)) for x, y in pairs if _finite(y)]
    scale, unit = _scale(probe, [y for _, y in points])
    xs = [x for x, _ in points]
    ys = [y / scale for _, y in points]
    axes.plot(xs, ys, ".-", color="#4c72b0", markersize=2.5, linewidth=0.7, label=probe)
    if warmup > 0:
        axes.axvspan(0, warmup, color="#bbbbbb", alpha=0.35, label=f"warm-up ({warmup})")
    window = list(zip(xs[window_start:], ys[window_start:], strict=True))
    budgets = data.get("budgets", {})
    _draw_fit(axes, probe, data, window, scale)
    if window:
        _view_window(axes, data, window, scale)
    peak_budget = budgets.get("peak")
    if peak_budget is not None and ys:
        axes.axhline(peak_budget / scale, linestyle=":", color="#8172b2",
                     label=f"peak budget {fmt(probe, peak_budget)}")
    rise_budget, start, peak = budgets.get("rise"), data.get("start"), data.get("peak")
    if rise_budget is not None and ys and _finite(start):
        axes.axhline((float(start) + rise_budget) / scale, linestyle=":",
                     color="#8172b2", label=f"rise budget: start + {fmt(probe, rise_budget)}")
    if (peak_budget is not None or rise_budget is not None) and _finite(peak):
        axes.axhline(float(peak) / scale, linestyle="-", color="#c44e52",
                     linewidth=0.8, label=f"peak {fmt(probe, peak)}")
    verdict = data.get("verdict", "")
    colour = {ProbeVerdict.FAIL.value: "#c44e52",
              ProbeVerdict.PASS.value: "#2d7d46"}.get(verdict, "#555555")
    axes.set_title(f"{probe}: {verdict}", loc="left", fontsize=10, color=colour)
    axes.set_ylabel(unit)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="upper left")


def _draw_fit(axes: Any, probe: str, data: ProbeRecord,
              window: list[tuple[float, float]], scale: float) -> None:
    """The fitted slope over the judged tail, its bounds and the slope budget."""
    slope, budgets = data.get("slope"), data.get("budgets", {})
    ci = data.get("ci") or [None, None]
    tail = _tail([x for x, _ in window], [y for _, y in window])
    if slope is None or tail is None:
        return
    tx, ty = tail
    centre, level = _anchor(tx, ty, slope / scale)
    start = level + slope / scale * (tx[0] - centre)
    ends = [tx[0], tx[-1]]

    def line(rate: float) -> list[float]:
        """From the fitted line's value where the judged tail starts, at ``rate``."""
        return [start + rate / scale * (x - tx[0]) for x in ends]

    axes.plot(ends, line(slope), color="#c44e52", linewidth=1.6,
              label=f"slope {fmt(probe, slope, per_iter=True)} (judged tail)")
    if ci[0] is not None and ci[1] is not None:
        axes.fill_between(ends, line(ci[0]), line(ci[1]), color="#c44e52", alpha=0.18,
                          label=f"bounds {fmt(probe, ci[0], per_iter=True)} .. "
                                f"{fmt(probe, ci[1], per_iter=True)}")
    budget = budgets.get("slope")
    if budget is not None:
        axes.plot(ends, line(budget), "--", color="#55a868", linewidth=1.4,
                  label=f"budget {fmt(probe, budget, per_iter=True)}")


def _view_window(axes: Any, data: ProbeRecord, window: list[tuple[float, float]],
                 scale: float) -> None:
    """Scaled to the measured window: warm-up samples (taken before collecting garbage) and
    far-away budget lines would flatten the part that is judged. A footprint's peak and its
    ceiling are what is judged there: they are in view."""
    budgets = data.get("budgets", {})
    low, high = min(y for _, y in window), max(y for _, y in window)
    footprint: list[float] = []
    rise, peak, start = budgets.get("rise"), data.get("peak"), data.get("start")
    if (budgets.get("peak") is not None or rise is not None) and _finite(peak):
        footprint.append(float(peak))
    if rise is not None and _finite(start):
        footprint.append(float(start) + rise)
    high = max([high, *(v / scale for v in footprint)])
    pad = max((high - low) * 0.25, abs(high) * 0.002, 1e-9)
    axes.set_ylim(low - pad, high + pad)


def draw_timeline(axes: Any, evidence: PeakEvidence) -> None:
    """A footprint's run over time, as the peak watch read it: RSS and traced bytes, the
    highest reading marked, and what the rise was made of at the peak."""
    from pytest_membudget.render.footprint import kinds_line

    timeline = evidence["timeline"]
    seconds, rss, traced = timeline["seconds"], timeline["rss"], timeline.get("traced", [])
    scale, unit = _scale("rss", rss)
    axes.plot(seconds, [v / scale for v in rss], color="#4c72b0", linewidth=1.0, label="RSS")
    if any(traced):
        axes.plot(seconds, [v / scale for v in traced], color="#dd8452", linewidth=1.0,
                  label="traced by tracemalloc")
    found = evidence.get("composition") or cast("Composition", {})
    peak_at = evidence.get("peak_at")
    if peak_at is not None and found.get("rss_peak") is not None:
        axes.plot([peak_at], [found["rss_peak"] / scale], "v", color="#c44e52", markersize=7,
                  label=f"highest reading, {fmt('rss', found['rss_peak'])}")
    if found:
        axes.text(0.01, 0.02, "rise made of: " + kinds_line(found.get("kinds", {}),
                                                           found.get("rise")),
                  transform=axes.transAxes, fontsize=7, va="bottom", wrap=True)
    axes.set_title("the run over time (peak watch)", loc="left", fontsize=10)
    axes.set_xlabel("seconds")
    axes.set_ylabel(unit)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="upper right")


def draw_phases(axes: Any, phases: Sequence[PhaseRecord]) -> None:
    """A test's phases on one timeline: each one's RSS (its highest entry, as the watch read
    it), its span shaded and named, its verdict in colour."""
    drawn = [phase for phase in phases if (phase.get("timeline") or {}).get("seconds")]
    scale, unit = _scale("rss", [v for phase in drawn for v in phase["timeline"]["rss"]])
    for phase in drawn:
        began = float(phase.get("began", 0.0))
        seconds = [began + t for t in phase["timeline"]["seconds"]]
        rss = [v / scale for v in phase["timeline"]["rss"]]
        colour = {ProbeVerdict.FAIL.value: "#c44e52", ProbeVerdict.STOPPED.value: "#8c2d04",
                  ProbeVerdict.PASS.value: "#2d7d46"}.get(phase.get("verdict", ""), "#555555")
        axes.axvspan(seconds[0], seconds[-1], color=colour, alpha=0.12)
        axes.plot(seconds, rss, color=colour, linewidth=1.0)
        axes.text(seconds[0], max(rss), f" {phase['name']}: +{fmt('rss', phase.get('rise'))}"
                  f" ({phase.get('verdict', '')})", fontsize=7, va="bottom", color=colour)
    axes.set_title("phases over time (RSS, peak watch)", loc="left", fontsize=10)
    axes.set_xlabel("seconds since the first phase began")
    axes.set_ylabel(unit)
    axes.grid(True, alpha=0.3)


def plot_test(nodeid: str, test: ResultRecord, path: Path) -> Path:
    """Draw one test into ``path``: each probe's series, one panel each; a footprint's run
    over time; its phases on one timeline."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    probes = {name: p for name, p in test.get("probes", {}).items() if p.get("samples")}
    evidence = test.get("peak_evidence") or {}
    timeline = evidence.get("timeline") or cast("WatchTimeline", {})
    phases = [phase for phase in test.get("phases", [])
              if (phase.get("timeline") or {}).get("seconds")]
    drawn = len(probes) + bool(timeline.get("seconds")) + bool(phases)
    figure = Figure(figsize=(8.5, 1.0 + 2.6 * max(drawn, 1)), layout="constrained")
    panels = list(figure.subplots(max(drawn, 1), 1, squeeze=False)[:, 0])
    series = panels[: len(probes)]
    for axes in series[1:]:
        axes.sharex(series[0])
    for axes, (name, probe) in zip(series, probes.items(), strict=False):
        draw_probe(axes, name, probe, int(test.get("warmup", 0)),
                   int(test.get("window_start", 0)))
    if series:
        series[-1].set_xlabel("iteration")
    rest = panels[len(probes):]
    if timeline.get("seconds"):
        draw_timeline(rest.pop(0), evidence)
    if phases:
        draw_phases(rest.pop(0), phases)
    passed = "passed" if test.get("passed") else "FAILED"
    figure.suptitle(f"{nodeid}\n{run_text(test)}: budgets {passed}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def run_text(test: ResultRecord) -> str:
    """'640 measured iterations after 5 warm-up', '1 measured call', '3 phases'."""
    iterations, warmup = int(test.get("iterations") or 0), int(test.get("warmup") or 0)
    if not test.get("probes") and test.get("phases"):
        return f"{len(test['phases'])} phase{'s' if len(test['phases']) != 1 else ''}"
    what = "call" if iterations == 1 else "calls" if iterations < 10 else "iterations"
    text = f"{iterations} measured {what}"
    return text + (f" after {warmup} warm-up" if warmup else "")


def plot_all(tests: Mapping[str, ResultRecord], folder: Path) -> list[Path]:
    """One PNG per test that has samples or phases; returns the files written."""
    return [plot_test(nodeid, test, folder / file_name(nodeid))
            for nodeid, test in tests.items()
            if any(p.get("samples") for p in test.get("probes", {}).values())
            or any((phase.get("timeline") or {}).get("seconds")
                   for phase in test.get("phases", []))]
