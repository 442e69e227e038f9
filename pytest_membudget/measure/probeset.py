"""The probes of one run and the sample function that reads them into the storage. Everything
a sample does is decided before the window opens."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any, cast

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.peakrecords import PeakEvidence
from pytest_membudget.evidence.records import GrowthEvidence
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import Probe
from pytest_membudget.probes.timing import IterCpuTimeProbe
from pytest_membudget.vocabulary import Phase


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
        cpu = probes.get("iter_cpu_time")
        #: The CPU-time probe the loop laps around the workload, where it is sampled.
        self.cpu_time = cpu if isinstance(cpu, IterCpuTimeProbe) else None
        #: The probes the plugin's own work between samples moves (catalog ``own_memory``;
        #: measure/own.py takes it out of their series).
        moved = {column for column, name in enumerate(probes)
                 if name in PROBES and PROBES[name].own_memory}
        self.moved = [(column, read) for column, read in self.readers if column in moved]

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

    def evidence(self, failing: set[str]) -> GrowthEvidence:
        """What the failing probes' own sources tell (the CUDA allocator's history, the process
        tree's tables), under the keys of the growth evidence they fill."""
        gathered: dict[str, Any] = {}
        for name in sorted(failing):
            for key, value in (self.probes[name].evidence() or {}).items():
                # Probes of one source file their findings under one key, each by its name.
                if isinstance(value, dict) and isinstance(gathered.get(key), dict):
                    gathered[key].update(value)
                else:
                    gathered[key] = value
        return cast(GrowthEvidence, gathered)

    def peak_evidence(self, failing: list[str]) -> PeakEvidence:
        """What the sources of the probes whose peak or rise failed tell of their highest
        point (a source shared by several probes answers once)."""
        gathered: dict[str, object] = {}
        for name in failing:
            for key, value in (self.probes[name].peak_evidence() or {}).items():
                gathered.setdefault(key, value)
        return cast(PeakEvidence, gathered)

    def stop(self) -> None:
        for probe in self.probes.values():
            probe.stop()

    def forget_peaks(self) -> None:
        """The peaks the sources kept since the latest sample (tracemalloc's) were the
        plugin's own work (a reading, a judgement), not the workload's: they start again."""
        for after in self.afters:
            after()

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
