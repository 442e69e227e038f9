"""The plugin's own footprint, kept out of what it measures, by one mechanism in three parts:

- **prime**: code whose first run in a process leaves memory behind (lazy imports, first-call
  caches of the interpreter and of numpy) runs once per process before a window opens
  (:func:`prime_once`), so that it never lands in the first budgeted test of a process,
  which under pytest-xdist is a different test on each worker;
- **rebase**: after the plugin's own work inside a window, the probes of this process's
  memory are read again and the samples so far shifted by the difference (:class:`Rebaser`):
  what that work left is never the workload's growth. A screen's reading is the one piece
  of work that is not re-read: the screen judges every delta to the block, and a re-read
  around its reading moves with the interpreter's free lists (a float freed to the float
  free list still counts as an allocated block) by a few blocks either way; the delta
  across the reading is left out of its rule instead (judge.screen.left_out);
- **exclude**: the plugin's own objects are left out of every count of objects, by one list
  (evidence/census.own_objects), and its own types by name.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np

from pytest_membudget.measure.probeset import ProbeSet
from pytest_membudget.measure.samples import Measurement

#: What was primed in this process.
_primed: set[str] = set()


def prime_once(key: str, prime: Callable[[], None]) -> None:
    """Run ``prime`` the first time ``key`` is asked for in this process."""
    if key not in _primed:
        _primed.add(key)
        prime()


class Rebaser:
    """Takes what the plugin itself left in the window out of the series: after a judgement
    at a checkpoint it re-reads the probes of this process's memory (catalog ``own_memory``;
    after a collection, as a sample does) and shifts the samples taken so far by the
    difference from the latest sample, so that the next sample continues from this reading.
    A judgement runs no call of the workload but leaves blocks in the interpreter's free
    lists and numpy's small-buffer cache; growth of the process during that pause (another
    thread's) is taken out with it."""

    def __init__(self, probe_set: ProbeSet, m: Measurement, collect: bool) -> None:
        self.moved, self.m, self.collect = probe_set.moved, m, collect
        self.forget = probe_set.forget_peaks
        self.shift = np.zeros(m.values.shape[1])

    def __call__(self) -> None:
        m, shift = self.m, self.shift
        row = m.rows - 1
        if not self.moved or row < 0:
            return
        if self.collect:
            gc.collect()
        # The work's temporaries are not the workload's peak.
        self.forget()
        for column, read in self.moved:
            shift[column] = read() - m.values[row, column]
        m.values[: m.rows] += shift
