"""The footprint side of a run: the peak watch around a run with ``_peak`` or ``_rise``
budgets, and the evidence at the peak when one of them fails (evidence/peak.py says what it
holds)."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.census import Large, class_counts, named, own_objects, young_bytes
from pytest_membudget.evidence.native import first_use as native_first_use
from pytest_membudget.evidence.native import native_at_peak
from pytest_membudget.evidence.native import start_seconds as native_start_seconds
from pytest_membudget.evidence.peak import PeakCensus, peak_report, traced_call
from pytest_membudget.evidence.peakrecords import (
    Composition,
    KeptType,
    KeptTypes,
    NativePeak,
    PeakEvidence,
    TracedCall,
    TracedCost,
    WarmupFigures,
    WatchTimeline,
)
from pytest_membudget.evidence.records import SLIVER
from pytest_membudget.evidence.steps import COST, Deadline
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.measure.probeset import ProbeSet
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.measure.watch import (
    COMPOSITION_SHARE,
    LEAST_COMPOSITION_STEP,
    PeakWatch,
    WatchReport,
)
from pytest_membudget.probes.records import TOP
from pytest_membudget.probes.rss import release_free_memory
from pytest_membudget.vocabulary import MOST_OF, Status, most_of

#: Points kept of a timeline in the evidence (the run's, each phase's), for its plot.
TIMELINE_POINTS = 400
#: Object types listed in the evidence (TOP of them) are those kept at least this many
#: times: a few stray objects are not what a footprint is made of.
FEWEST_KEPT = 32


def footprint_budgets(spec: BudgetSpec) -> bool:
    return any(b.kind.footprint for b in spec.budgets)


def watch_for(spec: BudgetSpec, wanted: bool | None = None) -> PeakWatch | None:
    """A peak watch for a run with footprint budgets, or where ``wanted`` (its ceiling set
    once it has read the start), else None: a run that judges growth only pays nothing for
    it."""
    if not (footprint_budgets(spec) if wanted is None else wanted):
        return None
    return PeakWatch(machine=spec.run.ceiling.machine)


def start_watch(watch: PeakWatch, spec: BudgetSpec) -> None:
    """Begin ``watch`` (prepared already, or here). Its ceiling from the budgets is set now
    for a run without warm-up, else where the measured window begins (:func:`arm`): the
    budgets are the measured call's, and a warm-up is stopped only for the machine's sake."""
    if not watch.prepared:
        watch.prepare()
    watch.begin()
    if not spec.run.warmup:
        arm(watch, spec)


def arm(watch: PeakWatch, spec: BudgetSpec) -> None:
    """Set ``watch``'s ceiling from the spec's budgets and the RSS it starts from now."""
    watch.ceiling = spec.run.ceiling.limit(spec.budgets, watch.start_rss)
    watch.budget = {"multiple": spec.run.ceiling.multiple, "size": spec.run.ceiling.size}


def failing_footprint(m: Measurement) -> list[tuple[str, float]]:
    """(probe, rise) of each probe whose peak or rise budget failed, largest rise first."""
    if m.verdict is None:
        return []
    starts = m.starts()
    found = []
    for name, judgement in m.verdict.probes.items():
        if any(o.status in (Status.FAIL, Status.STOPPED) and o.budget.kind.footprint
               for o in judgement.outcomes):
            found.append((name, judgement.peak - starts.get(name, float("nan"))))
    return sorted(found, key=lambda entry: -entry[1] if entry[1] == entry[1] else 0.0)


@dataclass
class Census:
    """The objects alive by type where the measured window begins (the untracked ones that
    containers hold included), and the bytes of the large data objects among them
    (census.large_object_bytes): the start of what it leaves alive."""

    types: Counter[type]
    large: Large


def types_at_start(spec: BudgetSpec) -> Census | None:
    """The census where a run with footprint budgets begins its window; None for other
    runs. A walk of the heap: tens of milliseconds in a test process."""
    if not footprint_budgets(spec):
        return None
    large = Large()
    types = class_counts(exclude=own_objects(()), large=large)
    return Census(types, large)


def young(m: Measurement) -> int | None:
    """For a failing peak or rise, while the window's freeze holds: the bytes of the
    objects the collector tracks that the window made and still holds (census.young_bytes);
    None for other runs."""
    if m.start_types is None or not failing_footprint(m):
        return None
    return young_bytes(own_objects((m, m.start_types, m.start_types.types)))


def kept_types(m: Measurement, start: Census | None,
               young: int | None = None) -> KeptTypes | None:
    """For a failing peak or rise: the object types alive at the end of the run that were
    not at its start (what it kept: a cache it filled), by count, and the bytes of the large
    data objects it kept (numpy arrays, bytes and strings over 512 B: glibc's memory, which
    an untraced reading counts as native); and the bytes of the objects the run made and
    kept, told from the older ones by identity (``new_bytes``: the big data objects that
    were not there at its start, and the tracked objects it made, ``young``): a result that
    replaced the one before it is kept, though the heap holds no more than before. Counted
    after the window's freeze is lifted, before any rerun. None where no footprint budget
    failed."""
    if start is None or not failing_footprint(m):
        return None
    began = time.perf_counter()
    large = Large()
    now = class_counts(exclude=own_objects((start, start.types, start.large)), large=large)
    now.subtract(start.types)
    rows = cast("list[KeptType]", [{"type": name, "count": count}
                                   for name, count in named(now).most_common()
                                   if count >= FEWEST_KEPT][:TOP])
    return {"rows": rows, "large_bytes": max(large.total - start.large.total, 0),
            "new_bytes": large.new_bytes(start.large) + (young or 0),
            "seconds": round(time.perf_counter() - began, 6)}


def peak_evidence(m: Measurement, iteration: int, probe_set: ProbeSet | None = None,
                  kept: KeptTypes | None = None) -> Generator[int, None, PeakEvidence]:
    """After a failing footprint budget: the measured run's watch (rise by line,
    composition at its peak), and, each where its estimated cost fits what is left of the
    footprint evidence's deadline (evidence/steps.py), one traced rerun of the call for what
    tracemalloc saw alive at the peak (evidence/peak.py) and one under memray for the native
    allocations; what the failing probes' own sources tell of their peak (the CUDA
    allocator's). ``kept``: what the run left alive (kept_types), whose large data objects
    count as Python memory at the call's end (its readings are untraced) and at its peak
    beyond what the Python share holds."""
    deadline = Deadline(time.perf_counter(), "footprint")
    seen = m.watched
    failing = failing_footprint(m)
    if seen is None or not failing:
        return {}
    device = (probe_set.peak_evidence([name for name, _ in failing])
              if probe_set is not None else {})
    probe, rise = failing[0]
    if all(PROBES[name].stack for name, _ in failing):
        # The device's own evidence says it; the host's memory is not what failed.
        return {"probe": probe, "rise": rise, **device, "seconds": deadline.spent()}
    call_seconds = seen.seconds / max(m.measured, 1)
    cost = traced_cost(seen, call_seconds, deadline)
    census = traced_at_peak = None
    # Traced where the call would end before its tracing is cut: a call estimated past
    # that is cut, then runs on to its end untraced, and its reading comes after.
    if deadline.fits(cost["seconds"], "tracing"):
        census, traced_at_peak = yield from _traced_rerun(m, iteration, deadline, rise)
    # The rerun is one call: its traced figure stands beside the run's readings only where
    # the run was one call too (a run of many calls rose over all of them).
    report = peak_report(probe, rise, seen.start, seen.peak, seen.end, seen.rose, census,
                         m.measured <= 1, traced_at_peak=traced_at_peak,
                         retained_large=float(
                             (kept or cast("KeptTypes", {})).get("large_bytes", 0)),
                         threads=seen.threads,
                         kept_new=float((kept or cast("KeptTypes", {})).get("new_bytes", 0)))
    if census is None:
        report["census"] = {**report.get("census", {}), "skipped": cost}
    if "native" in report["composition"].get("major", ()):
        # Native memory is a large share of the peak: one more call under memray (where it
        # is installed) names the native allocations alive at its highest point, where it
        # fits; else the lines where RSS rose stand alone.
        native_cost = native_start_seconds() + COST["memray_slowdown"] * call_seconds
        if deadline.fits(native_cost):
            native = yield from native_at_peak(iteration + (census is not None))
            report["native"] = _seen_by_memray(native, report["composition"])
        else:
            report["native"] = {"skipped": {"seconds": round(native_cost, 3),
                                            "call_seconds": round(call_seconds, 3),
                                            "first_use": native_first_use()}}
    report.update(device)
    report.update(watch_facts(seen))
    report["seconds"] = deadline.spent()
    return report


def traced_cost(seen: WatchReport, call_seconds: float,
                deadline: Deadline) -> TracedCost:
    """What one more call under tracemalloc would cost, as data (the text says why a call
    was not traced): the call, its new interpreter blocks at the peak, and the longest
    stretch it held the interpreter (steps.COST's ``trace_block`` and ``held_slowdown``);
    ``budget``: the seconds of ``deadline``, the footprint evidence's."""
    blocks = seen.peak.blocks - seen.start.blocks
    blocks = max(blocks, 0.0) if math.isfinite(blocks) else 0.0
    held = min(seen.held, call_seconds)
    seconds = (call_seconds + blocks * COST["trace_block"]
               + held * (COST["held_slowdown"] - 1))
    return {"seconds": round(seconds, 3), "call_seconds": round(call_seconds, 3),
            "blocks": int(blocks), "held": round(held, 3),
            "budget": deadline.seconds}


def _traced_rerun(m: Measurement, iteration: int, deadline: Deadline, rise: float
                  ) -> Generator[int, None, tuple[TracedCall, float | None]]:
    """One more call under tracemalloc, watched (without the budgets' ceiling: the
    evidence's own work never counts against it), its tracing cut at the deadline; the
    census, and tracemalloc's bytes at the rerun's highest RSS where that stands for the
    run's peak."""
    seen = m.watched
    assert seen is not None
    # The census copies traces once they hold most of the measured rise: a smaller live set
    # is not the peak's bulk, and each copy costs.
    counter = PeakCensus(least=MOST_OF * max(seen.highest - seen.start.rss, 0.0),
                         deadline=deadline.until("tracing"),
                         copying=deadline.seconds_for("copies"))
    # It starts as the measured window did, glibc's free memory handed back before its
    # first reading: what the run freed and the allocators kept would otherwise serve the
    # rerun without a rise.
    release_free_memory()
    watch = PeakWatch(ticks=[counter.tick], machine=m.spec.run.ceiling.machine)
    watch.start()
    heap = m.probes.get("heap")
    try:
        census = yield from traced_call(iteration, counter,
                                        restart=bool(getattr(heap, "owns_tracer", False)))
    finally:
        rerun = watch.stop()
    # How long the watch's thread went without a reading, against the call: whether C code
    # held the interpreter over the peak (the text says which).
    census["held"], census["call_seconds"] = round(rerun.held, 3), round(rerun.seconds, 3)
    # tracemalloc's bytes at the rerun's highest RSS (it started with the call): the Python
    # share of that moment, not of tracemalloc's own peak, which may come first (objects
    # freed before an array is made: the allocator keeps their memory). Only where the
    # rerun rose as the run did: memory the run freed and the allocators kept is reused by
    # the rerun without a rise, and its highest reading is then early.
    rerun_rise = rerun.highest - rerun.start.rss
    if math.isfinite(rerun.peak.traced) and most_of(rerun_rise, rise):
        return census, traced_near_highest(rerun)
    census["last_rise"] = last_rise(rerun.timeline,
                                    max(LEAST_COMPOSITION_STEP, COMPOSITION_SHARE * rise))
    return census, None


def last_rise(rows: npt.NDArray[np.float64], step: float) -> bool:
    """Whether the most tracemalloc held in a traced watch's timeline (rows of seconds, RSS,
    traced bytes) was the call's last rise: after it, its bytes never rose again by
    ``step`` above their lowest since."""
    traced = rows[:, 2][np.isfinite(rows[:, 2])]
    if not traced.size:
        return False
    after = traced[int(np.argmax(traced)):]
    return bool((after - np.minimum.accumulate(after)).max() < step)


def traced_near_highest(seen: WatchReport) -> float:
    """tracemalloc's most at a traced watch's readings within a composition step of its
    highest RSS: the moment of the highest RSS is known to within that step, and what was
    freed right after it (a pool's workers let go together at a barrier, the allocators
    keeping the pages) is gone from a capture made an instant later."""
    rows = seen.timeline
    step = max(LEAST_COMPOSITION_STEP, COMPOSITION_SHARE * (seen.highest - seen.start.rss))
    near = rows[rows[:, 1] >= seen.highest - step, 2]
    near = near[np.isfinite(near)]
    return max(float(near.max()) if near.size else -math.inf, seen.peak.traced)


def _seen_by_memray(native: NativePeak, found: Composition) -> NativePeak:
    """memray's evidence, or where its call peaked at a sliver of the native heap the
    reading counted, the word that it does not see these allocations: allocations it does
    not intercept (ctypes calls libc's malloc through a pointer it took itself), whose few
    lines would stand for the rest. A peak under a SLIVER of the native heap is as good as
    none."""
    held = float(found["kinds"].get("native", 0.0))
    if "peak" in native and float(native["peak"] or 0.0) < SLIVER * held:
        return {"unseen": round(held), "peak": native["peak"]}
    return native


def stopped_evidence(m: Measurement) -> PeakEvidence:
    """The evidence at the peak of a run stopped at the ceiling: the watch's alone (the call
    did not return; run again, it would run away again). What was left once the stopped
    call's frames were let go is what it had put elsewhere: its state."""
    seen, failing = m.watched, failing_footprint(m)
    if seen is None or not failing:
        return {}
    probe, rise = failing[0]
    report = peak_report(probe, rise, seen.start, seen.peak, seen.end, seen.rose, None,
                         threads=seen.threads)
    report["census"] = {"skipped": {"stopped": True}}
    report["stopped"] = True
    report.update(watch_facts(seen))
    report["seconds"] = 0.0
    return report


def watch_facts(seen: WatchReport) -> PeakEvidence:
    """What the evidence carries of the watch itself: the timeline, when the peak came (in
    seconds into the measured window: the timeline's clock starts with the run) and, where
    a warm-up ran, its figures."""
    facts: PeakEvidence = {"timeline": timeline(seen),
                           "peak_at": round(seen.peak_at - seen.window_at, 6)}
    if seen.warmup:
        facts["warmup"] = cast("WarmupFigures", {
            **{key: round(value) for key, value in seen.warmup.items()},
            "window_at": round(seen.window_at, 6)})
    return facts



def timeline(seen: WatchReport, points: int = TIMELINE_POINTS) -> WatchTimeline:
    """The watch's timeline (seconds, RSS, traced bytes) thinned to about ``points`` points,
    each the highest RSS of its stretch and the most traced bytes in it (a plot must not lose
    either peak)."""
    rows = seen.timeline
    if not len(rows):
        return {"seconds": [], "rss": [], "traced": []}
    step = max(1, -(-len(rows) // points))
    starts = range(0, len(rows), step)
    kept = rows[[int(start + np.argmax(rows[start:start + step, 1])) for start in starts]]
    return {"seconds": [round(float(v), 6) for v in kept[:, 0]],
            "rss": [float(v) for v in kept[:, 1]],
            "traced": [float(rows[start:start + step, 2].max()) for start in starts]}
