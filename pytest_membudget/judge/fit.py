"""Pure statistics for memory series: robust slopes, their intervals, and the trend of a run.

Memory series are not independent noise around a line: allocators keep freed memory, caches
fill and stop, buffers are cleared in a sawtooth, and single iterations spike. The trend is
therefore judged on the *floors* of consecutive blocks (the minimum of each block), which
ignores spikes and the teeth of a sawtooth, and only on the second half of the measured
window, so that growth that has already stopped does not count. The slope through the floors
is a Theil-Sen slope, and its one-sided bounds come from the order statistics of the pairwise
slopes (Sen, 1968), which need no assumption about the shape of the noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

#: Blocks in the judged tail. Six is the fewest for which a perfectly monotone rise is
#: significant at 99 % one-sided; eight leaves room for one noisy block. A slope is judged
#: only on a tail of at least this many samples: one in each block at least.
TAIL_BLOCKS = 8


@dataclass(frozen=True)
class Trend:
    """The trend of one series over the judged tail of a run."""

    slope: float
    lower: float
    upper: float
    late_slope: float
    #: Rise over the last two blocks' floors, per iteration: growth that has stopped shows
    #: here first.
    recent_slope: float
    tail_start: int
    tail_span: float
    growth: float
    judged: bool


def pairwise_slopes(x: FloatArray, y: FloatArray) -> FloatArray:
    """All slopes (y[j] - y[i]) / (x[j] - x[i]) for i < j with distinct x, sorted."""
    i, j = np.triu_indices(len(x), k=1)
    dx = x[j] - x[i]
    keep = dx != 0
    slopes: FloatArray = (y[j][keep] - y[i][keep]) / dx[keep]
    slopes.sort()
    return slopes


def theil_sen(x: FloatArray, y: FloatArray) -> float:
    """Median of the pairwise slopes; 0.0 for fewer than two distinct x."""
    slopes = pairwise_slopes(x, y)
    return float(np.median(slopes)) if slopes.size else 0.0


def sen_bounds(x: FloatArray, y: FloatArray, confidence: float) -> tuple[float, float, float]:
    """Theil-Sen slope with one-sided lower and upper bounds at ``confidence``.

    The bounds are order statistics of the pairwise slopes whose ranks come from the normal
    approximation to Kendall's S. Too few points for the requested confidence give infinite
    bounds, so that nothing is claimed that the data cannot support.
    """
    slopes = pairwise_slopes(x, y)
    count = slopes.size
    if count == 0:
        return 0.0, -math.inf, math.inf
    n = len(x)
    var_s = n * (n - 1) * (2 * n + 5) / 18.0
    half_width = NormalDist().inv_cdf(confidence) * math.sqrt(var_s)
    low_rank = math.floor((count - half_width) / 2.0)  # 1-based rank of the lower bound
    high_rank = math.ceil((count + half_width) / 2.0) + 1
    lower = float(slopes[low_rank - 1]) if low_rank >= 1 else -math.inf
    upper = float(slopes[high_rank - 1]) if high_rank <= count else math.inf
    return float(np.median(slopes)), lower, upper


def block_floors(x: FloatArray, y: FloatArray, blocks: int) -> tuple[FloatArray, FloatArray]:
    """The lowest point of each of ``blocks`` consecutive, near-equal blocks."""
    blocks = max(1, min(blocks, len(x)))
    fx = np.empty(blocks)
    fy = np.empty(blocks)
    parts = zip(np.array_split(x, blocks), np.array_split(y, blocks), strict=True)
    for k, (bx, by) in enumerate(parts):
        at = int(np.argmin(by))
        fx[k] = bx[at]
        fy[k] = by[at]
    return fx, fy


def window_growth(y: FloatArray, blocks: int = TAIL_BLOCKS) -> float:
    """Growth from the start to the end of a window, floor to floor (spikes do not count)."""
    if len(y) < 2:
        return 0.0
    parts = np.array_split(y, max(2, min(blocks, len(y))))
    return float(parts[-1].min() - parts[0].min())


def tail_length(n: int) -> int:
    """Samples in the judged tail of a window of ``n``: its second half, and at least one
    sample for each of the TAIL_BLOCKS blocks when there are that many."""
    return max(n - n // 2, min(n, TAIL_BLOCKS))


def trend(x: FloatArray, y: FloatArray, confidence: float) -> Trend:
    """Judge the trend of a measured window (warm-up already excluded)."""
    n = len(x)
    growth = window_growth(y)
    tail_len = tail_length(n)
    if tail_len < TAIL_BLOCKS:  # a block without a sample: nothing to judge
        slope = theil_sen(x, y) if n >= 2 else 0.0
        return Trend(slope, -math.inf, math.inf, slope, slope, 0, 0.0, growth, judged=False)
    tx, ty = x[n - tail_len :], y[n - tail_len :]
    fx, fy = block_floors(tx, ty, TAIL_BLOCKS)
    slope, lower, upper = sen_bounds(fx, fy, confidence)
    late = len(fx) // 2
    late_slope = theil_sen(fx[late:], fy[late:])
    dx = float(fx[-1] - fx[-3])
    recent = float(fy[-1] - fy[-3]) / dx if dx > 0 else 0.0
    span = float(tx[-1] - tx[0])
    return Trend(slope, lower, upper, late_slope, recent, n - tail_len, span, growth, judged=True)
