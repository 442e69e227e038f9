"""Figures for people: a probe's value in readable units, sparklines, aligned tables, why a
run stopped. Decides nothing."""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Mapping, Sequence

from pytest_membudget.catalog import PROBES
from pytest_membudget.frames import library_path
from pytest_membudget.vocabulary import BudgetKind, ProbeKind, StopReason

_BINARY: tuple[tuple[str, float], ...] = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_TIME = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))
SPARKS = "▁▂▃▄▅▆▇█"
STOPPED = {
    StopReason.CLEAR: "auto: stopped when the verdict was clear",
    StopReason.CAP: "auto: reached the iteration or time cap",
    StopReason.FIXED: "fixed count",
    StopReason.RUNNING: "cut short",
    StopReason.DISABLED: "measurement disabled",
    StopReason.CEILING: "stopped at the ceiling, inside a call",
}


def stopped_text(stopped: object) -> str:
    """Why a run stopped, for people (``stopped`` as in a result or its dict)."""
    try:
        return STOPPED[StopReason(stopped)]
    except ValueError:
        return str(stopped)


def _kind(probe: str) -> ProbeKind:
    return PROBES[probe].kind if probe in PROBES else ProbeKind.COUNT


def unit_scale(probe: str, magnitude: float) -> tuple[float, str]:
    """The unit a probe's figure of this size is shown in, and its size in the probe's base
    unit: (1024.0, 'KiB'), (1e-3, 'ms'), (1.0, 'threads')."""
    kind = _kind(probe)
    if kind is ProbeKind.BYTES:
        return next(((scale, unit) for unit, scale in _BINARY if magnitude >= scale), (1.0, "B"))
    if kind is ProbeKind.SECONDS:
        return next(((scale, unit) for unit, scale in _TIME if magnitude >= scale), (1e-9, "ns"))
    return 1.0, PROBES[probe].unit if probe in PROBES else ""


def fmt(probe: str, value: float | None, *, per_iter: bool = False) -> str:
    """A probe's figure in readable units: '1.5 KiB/iter', '3 threads', '2.1 ms'."""
    suffix = "/iter" if per_iter else ""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if math.isinf(value):
        return ("-" if value < 0 else "") + "inf" + suffix
    scale, unit = unit_scale(probe, abs(value))
    if _kind(probe) is not ProbeKind.COUNT:
        return f"{value / scale:.3g} {unit}{suffix}"
    if not per_iter and value == int(value) and abs(value) >= 1000:
        # Whole counts in full: 43,102 -> 43,152 objects, not 4.31e+04 -> 4.31e+04.
        return f"{value:,.0f} {unit}".rstrip()
    return f"{value:.3g} {unit}{suffix}".rstrip()


def sparkline(values: Sequence[float], width: int = 40) -> str:
    """A compact text picture of a series: each character is the mean of a slice. Samples
    that are not numbers (a run cut short before a probe was read) are left out."""
    values = [v for v in values if math.isfinite(v)]
    n = len(values)
    if n == 0:
        return ""
    width = min(width, n)
    edges = [round(i * n / width) for i in range(width + 1)]
    points = [sum(values[a:b]) / max(b - a, 1) for a, b in itertools.pairwise(edges)]
    low, high = min(points), max(points)
    if high - low <= 0:
        return SPARKS[0] * width
    scale = (len(SPARKS) - 1) / (high - low)
    return "".join(SPARKS[int((p - low) * scale)] for p in points)


def budget_text(probe: str, budgets: Mapping[str, float | None]) -> str:
    """'0 B/iter, peak 2 GiB': a probe's budgets in force, or '-' for none."""
    shown = [fmt(probe, v, per_iter=True) if kind == BudgetKind.SLOPE.value
             else f"{kind} {fmt(probe, v)}" for kind, v in budgets.items() if v is not None]
    return ", ".join(shown) or "-"


def round_up(value: float) -> float:
    """``value`` (> 0) rounded up at its second significant digit (236 -> 240, 4.71 -> 4.8,
    495 -> 500): what a suggested setting says, a choice rather than a measurement, and no
    less than it needs."""
    places = 1 - math.floor(math.log10(value))
    return round(math.ceil(round(value * 10.0 ** places, 9)) / 10.0 ** places, max(places, 0))


def short_path(path: str) -> str:
    """A file as a person reads it: a library's by its package path
    (``numpy/_core/numeric.py``), the user's relative to the working directory where it is
    under it; the full path stays in the JSON."""
    package = library_path(path)
    if package is not None:
        return package
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return relative if not relative.startswith("..") else path


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in (header, *rows)) for i in range(len(header))]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)).rstrip()]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=False)).rstrip()
            for r in rows]
    return out


def bounds_text(probe: str, ci: Sequence[float | None] | None, *, per_iter: bool = False) -> str:
    """A slope's interval, ``[152 B, 220 B]`` (``/iter`` on each bound with ``per_iter``)."""
    low, high = [*(ci or ()), None, None][:2]
    return f"[{fmt(probe, low, per_iter=per_iter)}, {fmt(probe, high, per_iter=per_iter)}]"


def slope_text(probe: str, slope: float | None, ci: Sequence[float | None] | None) -> str:
    """A slope with its interval: ``198 B/iter [152 B/iter, 220 B/iter]``."""
    return f"{fmt(probe, slope, per_iter=True)} {bounds_text(probe, ci, per_iter=True)}"
