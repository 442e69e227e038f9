"""The measuring loop: warm-up, sampling cadence, gc policy, auto-extension.

The loop is a generator that yields once per iteration; the caller runs the workload between
yields. The fixture's ``run`` and ``iterate`` and the repeated test body all drive the same
generator, so they measure the same way.
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pytest_membudget.attribution import collect as collect_evidence
from pytest_membudget.attribution import evidence_iterations
from pytest_membudget.catalog import PROBES
from pytest_membudget.probes import Probe
from pytest_membudget.report import describe_outcome
from pytest_membudget.results import MembudgetResult, ProbeResult
from pytest_membudget.spec import MIN_VERDICT_ITERATIONS, BudgetSpec
from pytest_membudget.verdict import AMBIGUOUS, FAIL, Verdict, judge

#: Share of the workload's time that sampling may take; the sampling stride follows from it.
SAMPLING_OVERHEAD = 0.05
#: Fewest samples an auto run aims for in its longest window.
AUTO_MIN_SAMPLES = 64
#: Fewest samples a fixed run aims for.
FIXED_MIN_SAMPLES = 32
#: Auto runs judge at min_iterations and then each time the window grows by this factor.
CHECKPOINT_GROWTH = 1.5
#: An auto run that fails at N iterations goes on to this many times N and must fail again
#: there: the tail judged then (the second half) does not overlap the first one.
CONFIRM_GROWTH = 2
#: Growth in the window (floor to floor) after which a failure confirmed at twice its length
#: stands without running on to MIN_VERDICT_ITERATIONS: a fast leak must not be run into
#: memory exhaustion or the descriptor limit to prove a point already made.
CONFIRM_ENOUGH_GROWTH = {"bytes": 64 * 1024**2, "count": 64.0}


@dataclass
class Measurement:
    """Sample storage, preallocated before the first iteration so that the plugin's own
    bookkeeping never reads as growth in the probes it feeds."""

    spec: BudgetSpec
    probes: dict[str, Probe]
    capacity: int
    x: np.ndarray = field(init=False)
    values: np.ndarray = field(init=False)
    rows: int = 0
    window_row: int = -1
    warmup_done: int = 0
    measured: int = 0
    stride: int = 1
    stopped: str = "running"
    #: "warmup", "window" or "evidence": where the loop is now.
    phase: str = "warmup"
    started: float = 0.0
    seconds: float = 0.0
    verdict: Verdict | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    #: Peaks the sources kept between samples (tracemalloc's, the kernel's VmHWM).
    source_peaks: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.x = np.zeros(self.capacity, dtype=np.int64)
        self.values = np.zeros((self.capacity, len(self.probes)), dtype=np.float64)

    def window(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        start = max(self.window_row, 0)
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
        run = self.spec.run
        total = run.iterations if run.iterations is not None else run.max_iterations
        return max(total - total // 2, 1)

    def judge(self) -> Verdict:
        x, series = self.window()
        return judge(self.spec, x, series, self.peaks(), longest_tail=self.longest_tail())


def capacity_for(spec: BudgetSpec) -> int:
    run = spec.run
    measured = run.iterations if run.iterations is not None else run.max_iterations
    return run.warmup + measured + 2


def measure(
    spec: BudgetSpec, probes: dict[str, Probe], state: Measurement | None = None
) -> Generator[int, None, Measurement]:
    """Yield the iteration numbers to run; return the finished measurement."""
    m = state or Measurement(spec, probes, capacity_for(spec))
    run = spec.run
    clock = time.perf_counter
    readers = [(column, p.read) for column, p in sorted(
        enumerate(probes.values()), key=lambda entry: not entry[1].read_first)]
    afters = [p.after_sample for p in probes.values()
              if type(p).after_sample is not Probe.after_sample]
    syncs = list({type(p).sync: p.sync for p in probes.values()
                  if type(p).sync is not Probe.sync}.values())
    timing = probes.get("iter_time")
    collect = run.gc == "collect"
    values, xs = m.values, m.x

    def sample(iteration: int, seconds_per_iteration: float, with_gc: bool) -> None:
        if with_gc:
            gc.collect()
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

    froze = False
    # Before the probes start, so that not even a peak (tracemalloc's, the kernel's) sees it.
    _prime_judgement(spec)
    m.started = clock()
    for probe in probes.values():
        probe.start()
    try:
        sample(0, math.nan, False)
        warm_times = []
        iteration = 0
        for _ in range(run.warmup):
            begin = clock()
            yield iteration
            elapsed = clock() - begin
            iteration += 1
            warm_times.append(elapsed)
            sample(iteration, elapsed, False)
        m.warmup_done = run.warmup
        # Everything the plugin computes for itself happens before the window's first
        # sample, so that none of it lands inside the window.
        iter_cost = sorted(warm_times)[len(warm_times) // 2] if warm_times else 0.0
        target_total = run.iterations if run.iterations is not None else run.max_iterations
        min_samples = FIXED_MIN_SAMPLES if run.iterations is not None else AUTO_MIN_SAMPLES
        max_stride = max(1, target_total // min_samples)
        checkpoint = run.iterations if run.iterations is not None else min(
            run.min_iterations, run.max_iterations)
        if collect:
            # Freezing moves everything alive before the window out of the collector's
            # reach, so that collecting before each sample only walks what the window made.
            # Garbage from before the window is frozen too: it stays as it is, a constant
            # that no slope sees, and a full collection here (tens of ms on a large heap,
            # on every test) is saved.
            gc.freeze()
            froze = True
        for probe in probes.values():
            probe.before_window()
        m.window_row = m.rows
        m.phase = "window"
        cost_start = clock()
        sample(iteration, iter_cost, collect)
        sample_cost = clock() - cost_start
        m.stride = _stride(sample_cost, iter_cost, max_stride)
        deadline = m.started + run.max_seconds
        body_time = 0.0
        body_total = 0.0
        since_sample = 0
        costs = sample_cost
        n_costs = 1
        confirm_at: int | None = None
        auto = run.iterations is None
        shortest = min(MIN_VERDICT_ITERATIONS, run.max_iterations)
        while True:
            begin = clock()
            yield iteration
            end = clock()
            elapsed = end - begin
            body_time += elapsed
            body_total += elapsed
            iteration += 1
            since_sample += 1
            m.measured += 1
            out_of_time = auto and end > deadline
            if since_sample >= m.stride or m.measured >= checkpoint or out_of_time:
                sample(iteration, body_time / since_sample, collect)
                costs += clock() - end
                n_costs += 1
                body_time = 0.0
                since_sample = 0
            if m.measured < checkpoint and not out_of_time:
                continue
            if not auto:
                m.stopped = "fixed"
                break
            if m.measured >= run.max_iterations or out_of_time:
                m.stopped = "cap"
                break
            verdict = m.judge()
            if verdict.failed:
                # A leak grows in every stretch. A failure stands once the judged tail at
                # twice the length, which no longer overlaps the first one, fails too, and
                # again at MIN_VERDICT_ITERATIONS unless the growth is already ample; a
                # cache that was still filling has stopped by then.
                if confirm_at is None:
                    confirm_at = min(run.max_iterations, CONFIRM_GROWTH * m.measured)
                elif m.measured >= confirm_at:
                    last = max(shortest, confirm_at)
                    if m.measured >= last or _grown_enough(verdict):
                        m.stopped = "clear"
                        break
                    confirm_at = last
                checkpoint = confirm_at
            else:
                confirm_at = None
                if verdict.clear and m.measured >= shortest:
                    m.stopped = "clear"
                    break
                checkpoint = min(run.max_iterations, math.ceil(checkpoint * CHECKPOINT_GROWTH))
                if verdict.clear:
                    # Flat so far: nothing to judge before the shortest verdict.
                    checkpoint = max(checkpoint, shortest)
            m.stride = _stride(costs / n_costs, body_total / m.measured, max_stride)
        for name, probe in probes.items():
            peak = probe.peak()
            if peak is not None:
                m.source_peaks[name] = peak
        m.verdict = m.judge()
        if m.verdict.failed and run.evidence:
            if froze:
                # Evidence must see every object, the containers from before the window too.
                gc.unfreeze()
                froze = False
            failing = {name for name, p in m.verdict.probes.items() if p.failed}
            for name in failing:
                m.evidence.update(probes[name].evidence() or {})
            m.phase = "evidence"
            count = evidence_iterations(m.measured)
            m.evidence.update((yield from collect_evidence(failing, count, iteration)))
    finally:
        if froze:
            gc.unfreeze()
        for probe in probes.values():
            probe.stop()
        m.seconds = clock() - m.started
    return m


_primed = False


def _prime_judgement(spec: BudgetSpec) -> None:
    """Judge a synthetic window once per process before a real one opens. The first judgement
    in a process runs lazy imports (``np.median`` imports ``numpy.ma``: about a thousand
    objects and 1 MiB); inside a window they read as growth of the first budgeted test of
    each process, which under pytest-xdist is a different test on each worker."""
    global _primed
    if _primed or not spec.probes:
        return
    x = np.arange(1.0, 33.0)
    judge(spec, x, {name: x.copy() for name in spec.probes}, {}, longest_tail=16.0)
    _primed = True


def _grown_enough(verdict: Verdict) -> bool:
    """Whether every failing probe has grown so much in the window that running on to
    MIN_VERDICT_ITERATIONS would only cost memory (or descriptors, or threads)."""
    failing = [p for p in verdict.probes.values() if p.failed]
    return bool(failing) and all(
        p.trend.growth >= CONFIRM_ENOUGH_GROWTH.get(PROBES[p.probe].kind, math.inf)
        for p in failing
    )


def _stride(sample_cost: float, iter_cost: float, max_stride: int) -> int:
    if iter_cost <= 0 or not math.isfinite(iter_cost):
        return 1
    return int(min(max_stride, max(1, math.ceil(sample_cost / (SAMPLING_OVERHEAD * iter_cost)))))


def build_result(m: Measurement) -> MembudgetResult:
    """The public result of a measurement, finished or cut short by an error."""
    verdict = m.verdict
    if verdict is None and m.rows > 0:
        verdict = m.judge()
    failures: list[str] = []
    probes: dict[str, ProbeResult] = {}
    peaks = m.peaks()
    for column, name in enumerate(m.probes):
        info = PROBES[name]
        budgets: dict[str, float | None] = {kind: None for kind in ("slope", "peak", "growth")}
        for kind, budget in m.spec.for_probe(name).items():
            budgets[kind] = budget.limit
        judgement = verdict.probes.get(name) if verdict is not None else None
        label = "unjudged"
        slope, ci, growth = math.nan, (math.nan, math.nan), math.nan
        if judgement is not None:
            t = judgement.trend
            slope, ci, growth = t.slope, (t.lower, t.upper), t.growth
            statuses = [o.status for o in judgement.outcomes]
            if FAIL in statuses:
                label = "fail"
            elif AMBIGUOUS in statuses:
                label = "inconclusive" if m.stopped != "running" else "unjudged"
            elif statuses:
                label = "pass"
            failures.extend(
                describe_outcome(o, judgement) for o in judgement.outcomes if o.status == FAIL
            )
        column_values = m.values[: m.rows, column]
        probes[name] = ProbeResult(
            name=name, unit=info.unit, slope=slope, ci=ci,
            peak=peaks[name],
            growth=growth, samples=column_values.copy(),
            sample_iterations=m.x[: m.rows].copy(), verdict=label, budgets=budgets,
        )
    return MembudgetResult(
        iterations=m.measured, warmup=m.warmup_done, stopped=m.stopped, seconds=m.seconds,
        probes=probes, failures=failures, evidence_data=m.evidence,
        complete=m.stopped != "running",
        settings={**asdict(m.spec.run), "iterations": m.spec.run.iterations or "auto"},
    )
