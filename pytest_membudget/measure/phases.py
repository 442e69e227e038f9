"""Phases: ``with membudget.phase("solve", rss_rise="2 GiB"):`` measures one stretch of a test
with the same loop as every run (measure/loop.py): no warm-up, one "call" that is the body of
the ``with``, the peak watch always on. What a phase reports: its peak rise, what it left at
its end, the composition at its peak, the lines that ran while RSS rose; its budgets are
judged like a run's, and the test fails at its end if one was exceeded (all phases shown)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, cast

from pytest_membudget.catalog import PHASE_PROBE
from pytest_membudget.evidence.composition import composition
from pytest_membudget.evidence.records import FEW
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.judge.spec import BudgetSpec, build_spec
from pytest_membudget.measure.results import FootprintRunaway, MembudgetResult, build_result
from pytest_membudget.vocabulary import ProbeVerdict, StopReason

if TYPE_CHECKING:  # numpy stays out of the plugin's import
    from collections.abc import Callable

    from pytest_membudget.evidence.peakrecords import Composition, WatchedLine, WatchTimeline
    from pytest_membudget.measure.records import (
        OutcomeRecord,
        PhaseBudget,
        PhaseFigures,
        PhaseRecord,
    )
    from pytest_membudget.measure.samples import Measurement



def phase_spec(test_spec: BudgetSpec, budgets: Mapping[str, object], where: str) -> BudgetSpec:
    """The spec of one phase: its own budgets only (the marker's are the test's run's), the
    test's run settings, one call without warm-up and without a rerun for evidence (a stretch
    of a test cannot be run again: the watch is its evidence)."""
    spec = build_spec(test_spec.run, (), dict(budgets), where)
    return BudgetSpec(spec.budgets, replace(spec.run, iterations=1, warmup=0, evidence=False))


@dataclass
class PhaseRow:
    """One phase of a test, every time it was entered."""

    name: str
    calls: int = 0
    rise: float = -math.inf
    left: float = math.nan
    verdict: ProbeVerdict = ProbeVerdict.PASS
    budgets: list[PhaseBudget] = field(default_factory=list)
    failures: list[OutcomeRecord] = field(default_factory=list)
    probes: dict[str, PhaseFigures] = field(default_factory=dict)
    #: Empty until the phase's watch read one (as the timeline).
    composition: Composition = field(default_factory=cast("Callable[[], Composition]", dict))
    rose: list[WatchedLine] = field(default_factory=list)
    #: The lines that started threads during the phase's highest entry, most first.
    threads: list[WatchedLine] = field(default_factory=list)
    #: The highest entry's RSS over time (the watch's), and when it began, in seconds
    #: since the test's first phase began.
    timeline: WatchTimeline = field(default_factory=cast("Callable[[], WatchTimeline]", dict))
    began: float = 0.0

    @property
    def failed(self) -> bool:
        return self.verdict in (ProbeVerdict.FAIL, ProbeVerdict.STOPPED)

    def add(self, result: MembudgetResult, m: Measurement, spec: BudgetSpec,
            began: float = 0.0) -> None:
        """Take in one entry of the phase (``began``: seconds since the test's first phase
        began): the highest rise of all, the latest of the rest."""
        from pytest_membudget.measure.footprint import timeline

        self.calls += 1
        rss = result.probes.get(PHASE_PROBE)
        if rss is not None and rss.rise > self.rise:
            self.rise = rss.rise
            seen = m.watched
            if seen is not None:
                self.composition = composition(seen.start, seen.peak, measured=rss.rise)
                self.rose = seen.rose[:FEW]
                self.threads = seen.threads[:FEW]
                self.timeline = timeline(seen)
                self.began = round(began, 6)
        stopped = result.stopped is StopReason.CEILING
        if rss is not None and len(rss.samples) and not stopped:
            # A stopped phase has no end of its own: what it left is not known.
            self.left = float(rss.samples[-1] - rss.start)
        self.budgets = [{"key": b.key, "probe": b.probe, "kind": b.kind.value,
                         "limit": finite_or_none(b.limit)} for b in spec.budgets]
        self.probes = {name: {"start": finite_or_none(p.start), "peak": finite_or_none(p.peak),
                              "rise": finite_or_none(p.rise)}
                       for name, p in result.probes.items()}
        if stopped:
            self.verdict = ProbeVerdict.STOPPED
        elif result.failures and self.verdict is not ProbeVerdict.STOPPED:
            self.verdict = ProbeVerdict.FAIL
        self.failures += [o.record() for o in result.failures]

    def to_dict(self) -> PhaseRecord:
        return {"name": self.name, "calls": self.calls, "rise": finite_or_none(self.rise),
                "left": finite_or_none(self.left), "verdict": self.verdict.value,
                "budgets": list(self.budgets), "failures": list(self.failures),
                "probes": dict(self.probes), "composition": self.composition,
                "rose": list(self.rose), "threads": list(self.threads),
                "timeline": cast("WatchTimeline", dict(self.timeline)),
                "began": self.began}


@dataclass
class Phases:
    """The phases of one test, in the order they were first entered."""

    rows: dict[str, PhaseRow] = field(default_factory=dict)
    open: list[str] = field(default_factory=list)
    #: When the test's first phase began (time.perf_counter), the clock of the timelines.
    origin: float | None = None

    def since_first(self) -> float:
        """Seconds since the test's first phase began (now the first, if none had)."""
        import time

        now = time.perf_counter()
        if self.origin is None:
            self.origin = now
        return now - self.origin

    @property
    def failed(self) -> list[PhaseRow]:
        return [row for row in self.rows.values() if row.failed]

    def to_list(self) -> list[PhaseRecord]:
        return [row.to_dict() for row in self.rows.values()]


def run_phase(name: str, spec: BudgetSpec, phases: Phases) -> Generator[None, None, None]:
    """The generator behind one ``with`` block: opens the measurement and runs the loop to
    its one call (the block), then, when the block has run, to its end; records the row.
    The caller turns it into a context manager."""
    from pytest_membudget.measure.loop import measure, open_measurement

    names = tuple(dict.fromkeys([PHASE_PROBE, *spec.probes]))
    began = phases.since_first()
    m = open_measurement(spec, names)
    loop = measure(spec, m.probes, m, watch=True)
    phases.open.append(name)
    try:
        next(loop)
        try:
            yield
        except FootprintRunaway as stop:
            # Stopped at the ceiling inside the phase: the row says so, with what the watch
            # saw; the test fails with the stop.
            with contextlib.suppress(StopIteration):
                loop.throw(stop)
            phases.rows.setdefault(name, PhaseRow(name)).add(build_result(m), m, spec, began)
            raise
        except BaseException:
            loop.close()
            raise
        for _ in loop:  # a fixed run of one call ends at the first resume
            raise RuntimeError(f"the phase {name!r} asked for a second call")
    finally:
        phases.open.remove(name)
    row = phases.rows.setdefault(name, PhaseRow(name))
    row.add(build_result(m), m, spec, began)
