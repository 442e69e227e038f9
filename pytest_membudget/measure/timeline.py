"""The peak watch's timeline: rows of (seconds, RSS, the most tracemalloc held since the row
before), in a fixed array; a longer watch keeps every other row, so the array never grows
while the watch reads."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Rows of the timeline; a longer watch keeps every other row.
TIMELINE_ROWS = 2048


class Timeline:
    """The rows a watch records, one per reading until full, then one every other, fourth
    (and so on) reading. A row's traced bytes are the most tracemalloc held since the row
    before, as far as its figures tell: where its peak moved between two readings, that peak
    (made while the workload kept the watch from reading: numpy filling arrays with the GIL
    held, a pool's workers freeing them before the watch read again), else the bytes at the
    reading; across the readings left out and the rows thinned out, their most. The first
    reading's peak is of the time before the watch: its row holds its bytes."""

    def __init__(self) -> None:
        self._rows = np.zeros((TIMELINE_ROWS, 3))
        self._count = 0
        self._every = 1
        self._readings = 0
        self._peak = self._most = 0.0

    def record(self, now: float, rss: float, traced: float, peak: float) -> None:
        """One reading: the time, RSS, tracemalloc's traced bytes and its peak."""
        moved = self._readings and peak != self._peak  # the first reading has none before
        self._most = max(self._most, peak if moved else traced)
        self._peak = peak
        self._readings += 1
        if (self._readings - 1) % self._every:
            return
        rows = self._rows
        if self._count == TIMELINE_ROWS:
            half = TIMELINE_ROWS // 2
            self._most = max(self._most, rows[-1, 2])
            rows[1:half, 2] = np.maximum(rows[2::2, 2], rows[1:-1:2, 2])
            rows[1:half, :2] = rows[2::2, :2]
            self._count, self._every = half, self._every * 2
        rows[self._count] = (now, rss, self._most)
        self._most = 0.0
        self._count += 1

    def rows(self) -> npt.NDArray[np.float64]:
        """A copy of the rows recorded."""
        rows: npt.NDArray[np.float64] = self._rows[: self._count].copy()
        return rows
