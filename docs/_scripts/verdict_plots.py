"""Draw the verdict pictures of the docs: synthetic series and what the verdict sees in them.

Run by ``docs/conf.py`` on every build (so the pictures follow ``fit.py`` and ``verdict.py``),
or by hand: ``python docs/_scripts/verdict_plots.py OUTDIR``. Needs matplotlib (the ``docs``
extra). Each picture shows the samples, the judged tail, the floor of each tail block, the
Theil-Sen line through the floors and Sen's one-sided bounds, and the verdict for a budget of
``rss=0``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.fit import TAIL_BLOCKS, Trend, block_floors, trend
from pytest_membudget.judge.verdict import judge_slope

KIB = 1024.0
MIB = 1024.0 * KIB
PAGE = 4096.0
ITERATIONS = 400
CONFIDENCE = 0.99


def _pages(values: np.ndarray) -> np.ndarray:
    """RSS moves in whole pages."""
    return np.floor(values / PAGE) * PAGE


def leak(i: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _pages(60 * MIB + 2 * KIB * i + rng.normal(0, 6 * KIB, i.size))


def plateau(i: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    filled = np.minimum(i, 150) * 8 * KIB
    return _pages(60 * MIB + filled + rng.normal(0, 6 * KIB, i.size))


def sawtooth(i: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _pages(60 * MIB + (i % 50) * 6 * KIB + rng.normal(0, 4 * KIB, i.size))


def spikes(i: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    series = 60 * MIB + rng.normal(0, 6 * KIB, i.size)
    at = rng.choice(i.size, size=12, replace=False)
    series[at] += rng.uniform(1, 3, at.size) * MIB
    return _pages(series)


SERIES: dict[str, tuple[str, Callable[[np.ndarray, np.random.Generator], np.ndarray]]] = {
    "leak": ("a leak: 2 KiB per iteration, to the end", leak),
    "plateau": ("a cache that fills for 150 iterations, then stops", plateau),
    "sawtooth": ("a buffer cleared every 50 iterations", sawtooth),
    "spikes": ("flat, with single-iteration spikes of 1-3 MiB", spikes),
}


def verdict_of(x: np.ndarray, y: np.ndarray) -> tuple[str, Trend]:
    t = trend(x, y, CONFIDENCE)
    status = judge_slope(t, 0.0, PROBES["rss"].resolution, float(len(x) - len(x) // 2))
    return status, t


def draw(name: str, outdir: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    title, make = SERIES[name]
    rng = np.random.default_rng(20240601)
    x = np.arange(1, ITERATIONS + 1, dtype=np.float64)
    y = make(x, rng)
    status, t = verdict_of(x, y)
    tail = t.tail_start
    fx, fy = block_floors(x[tail:], y[tail:], TAIL_BLOCKS)
    anchor_x, anchor_y = float(np.median(fx)), float(np.median(fy))

    fig, ax = plt.subplots(figsize=(7.0, 3.2), dpi=110)
    ax.plot(x, y / MIB, lw=0.8, color="#8aa1b1", label="samples")
    ax.axvspan(x[tail], x[-1], color="#f3efe0", zorder=0, label="judged tail")
    for edge in np.array_split(x[tail:], TAIL_BLOCKS)[1:]:
        ax.axvline(edge[0], color="#d8d0b8", lw=0.6, zorder=0)
    ax.scatter(fx, fy / MIB, s=18, color="#c0392b", zorder=3, label="block floors")
    line_x = np.array([x[tail], x[-1]])
    for slope, style, label in ((t.slope, "-", "Theil-Sen slope"),
                                (t.lower, ":", "Sen's bounds"),
                                (t.upper, ":", None)):
        if np.isfinite(slope):
            ax.plot(line_x, (anchor_y + slope * (line_x - anchor_x)) / MIB, style,
                    color="#1f4e79", lw=1.4, label=label)
    slope_text = f"{t.slope / KIB:.2f} KiB/iter"
    ax.set_title(f"{title}\nslope {slope_text}, verdict for rss=0: {status}", fontsize=9)
    ax.set_xlabel("iteration")
    ax.set_ylabel("RSS (MiB)")
    ax.legend(fontsize=7, loc="upper left", ncols=2)
    fig.tight_layout()
    outdir.mkdir(parents=True, exist_ok=True)
    path = outdir / f"verdict-{name}.png"
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def main(outdir: Path) -> list[Path]:
    return [draw(name, outdir) for name in SERIES]


if __name__ == "__main__":
    for written in main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/_generated")):
        print(written)
