"""Taking samples: the probes' lifecycle, the sample storage, the stride between samples and
what sampling costs, and the garbage-collector policy of the window.

Everything a sample does is decided before the window opens, so that the sampling path
allocates nothing the probes could read as growth.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_membudget.policy import RunPolicy
from pytest_membudget.probes import Probe
from pytest_membudget.spec import BudgetSpec
from pytest_membudget.verdict import Verdict, hold_back, judge
from pytest_membudget.vocabulary import GcPolicy, Phase, StopReason

#: Share of the workload's time that sampling may take; the sampling stride follows from it.
SAMPLING_OVERHEAD = 0.05
#: Fewest samples an auto run aims for in its longest window.
AUTO_MIN_SAMPLES = 64
#: Fewest samples a fixed run aims for.
FIXED_MIN_SAMPLES = 32


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
    stopped: StopReason = StopReason.RUNNING
    verdict: Verdict | None = None
    #: The sampling stride of the window (set when the warm-up ends).
    stride: Stride | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    #: Peaks the sources kept between samples (tracemalloc's, the kernel's VmHWM).
    source_peaks: dict[str, float] = field(default_factory=dict)
    #: Coarse probe -> the exact probe sampled beside it (verdict.witnesses), and the probes
    #: sampled only as witnesses: judged for hold_back, never reported.
    witnesses: dict[str, str] = field(default_factory=dict)
    hidden: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self.x = np.zeros(self.capacity, dtype=np.int64)
        self.values = np.zeros((self.capacity, len(self.probes)), dtype=np.float64)

    @property
    def window_start(self) -> int:
        """Index of the window's first sample (0 when the window never opened)."""
        return max(self.window_row, 0)

    def window(self) -> tuple[npt.NDArray[np.float64], dict[str, npt.NDArray[np.float64]]]:
        start = self.window_start
        x = self.x[start : self.rows].astype(np.float64)
        return x, {n: self.values[start : self.rows, c] for c, n in enumerate(self.probes)}

    def peaks(self) -> dict[str, float]:
        if self.rows == 0:
            return {n: math.nan for n in self.probes}
        return {
            n: max(float(self.values[: self.rows, c].max()), self.source_peaks.get(n, -math.inf))
            for c, n in enumerate(self.probes)
        }

    def longest_tail(self) -> float:
        """The judged tail of the run length the pass rule assumes."""
        total = RunPolicy.for_run(self.spec.run).most_iterations
        return max(total - total // 2, 1)

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

    def judge(self) -> Verdict:
        x, series = self.window()
        shown = {name: y for name, y in series.items() if name not in self.hidden}
        longest = self.longest_tail()
        verdict = judge(self.spec, x, shown, self.peaks(), longest_tail=longest)
        if not self.witnesses:
            return verdict
        return hold_back(verdict, x, series, self.witnesses, self.spec.run.confidence, longest)


class ProbeSet:
    """The probes of one run: started before warm-up, prepared for the window, read into the
    sample storage, stopped at the end (also when the workload raised)."""

    def __init__(self, probes: dict[str, Probe]) -> None:
        self.probes = probes
        # Probes whose reads must come before the others' (which may allocate) go first.
        self.readers = [(column, p.read) for column, p in sorted(
            enumerate(probes.values()), key=lambda entry: not entry[1].read_first)]
        self.afters = [p.after_sample for p in probes.values()
                       if type(p).after_sample is not Probe.after_sample]
        # One sync per kind of probe (the CUDA probes share a device, the process-tree
        # probes one listing of the tree).
        self.syncs = list({type(p).sync: p.sync for p in probes.values()
                           if type(p).sync is not Probe.sync}.values())
        self.notes = list({type(p).note_iteration: p.note_iteration for p in probes.values()
                           if type(p).note_iteration is not Probe.note_iteration}.values())
        self.timing = probes.get("iter_time")

    def start(self) -> None:
        """Start every probe; when one cannot start, stop those that did (tracing, frozen
        state) before the error goes on."""
        started = []
        try:
            for probe in self.probes.values():
                probe.start()
                started.append(probe)
        except BaseException:
            for probe in reversed(started):
                probe.stop()
            raise

    def before_window(self) -> None:
        for probe in self.probes.values():
            probe.before_window()

    def peaks(self) -> dict[str, float]:
        found = {}
        for name, probe in self.probes.items():
            peak = probe.peak()
            if peak is not None:
                found[name] = peak
        return found

    def evidence(self, failing: set[str]) -> dict[str, Any]:
        """What the failing probes' own sources tell (the CUDA allocator's history, the process
        tree's tables)."""
        gathered: dict[str, Any] = {}
        for name in sorted(failing):
            for key, value in (self.probes[name].evidence() or {}).items():
                # Probes of one source file their findings under one key, each by its name.
                if isinstance(value, dict) and isinstance(gathered.get(key), dict):
                    gathered[key].update(value)
                else:
                    gathered[key] = value
        return gathered

    def stop(self) -> None:
        for probe in self.probes.values():
            probe.stop()

    def sampler(self, m: Measurement, collect: bool) -> Callable[[int, float], None]:
        """The function that takes one sample into ``m``: collect garbage (if the policy
        says so), sync the devices, read every probe into the next row."""
        values, xs = m.values, m.x
        readers, afters, syncs, timing = self.readers, self.afters, self.syncs, self.timing
        notes = self.notes

        def sample(iteration: int, seconds_per_iteration: float) -> None:
            if collect and m.phase is Phase.WINDOW:
                gc.collect()
            for note in notes:
                note(iteration)
            for sync in syncs:
                sync()
            if timing is not None:
                timing.value = seconds_per_iteration  # type: ignore[attr-defined]
            row = m.rows
            xs[row] = iteration
            for column, read in readers:
                values[row, column] = read()
            for after in afters:
                after()
            m.rows = row + 1

        return sample


class Stride:
    """How many iterations pass between samples: sampling is kept near SAMPLING_OVERHEAD of
    the workload's time, from the measured cost of a sample and of an iteration."""

    def __init__(self, iteration_cost: float, most: int) -> None:
        #: The warm-up's median iteration time: the window's first estimate.
        self.iteration_cost = iteration_cost
        self.most = most
        self.costs = 0.0
        self.samples = 0
        self.body_total = 0.0
        self.every = 1
        #: The narrowest stride allowed: the spacing of the window's samples once thinned.
        self.least = 1

    def calibrate(self, sample_cost: float) -> None:
        """After the window's first sample, which cost ``sample_cost``."""
        self.costs = sample_cost
        self.samples = 1
        self.every = self.choose(sample_cost, self.iteration_cost)

    def choose(self, sample_cost: float, iteration_cost: float) -> int:
        if iteration_cost <= 0 or not math.isfinite(iteration_cost):
            return self.least
        wanted = math.ceil(sample_cost / (SAMPLING_OVERHEAD * iteration_cost))
        return int(min(max(self.most, self.least), max(self.least, wanted)))

    def sampled(self, cost: float, body: float) -> None:
        """A sample cost ``cost`` seconds; the workload ran ``body`` seconds since the last."""
        self.costs += cost
        self.samples += 1
        self.body_total += body

    def rethink(self, measured: int) -> int:
        """At a checkpoint: the stride from the mean costs so far."""
        self.every = self.choose(self.costs / self.samples, self.body_total / measured)
        return self.every

    def thinned(self) -> int:
        """The window's samples were thinned to every other one: so is the stride."""
        self.least = max(self.least, self.every) * 2
        self.every = self.least
        return self.every

    @staticmethod
    def most_for(total: int, fixed: bool) -> int:
        """The widest stride that still leaves the window enough samples."""
        return max(1, total // (FIXED_MIN_SAMPLES if fixed else AUTO_MIN_SAMPLES))


class GarbageCollection:
    """The window's gc policy. ``collect``: everything alive before the window is frozen out
    of the collector's reach, and each window sample is preceded by a collection that only
    walks what the window made. Evidence must see every object again, so the freeze is lifted
    before it, and always at the end."""

    def __init__(self, policy: GcPolicy) -> None:
        self.collect = policy is GcPolicy.COLLECT
        self.frozen = False

    def open_window(self) -> None:
        if self.collect:
            # Garbage from before the window is frozen too: it stays as it is, a constant
            # that no slope sees, and a full collection here (tens of ms on a large heap,
            # on every test) is saved.
            gc.freeze()
            self.frozen = True

    def release(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
