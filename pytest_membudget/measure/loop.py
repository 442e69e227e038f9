"""The measuring loop: warm-up, the measured window, the evidence after a failure.

The loop is a generator that yields once per iteration; the caller runs the workload between
yields. The fixture's ``run`` and ``iterate`` and the repeated test body all drive the same
generator, so they measure the same way. How long it runs and every verdict are judge/'s
decisions (judge.decide); when and how it samples is the probe set's and the stride's; this
module puts them in order and hands the judge the window's facts.

Where the CPU-time probe is sampled, the loop laps its clock at the end of every call
(through the clock that reads the call's end, so that the loop has no more to do where it is
not budgeted) and again when the workload resumes after a sample or a judgement, whose own
CPU time is not the workload's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Generator
from typing import Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.paths import paths_from
from pytest_membudget.evidence.records import GrowthEvidence
from pytest_membudget.evidence.rerun import collect as collect_evidence
from pytest_membudget.evidence.rerun import evidence_iterations
from pytest_membudget.evidence.share import explain
from pytest_membudget.evidence.steps import Deadline
from pytest_membudget.judge.decide import Found, Record, decide, prime
from pytest_membudget.judge.fit import trend
from pytest_membudget.judge.policy import FEWEST_CALLS, RunPolicy
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.judge.verdict import Verdict, native_watch
from pytest_membudget.judge.witness import witnesses
from pytest_membudget.measure import footprint, own
from pytest_membudget.measure.gcpolicy import GarbageCollection
from pytest_membudget.measure.probeset import ProbeSet
from pytest_membudget.measure.results import FootprintRunaway
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.measure.stride import Stride
from pytest_membudget.measure.watch import PeakWatch
from pytest_membudget.probes import Probe
from pytest_membudget.probes.timing import IterCpuTimeProbe
from pytest_membudget.vocabulary import Phase, ProbeKind, Status, StopReason

Sample = Callable[[int, float], None]


def capacity_for(spec: BudgetSpec) -> int:
    """Rows of sample storage a run of ``spec`` may fill."""
    return spec.run.warmup + RunPolicy.for_run(spec.run).most_iterations + 2


def probe_options(spec: BudgetSpec) -> dict[str, Any]:
    """What the probes of a run of ``spec`` are told: the device, whether to record the
    allocator's history, whether a CUDA peak is budgeted (its peaks are then reset and
    read, and the history keeps the trace a peak is replayed from), and which probes have a
    peak or rise budget (a device probe then reads its source's own peak)."""
    footprint = tuple(dict.fromkeys(b.probe for b in spec.budgets if b.kind.footprint))
    return {"device": spec.run.device, "cuda_history": spec.run.cuda_history,
            "cuda_peaks": any(name.startswith("cuda") for name in footprint),
            "footprint": footprint}


def open_measurement(spec: BudgetSpec, names: tuple[str, ...] | list[str],
                     storage: type[Measurement] = Measurement) -> Measurement:
    """Fresh storage and probes for ``names``, with the witnesses of the spec's coarse
    budgets (verdict.witnesses) sampled beside them, unreported, where this system can
    read them."""
    from pytest_membudget.probes import create

    options = {**probe_options(spec), **storage.probe_options(names)}
    probes = {name: create(name, options) for name in names}
    wanted = witnesses(spec)
    hidden = set()
    watch = native_watch(spec)
    for witness in dict.fromkeys([*(w for names in wanted.values() for w in names),
                                  *([watch] if watch else [])]):
        if witness not in probes:
            probe = create(witness, options)
            if not probe.unavailable():
                probes[witness] = probe
                hidden.add(witness)
    m = storage(spec, probes, capacity_for(spec))
    m.hidden = frozenset(hidden)
    m.watch = watch if watch in probes else ""
    return m


def measure(
    spec: BudgetSpec, probes: dict[str, Probe], state: Measurement | None = None,
    policy: RunPolicy | None = None, watch: bool | None = None,
) -> Generator[int, None, Measurement]:
    """Yield the iteration numbers to run; return the finished measurement. ``policy``: how
    long to run, when the spec's settings do not say it all (the sweep's confirmation).
    ``watch``: run the peak watch (measure/watch.py) whatever the budgets (a phase); by
    default where a budget is a peak or a rise."""
    m = state or Measurement(spec, probes, capacity_for(spec))
    policy = policy or RunPolicy.for_run(spec.run)
    probe_set = ProbeSet(probes)
    collection = GarbageCollection(spec.run.gc)
    sample = probe_set.sampler(m, collection.collect)
    rebase = own.Rebaser(probe_set, m, collection.collect)
    # Before the probes start, so that not even a peak (tracemalloc's, the kernel's) sees it.
    _prime_judgement(spec)
    m.started = time.perf_counter()
    peak_watch = footprint.watch_for(spec, watch)
    # What the window leaves alive is counted from its start: here, before tracing begins
    # (a heap budget's tracemalloc would count the census's own tables all run long), where
    # the window is the run; after the warm-up where there is one (_measured).
    if spec.run.evidence and not spec.run.warmup:
        m.start_types = footprint.types_at_start(spec)
    if peak_watch is not None:
        peak_watch.prepare()
    try:
        probe_set.start()
    except BaseException:
        if peak_watch is not None:
            peak_watch.stop()
        raise
    try:
        # After the probes' start (a trim, a reset), before the first sample.
        if peak_watch is not None:
            footprint.start_watch(peak_watch, spec)
        try:
            iteration = yield from _measured(m, probe_set, sample, rebase, policy,
                                             collection, peak_watch)
        except FootprintRunaway:
            # The watch stopped the workload inside a call (the caller has let go of the
            # call's frames): no verdict on a call that did not return, and no rerun of it.
            m.stopped = StopReason.CEILING
        m.source_peaks.update(probe_set.peaks())
        if peak_watch is not None:
            m.watched, peak_watch = peak_watch.stop(), None
        m.verdict = _last_verdict(m, policy)
        if m.stopped is StopReason.CEILING:
            m.peak_evidence = footprint.stopped_evidence(m)
        elif m.verdict.failed and spec.run.evidence:
            yield from _after_failure(m, policy, probe_set, collection, iteration)
    finally:
        if peak_watch is not None:
            m.watched = peak_watch.stop()
        collection.release()
        probe_set.stop()
        m.seconds = time.perf_counter() - m.started
    return m


def _after_failure(m: Measurement, policy: RunPolicy, probe_set: ProbeSet,
                   collection: GarbageCollection, iteration: int) -> Generator[int, None, None]:
    """The evidence of a failing window: what grew (the traced rerun), what the evidence
    found decided on by the judge, then the evidence at the peak."""
    # What the window made and still holds, while the freeze tells it from the rest.
    young = footprint.young(m) if collection.frozen else None
    collection.release()  # evidence must see every object, the old ones too
    types = footprint.kept_types(m, m.start_types, young)
    m.evidence = yield from _evidence(m, probe_set, iteration)
    if m.evidence.get("bounded"):
        m.verdict = _last_verdict(m, policy, _found(m.evidence))
        if m.verdict.held:
            m.evidence["held"] = list(m.verdict.held)
    m.peak_evidence = yield from footprint.peak_evidence(
        m, iteration + m.evidence.get("iterations", 0), probe_set, types)
    if types is not None and m.peak_evidence:
        m.peak_evidence["types"] = types


def _measured(m: Measurement, probe_set: ProbeSet, sample: Sample, rebase: own.Rebaser,
              policy: RunPolicy, collection: GarbageCollection,
              peak_watch: PeakWatch | None) -> Generator[int, None, int]:
    """The warm-up, then the measured window; the iteration after the window's last."""
    spec = m.spec
    cpu = probe_set.cpu_time
    iteration, stride = yield from _warm_up(m, sample, policy, cpu)
    if spec.run.evidence and m.start_types is None:
        # After the warm-up, which runs as it would without the plugin: the census frees
        # large tables, after which glibc keeps in its heap (and the measured call reuses)
        # memory the warm-up would have handed back. Before the window's gc policy freezes
        # the heap (the walk would miss what it froze).
        m.start_types = footprint.types_at_start(spec)
    collection.open_window()
    probe_set.before_window()
    if peak_watch is not None and m.warmup_done:
        # The rise, the peak and the ceiling are the measured window's: a warm-up is not
        # measured, and what it kept is its own figure.
        peak_watch.rebase()
        footprint.arm(peak_watch, spec)
        probe_set.forget_peaks()  # the watch's reading is not the workload's peak
    return (yield from _window(m, sample, rebase, stride, policy, iteration, cpu))


def _warm_up(m: Measurement, sample: Sample, policy: RunPolicy,
             cpu: IterCpuTimeProbe | None) -> Generator[int, None, tuple[int, Stride]]:
    """Run the warm-up, sampled after every iteration but not judged; plan the window's
    stride from its median iteration time. Everything the plugin computes for itself happens
    here, before the window's first sample, so that none of it lands inside the window.
    ``cpu``: the CPU-time probe, lapped around each iteration, where it is sampled."""
    clock = time.perf_counter
    end_clock = clock if cpu is None else cpu.end_iteration
    sample(0, math.nan)
    times = []
    cpu_times = []
    for iteration in range(m.spec.run.warmup):
        if cpu is not None:
            cpu.resume()
        begin = clock()
        yield iteration
        elapsed = end_clock() - begin
        times.append(elapsed)
        if cpu is not None:
            cpu.take()
            cpu_times.append(cpu.value)
        sample(iteration + 1, elapsed)
    m.warmup_done = len(times)
    if cpu is not None:
        # The window's first sample, as iter_time's: the warm-up's median.
        cpu.value = sorted(cpu_times)[len(cpu_times) // 2] if cpu_times else 0.0
    iteration_cost = sorted(times)[len(times) // 2] if times else 0.0
    most = 1 if policy.every_call else Stride.most_for(policy.most_iterations, not policy.auto)
    # A sample of CPU time spans its probe's least stride where the window has room.
    least = PROBES[cpu.name].least_stride if cpu is not None else 1
    m.stride = Stride(iteration_cost, most, least)
    return len(times), m.stride


def _window(m: Measurement, sample: Sample, rebase: own.Rebaser, stride: Stride,
            policy: RunPolicy, iteration: int,
            cpu: IterCpuTimeProbe | None) -> Generator[int, None, int]:
    """The measured window: sample on the stride, judge at each checkpoint, stop when the
    policy says so. ``cpu``: the CPU-time probe, where it is sampled (see the module)."""
    clock = time.perf_counter
    end_clock = clock if cpu is None else cpu.end_iteration
    deadline = m.started + m.spec.run.max_seconds
    m.record = Record.first(policy)
    checkpoint, auto = m.record.checkpoint, policy.auto
    m.window_row, m.phase = m.rows, Phase.WINDOW
    # Every float alive at a later sample is alive at the first one too (the loop's times,
    # the stride's sums, the argument, the window's clock), so that the first iterations do
    # not read as growth of the interpreter's blocks.
    zero = clock() * 0.0
    begin, end, body = clock(), clock(), zero + 0.0
    stride.body_total, stride.costs = zero + 0.0, zero + 0.0
    m.window_began, m.window_seconds = clock(), zero + 0.0
    due_time = m.window_began + checkpoint.by
    reads = policy.read_at
    cost_start = clock()
    sample(iteration, stride.iteration_cost + 0.0)
    stride.calibrate(clock() - cost_start)
    if cpu is not None:
        cpu.resume()
    # The calls since the last sample and their time: locals, the cheapest bookkeeping.
    since = 0
    every, at = stride.every, checkpoint.at
    while True:
        begin = clock()
        yield iteration
        end = end_clock()
        iteration += 1
        since += 1
        body += end - begin
        m.measured += 1
        out_of_time = auto and end > deadline
        due = m.measured >= at or (end >= due_time and m.measured >= FEWEST_CALLS)
        if since >= every or due or out_of_time:
            if cpu is not None:
                cpu.take()
            sample(iteration, body / since)
            stride.sampled(clock() - end, body)
            since, body = 0, 0.0
            # A screen stops at a reading point where its samples have gone quiet.
            if reads and m.measured in reads and m.quiet():
                m.stopped = StopReason.CLEAR
                return iteration
            if cpu is not None:
                cpu.resume()
        if not due and not out_of_time:
            continue
        m.window_seconds = end - m.window_began
        step = _checkpoint(m, policy, stride, out_of_time)
        if isinstance(step, StopReason):
            return iteration
        at, due_time, every = step
        rebase()  # after unpacking: what stays alive until the next sample is alive now
        if cpu is not None:
            cpu.resume()


def _checkpoint(m: Measurement, policy: RunPolicy, stride: Stride,
                out_of_time: bool) -> StopReason | tuple[int, float, int]:
    """The judgement at a checkpoint (judge.decide): why the run stops, or the next
    checkpoint's calls and time and the stride until it, with the storage thinned to hold
    its samples (one per stride, one there, one if time runs out)."""
    assert m.record is not None
    decision = decide(m.spec, policy, m.facts(out_of_time), m.record)
    m.record, step = decision.record, decision.step
    if isinstance(step, StopReason):
        m.stopped = step
        return step
    every = stride.rethink(m.measured)
    while not m.fits(-(-(step.at - m.measured) // every) + 2) and m.thin():
        every = stride.thinned()
    return step.at, m.window_began + step.by, every


def _evidence(m: Measurement, probe_set: ProbeSet,
              iteration: int) -> Generator[int, None, GrowthEvidence]:
    """After a failing window: what the failing probes' sources tell, and a few more
    iterations traced to show what grew."""
    assert m.verdict is not None
    # Growth only: a failing peak or rise gets the evidence at the peak (measure/footprint.py).
    failing = {name for name, p in m.verdict.probes.items()
               if any(o.status is Status.FAIL and not o.budget.kind.footprint
                      for o in p.outcomes)}
    # A slowdown (iter_time, iter_cpu_time) is no allocation: more calls would show nothing.
    if all(PROBES[name].kind is ProbeKind.SECONDS for name in failing):
        return {}
    evidence = probe_set.evidence(failing)
    paths_from(evidence, Deadline(time.perf_counter()))
    m.phase = Phase.EVIDENCE
    slopes = {name: m.verdict.probes[name].trend.slope for name in failing}
    count = evidence_iterations(m.measured, slopes)
    evidence.update((yield from collect_evidence(failing, count, iteration)))
    explained = explain(slopes, evidence.get("traced_per_iter"), _native_slope(m))
    if explained is not None:
        evidence["explained"] = explained
    return evidence


def _last_verdict(m: Measurement, policy: RunPolicy, found: Found | None = None) -> Verdict:
    """The verdict on the window where the run ended (at the ceiling: no budget judged on
    the call it stopped), with what the evidence found."""
    record = m.record or Record.first(policy)
    return decide(m.spec, policy, m.facts(end=m.stopped, found=found), record).verdict


def _found(evidence: GrowthEvidence) -> Found:
    """What the evidence found that bears on the verdict: bounded caches still filling that
    hold the growth, and whether the traced Python allocations explain the failing coarse
    slope (evidence/share.py)."""
    explained = evidence.get("explained")
    return Found(bool(evidence.get("bounded")),
                 explained.get("rest") == "python" if explained else None)


def _native_slope(m: Measurement) -> float | None:
    """The slope over the window of the probe that counts native memory in use (catalog
    ``native_in_use``), where it was sampled (budgeted, or as a witness)."""
    name = next((name for name in m.probes
                 if name in PROBES and PROBES[name].native_in_use), None)
    if name is None:
        return None
    judged = m.verdict.probes.get(name) if m.verdict is not None else None
    if judged is not None:
        return judged.trend.slope
    x, series = m.window()
    return trend(x, series[name], m.spec.run.confidence).slope if len(x) > 1 else None


def _prime_judgement(spec: BudgetSpec) -> None:
    """Decide on a synthetic window once per process before a real one opens (measure/own.py):
    the first decision runs lazy imports (about a thousand objects and 1 MiB)."""
    if spec.probes:
        own.prime_once("judgement", lambda: prime(spec))
