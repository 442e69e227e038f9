"""The footprint side of a run: the peak watch around a run with ``_peak`` or ``_rise``
budgets, and the evidence at the peak when one of them fails (evidence/peak.py says what it
holds)."""

from __future__ import annotations

import linecache
import math
import time
from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.census import type_counts
from pytest_membudget.evidence.native import native_at_peak
from pytest_membudget.evidence.peak import (
    TRACED_SECONDS,
    PeakCensus,
    census_wanted,
    peak_report,
    traced_call,
)
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.measure.probeset import ProbeSet
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.measure.watch import PeakWatch, WatchReport
from pytest_membudget.vocabulary import Status

#: Points of the timeline kept in the evidence (for the plot).
TIMELINE_POINTS = 400
#: Longest call made again under tracemalloc for the evidence (seconds): tracing makes it
#: slower still, and the evidence aims at about a second (a torch CPU step of 0.9-1.0 s cost
#: 1.04-1.09 s of evidence run again). Without it, objects over 512 bytes that the call
#: freed before it returned count in the native heap.
RERUN_SECONDS = 0.7
#: Longest call run once more under memray for the native allocations at a peak: native
#: tracing slows it several times, and the evidence aims at a second.
NATIVE_CALL_SECONDS = 0.25
#: The rerun's own highest reading stands for the run's where it rose at least this share of
#: the run's rise.
RERUN_RISE = 0.5
#: The census copies tracemalloc's traces once the traced bytes reach this share of the
#: measured rise: smaller live sets cannot be the peak's bulk, and each copy costs.
CENSUS_FROM = 0.5
#: Object types listed in the evidence, those kept at least this many times, and not this
#: package's own.
TYPES = 8
FEWEST_KEPT = 32
OWN_TYPES = "pytest_membudget."


def footprint_budgets(spec: BudgetSpec) -> bool:
    return any(b.kind.footprint for b in spec.budgets)


def watch_for(spec: BudgetSpec, wanted: bool | None = None) -> PeakWatch | None:
    """A peak watch for a run with footprint budgets, or where ``wanted`` (its ceiling set
    once it has read the start), else None: a run that judges growth only pays nothing for
    it."""
    if not (footprint_budgets(spec) if wanted is None else wanted):
        return None
    return PeakWatch()


def start_watch(watch: PeakWatch, spec: BudgetSpec) -> None:
    """Begin ``watch`` (prepared already, or here) and set its ceiling from the spec's
    budgets and the RSS it started at."""
    if not watch.prepared:
        watch.prepare()
    watch.begin()
    watch.ceiling = spec.run.ceiling.limit(spec.budgets, watch.start_rss)
    watch.budget = {"multiple": spec.run.ceiling.multiple, "size": spec.run.ceiling.size}


def failing_footprint(m: Measurement) -> list[tuple[str, float]]:
    """(probe, rise) of each probe whose peak or rise budget failed, largest rise first."""
    if m.verdict is None:
        return []
    starts = m.starts()
    found = []
    for name, judgement in m.verdict.probes.items():
        if any(o.status is Status.FAIL and o.budget.kind.footprint for o in judgement.outcomes):
            found.append((name, judgement.peak - starts.get(name, float("nan"))))
    return sorted(found, key=lambda entry: -entry[1] if entry[1] == entry[1] else 0.0)


@dataclass
class Census:
    """The objects alive by type before a run with footprint budgets (the untracked ones
    that containers hold included), and the bytes of the large data objects among them
    (census.large_object_bytes): the start of what it leaves alive."""

    types: Counter[str]
    large: int


def types_at_start(spec: BudgetSpec) -> Census | None:
    """The census before a run with footprint budgets; None for other runs. A walk of the
    heap: tens of milliseconds in a test process."""
    if not footprint_budgets(spec):
        return None
    large: list[int] = []
    types = type_counts(exclude=_line_cache(), large=large)
    return Census(types, large[0])


def _line_cache() -> list[object]:
    """linecache's cache and what it holds, left out of both counts: the source lines this
    plugin reads to show a line (the peak watch, as the run ends) are no object the run kept
    (a shape's file of 300 lines read as "str: +303" in every failure)."""
    held: list[object] = [linecache.cache]
    for entry in list(linecache.cache.values()):
        held.append(entry)
        held.extend(part for part in entry if isinstance(part, list))
    return held


def kept_types(m: Measurement, start: Census | None) -> dict[str, Any] | None:
    """For a failing peak or rise: the object types alive at the end of the run that were
    not at its start (what it kept: a cache it filled), by count, and the bytes of the large
    data objects it kept (numpy arrays, bytes and strings over 512 B: glibc's memory, which
    an untraced reading counts as native). Counted after the window's freeze is lifted,
    before any rerun. None where no footprint budget failed."""
    if start is None or not failing_footprint(m):
        return None
    began = time.perf_counter()
    large: list[int] = []
    grown = type_counts(exclude=(start, start.types, *_line_cache()), large=large)
    grown.subtract(start.types)
    # The plugin's own records (the watch's readings, the verdict) and a few stray objects
    # are not what a footprint is made of.
    rows = [{"type": name, "count": count} for name, count in grown.most_common()
            if count >= FEWEST_KEPT and not name.startswith(OWN_TYPES)][:TYPES]
    return {"rows": rows, "large_bytes": max(large[0] - start.large, 0),
            "seconds": round(time.perf_counter() - began, 6)}


