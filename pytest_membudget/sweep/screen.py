"""The sweep's screen as a run: a fixed, short run of the test's body sampled after every
call on exact counters, whose samples the screening rule (judge/screen.py) reads itself."""

from __future__ import annotations

import functools
from collections.abc import Collection
from dataclasses import replace
from typing import Any

import numpy as np

from pytest_membudget.catalog import PROBES
from pytest_membudget.judge.decide import Found, Window
from pytest_membudget.judge.policy import RunPolicy
from pytest_membudget.judge.screen import (
    SCREEN_CALLS,
    SCREEN_PROBES,
    flagged,
    left_out,
    quiet,
    reading_points,
    rule_columns,
)
from pytest_membudget.judge.spec import BudgetSpec, RunSettings
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.vocabulary import GcPolicy, StopReason

_NO_SAMPLES = np.zeros(0)


class ScreenMeasurement(Measurement):
    """The screen's samples: the screening rule reads them, so the runner's own judgement of
    a budgetless window (a trend per probe, twice per run) is skipped. The loop asks at the
    reading points (see :func:`screen_policy`) whether they have
    :func:`~pytest_membudget.judge.screen.quiet`. A screen that goes on has the delta
    across each reading left out of its rule (``read``): the reading's own objects can move
    ``py_blocks`` by one in that delta.

    A screen reads values alone: its RSS keeps no peak (resetting the kernel's mark is a
    write to /proc per screen), and glibc's free memory is not handed back before its window
    where the screen reads ``malloc``, which sees growth that reuses free memory byte for
    byte. Handed back, the pages the first measured calls fault in again read as RSS growth
    of a page or more, which would keep the screens of clean slow tests going
    (docs/design/sweep.md)."""

    @classmethod
    def probe_options(cls, names: Collection[str]) -> dict[str, Any]:
        return {"peaks": False, "release_free_memory": not any(
            PROBES[name].native_in_use for name in names)}

    def __post_init__(self) -> None:
        super().__post_init__()
        # Made before the window, so that the reading in it allocates only temporaries.
        self.least, self.every = rule_columns(tuple(self.probes))
        #: The window samples of the readings whose following delta is left out of the rule
        #: (:func:`~pytest_membudget.judge.screen.left_out`).
        self.read: list[int] = []

    def facts(self, out_of_time: bool = False, end: StopReason | None = None,
              found: Found | None = None) -> Window:
        """Nothing for the judge: the screening rule reads the samples itself."""
        return Window(_NO_SAMPLES, {}, {}, {}, self.measured, self.window_seconds, end=end)

    def quiet(self) -> bool:
        start = self.window_start
        at = self.rows - 1 - start
        # Appended only where the delta after it is left out: the list's first append
        # allocates a block, which would read as growth in a judged delta (a slow test's
        # first reading; tests/unit/sweep/test_sweep_driver.py).
        if left_out(at):
            self.read.append(at)
        return quiet(self.values[start : self.rows], self.least, self.every)

    def flagged(self) -> dict[str, float]:
        """The probes the screening rule flags, without the deltas across the readings."""
        rows = self.values[self.window_start : self.rows].tolist()
        # No rows (a window never opened): no series, nothing flagged.
        return flagged(dict(zip(self.probes, zip(*rows, strict=True), strict=False)),
                       skip=self.read)

    def per_call(self, name: str) -> float:
        """A probe's net growth per call over the window."""
        values = self.window()[1][name]
        return float(values[-1] - values[0]) / max(1, len(values) - 1)



@functools.lru_cache(maxsize=1)
def screen_probes() -> tuple[str, ...]:
    """The screen's probes that can be read on this system (``malloc`` needs glibc)."""
    from pytest_membudget.probes import create

    return tuple(name for name in SCREEN_PROBES if create(name).unavailable() is None)


def screen_spec(run: RunSettings, calls: int = SCREEN_CALLS) -> BudgetSpec:
    """A fixed, short run, sampled after every call, budgets none: the screen reads the
    samples itself. Its warm-up calls are made before the run (``repeat``'s
    ``unmeasured``), unsampled: only the window's samples are read."""
    return BudgetSpec((), replace(run, iterations=calls, warmup=1, gc=GcPolicy.COLLECT,
                                  evidence=False, strict=False))


def screen_policy(spec: BudgetSpec, slow: bool = False) -> RunPolicy:
    """The screen's length: the first of its reading points (every second call at the default
    length, and the first call too for a ``slow`` test: see
    :func:`~pytest_membudget.judge.screen.reading_points`) where nothing could still be
    flagged (each probe read on every delta has had one under its threshold, threads and
    descriptors have not moved), otherwise all of its calls."""
    calls = spec.run.iterations or SCREEN_CALLS
    return replace(RunPolicy.for_run(spec.run), read_at=reading_points(calls, slow))


