"""The sample storage of one run: preallocated before the window, so that the sampling path
allocates nothing the probes could read as growth; thinned in place when a run outgrows it."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from pytest_membudget.evidence.peakrecords import PeakEvidence
from pytest_membudget.evidence.records import GrowthEvidence
from pytest_membudget.judge.decide import Found, Record, Window
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.judge.verdict import Verdict
from pytest_membudget.probes import Probe
from pytest_membudget.vocabulary import Phase, StopReason

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_membudget.measure.stride import Stride


@dataclass
class Measurement:
    """Sample storage, preallocated before the first iteration so that the plugin's own
    bookkeeping never reads as growth in the probes it feeds."""

    spec: BudgetSpec
    probes: dict[str, Probe]
    capacity: int
    x: npt.NDArray[np.int64] = field(init=False)
    values: npt.NDArray[np.float64] = field(init=False)
    rows: int = 0
    #: Row of the window's first sample (-1 before the window opens).
    window_row: int = -1
    warmup_done: int = 0
    measured: int = 0
    phase: Phase = Phase.WARMUP
    started: float = 0.0
    seconds: float = 0.0
    #: When the window's first iteration began, and the seconds of window at the latest
    #: judgement (the pass rule's run length follows the pace of slow calls).
    window_began: float = 0.0
    window_seconds: float = 0.0
    stopped: StopReason = StopReason.RUNNING
    verdict: Verdict | None = None
    #: The judge's record of the run between checkpoints (judge.decide.Record); None before
    #: the window's first checkpoint.
    record: Record | None = None
    #: The sampling stride of the window (set when the warm-up ends).
    stride: Stride | None = None
    evidence: GrowthEvidence = field(default_factory=lambda: GrowthEvidence())
    #: Peaks the sources kept between samples (tracemalloc's, the kernel's VmHWM).
    source_peaks: dict[str, float] = field(default_factory=dict)
    #: The probes sampled only beside the budgets (the exact witnesses of a coarse probe, the
    #: probe watched for native growth): handed to the judge, never judged or reported.
    hidden: frozenset[str] = frozenset()
    #: A probe watched beside budgets blind to native memory (verdict.native_watch), for a
    #: note on its clear growth; "" for none.
    watch: str = ""
    #: What the peak watch saw over the run (footprint budgets only), and the evidence at
    #: the peak after a failing one.
    watched: Any = None  # measure.watch.WatchReport (which imports the results above)
    peak_evidence: PeakEvidence = field(
        default_factory=cast("Callable[[], PeakEvidence]", dict))
    #: The object types alive where the measured window began (a run with footprint
    #: budgets and evidence): what the run left alive is counted from it.
    start_types: Any = None  # measure.footprint.Census

    def __post_init__(self) -> None:
        self.x = np.zeros(self.capacity, dtype=np.int64)
        self.values = np.zeros((self.capacity, len(self.probes)), dtype=np.float64)

    @classmethod
    def probe_options(cls, names: Collection[str]) -> dict[str, Any]:
        """Options for the probes ``names`` of a run stored here (see probes/rss.py), beside
        the run settings' own."""
        return {}

    @property
    def window_start(self) -> int:
        """Index of the window's first sample (0 when the window never opened)."""
        return max(self.window_row, 0)

    def window(self) -> tuple[npt.NDArray[np.float64], dict[str, npt.NDArray[np.float64]]]:
        start = self.window_start
        x = self.x[start : self.rows].astype(np.float64)
        return x, {n: self.values[start : self.rows, c] for c, n in enumerate(self.probes)}

    def peaks(self) -> dict[str, float]:
        """Each probe's highest value over the measured window (the warm-up is not
        measured), with the peaks its source kept between samples."""
        start = self.window_start
        if self.rows <= start:
            return {n: math.nan for n in self.probes}
        return {
            n: max(float(self.values[start : self.rows, c].max()),
                   self.source_peaks.get(n, -math.inf))
            for c, n in enumerate(self.probes)
        }

    def starts(self) -> dict[str, float]:
        """Each probe's value where the measured window began: after the warm-up, which is
        not measured (the run's first sample where the window never opened)."""
        return self._row(self.window_start)

    def run_starts(self) -> dict[str, float]:
        """Each probe's value at the run's first sample, before the warm-up."""
        return self._row(0)

    def _row(self, row: int) -> dict[str, float]:
        if self.rows <= row:
            return {n: math.nan for n in self.probes}
        return {n: float(self.values[row, c]) for c, n in enumerate(self.probes)}

    def fits(self, samples: int) -> bool:
        return self.rows + samples <= self.capacity

    def thin(self) -> bool:
        """Keep every other sample of the window (its first among them), in place: room for a
        run longer than the storage was made for. Called between judgements; nothing is
        allocated. False when there is nothing left to thin."""
        start = self.window_start
        if self.rows - start <= 2:
            return False
        kept = (self.rows - start + 1) // 2
        # Row k takes row 2k, copied in runs [2^j, 2^(j+1)) whose sources [2^(j+1), 2^(j+2))
        # lie beyond them: no copy overlaps, so numpy needs no temporary.
        low = 1
        while low < kept:
            high = min(2 * low, kept)
            self.x[start + low : start + high] = self.x[start + 2 * low : start + 2 * high : 2]
            self.values[start + low : start + high] = (
                self.values[start + 2 * low : start + 2 * high : 2])
            low = high
        self.rows = start + kept
        return True

    def quiet(self) -> bool:
        """At a run's reading point (``RunPolicy.read_at``, the sweep's screen): whether it
        may stop there. Runs without a reading point never ask."""
        return False

    def facts(self, out_of_time: bool = False, end: StopReason | None = None,
              found: Found | None = None) -> Window:
        """The window's facts for the judge (judge.decide): its samples so far, what they
        cost, and what the evidence found."""
        x, series = self.window()
        return Window(x, series, self.peaks(), self.starts(), self.measured,
                      self.window_seconds, self.hidden, out_of_time, end, found)