def peak_evidence(m: Measurement, iteration: int, probe_set: ProbeSet | None = None,
                  kept: dict[str, Any] | None = None) -> Generator[int, None, dict[str, Any]]:
    """After a failing footprint budget: the measured run's watch (rise by line,
    composition at its peak), and, where it is affordable, one traced rerun of the call for
    what tracemalloc saw alive at the peak (evidence/peak.py); what the failing probes' own
    sources tell of their peak (the CUDA allocator's). ``kept``: what the run left alive
    (kept_types), whose large data objects count as Python memory at the call's end (its
    readings are untraced) and at its peak beyond what the Python share holds."""
    began = time.perf_counter()
    seen = m.watched
    failing = failing_footprint(m)
    if seen is None or not failing:
        return {}
    device = (probe_set.peak_evidence([name for name, _ in failing])
              if probe_set is not None else {})
    probe, rise = failing[0]
    if all(PROBES[name].stack for name, _ in failing):
        # The device's own evidence says it; the host's memory is not what failed.
        return {"probe": probe, "rise": rise, **device,
                "seconds": round(time.perf_counter() - began, 6)}
    calls = max(m.measured + m.warmup_done, 1)
    call_seconds = seen.seconds / calls
    skipped = skip_reason(seen, call_seconds)
    census = traced_at_peak = None
    if skipped is None:
        counter = PeakCensus(least=CENSUS_FROM * max(seen.highest - seen.start.rss, 0.0),
                             deadline=time.perf_counter() + TRACED_SECONDS)
        watch = PeakWatch(ticks=[counter.tick])
        start_watch(watch, m.spec)
        heap = m.probes.get("heap")
        try:
            census = yield from traced_call(iteration, counter,
                                            restart=bool(getattr(heap, "owns_tracer", False)))
        finally:
            rerun = watch.stop()
        # tracemalloc's bytes at the rerun's highest RSS (it started with the call): the
        # Python share of that moment, not of tracemalloc's own peak, which may come first
        # (objects freed before an array is made: the allocator keeps their memory).
        # Only where the rerun rose as the run did: memory the run freed and the allocators
        # kept is reused by the rerun without a rise, and its highest reading is then early.
        rerun_rise = rerun.highest - rerun.start.rss
        if math.isfinite(rerun.peak.traced) and rerun_rise >= RERUN_RISE * rise:
            traced_at_peak = rerun.peak.traced
    # The rerun is one call: its traced figure stands beside the run's readings only where
    # the run was one call too (a run of many calls rose over all of them).
    one_call = calls == 1
    report = peak_report(probe, rise, seen.start, seen.peak, seen.end, seen.rose, census,
                         one_call, traced_at_peak=traced_at_peak,
                         retained_large=float((kept or {}).get("large_bytes", 0)),
                         threads=seen.threads)
    if skipped is not None:
        report["census"] = {**report.get("census", {}), "skipped": skipped}
    if "native" in report["composition"].get("major", ()):
        # Native memory is a large share of the peak: one more call under memray (where it
        # is installed) names the native allocations alive at its highest point. memray's
        # native tracing slows a call several times (a torch CPU step's evidence took 3.5 s
        # with it), so only a short call is run again; the lines where RSS rose stand alone.
        if call_seconds <= NATIVE_CALL_SECONDS:
            native = yield from native_at_peak(iteration + (census is not None))
            held = float(report["composition"]["kinds"].get("native", 0.0))
            if "peak" in native and float(native["peak"] or 0.0) < UNSEEN_SHARE * held:
                # memray saw a sliver of the native heap the reading counted: allocations
                # it does not intercept (ctypes calls libc's malloc through a pointer it
                # took itself). Its few lines would stand for the rest; none are shown.
                native = {"unseen": round(held), "peak": native["peak"]}
            report["native"] = native
        else:
            report["native"] = {"skipped": {"call_seconds": round(call_seconds, 3)}}
    report.update(device)
    report["timeline"] = timeline(seen)
    report["peak_at"] = round(seen.peak_at, 6)
    report["seconds"] = round(time.perf_counter() - began, 6)
    return report


#: The share of the reading's native heap under which memray's own peak over its call is
#: read as memray not seeing these allocations (bench/footprint's ctypes shapes: 8 KiB of
#: 145 MiB).
UNSEEN_SHARE = 0.1


def skip_reason(seen: WatchReport, call_seconds: float) -> dict[str, Any] | None:
    """Why one more call under tracemalloc is not made, as data; None to make it. It costs
    the call's time and more, and the evidence aims at a second: a call longer than
    RERUN_SECONDS, or a peak of more new interpreter blocks than tracing could follow in that
    time (a million small dicts), is not run again; the watch's lines stand alone."""
    if call_seconds > RERUN_SECONDS:
        return {"call_seconds": round(call_seconds, 3)}
    if not census_wanted(seen.start, seen.peak):
        return {"blocks": int(seen.peak.blocks - seen.start.blocks)}
    return None


def timeline(seen: WatchReport, points: int = TIMELINE_POINTS) -> dict[str, list[float]]:
    """The watch's timeline (seconds, RSS, traced bytes) thinned to about ``points`` points,
    each the highest RSS of its stretch (a plot must not lose the peak)."""
    rows = seen.timeline
    if not len(rows):
        return {"seconds": [], "rss": [], "traced": []}
    step = max(1, -(-len(rows) // points))
    picked = [int(start + np.argmax(rows[start:start + step, 1]))
              for start in range(0, len(rows), step)]
    kept = rows[picked]
    return {"seconds": [round(float(v), 6) for v in kept[:, 0]],
            "rss": [float(v) for v in kept[:, 1]],
            "traced": [float(v) for v in kept[:, 2]]}
