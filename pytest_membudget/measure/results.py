"""Result types returned by the fixture and carried on test reports: data, never text."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, cast

from pytest_membudget.catalog import PROBES
from pytest_membudget.evidence.peakrecords import PeakEvidence
from pytest_membudget.evidence.records import GrowthEvidence
from pytest_membudget.judge.numbers import finite_or_none
from pytest_membudget.vocabulary import BudgetKind, ProbeVerdict, Remedy, Status, StopReason

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    import numpy.typing as npt

    from pytest_membudget.measure.records import (
        NoteRecord,
        OutcomeRecord,
        ProbeRecord,
        ResultRecord,
        RunawayRecord,
        SettingsRecord,
        UnsettledRecord,
    )
    from pytest_membudget.measure.samples import Measurement

#: Version of the result's dict layout (``to_dict``), and so of the JSON report's tests.
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class BudgetOutcome:
    """One budget and how it was judged: ``measured`` is the slope for a slope budget, the
    peak or the growth for the others."""

    probe: str
    kind: BudgetKind
    limit: float
    status: Status
    measured: float

    def record(self) -> OutcomeRecord:
        return {"probe": self.probe, "kind": self.kind.value, "limit": finite_or_none(self.limit),
                "status": self.status.value, "measured": finite_or_none(self.measured)}

    def to_dict(self) -> OutcomeRecord:
        """The outcome as a plain dict, JSON-safe (public: ``pytest_membudget.BudgetOutcome``)."""
        return self.record()


@dataclass(frozen=True)
class Unsettled:
    """A budget that ended ambiguous, and what would settle it: a longer run, a higher cap,
    an exact probe (``probes``: which)."""

    outcome: BudgetOutcome
    remedies: tuple[Remedy, ...]
    probes: tuple[str, ...] = ()

    def to_dict(self) -> UnsettledRecord:
        return {**self.outcome.record(), "remedies": [r.value for r in self.remedies],
                "exact_probes": list(self.probes)}


@dataclass
class ProbeResult:
    """What one probe measured over one run, and how its budgets were judged."""

    name: str
    unit: str
    slope: float
    ci: tuple[float, float]
    peak: float
    growth: float
    samples: npt.NDArray[np.float64]
    sample_iterations: npt.NDArray[np.int64]
    verdict: ProbeVerdict
    budgets: dict[str, float | None] = field(default_factory=dict)
    outcomes: tuple[BudgetOutcome, ...] = ()
    #: The value where the measured window began, after the warm-up; ``peak - start`` is
    #: how far the probe rose above it (the peak is the window's too).
    start: float = math.nan
    #: The value at the run's first sample, before the warm-up: ``start - run_start`` is
    #: what the warm-up kept.
    run_start: float = math.nan
    #: The measured iterations at the checkpoint where the probe's budgets settled while the
    #: run went on for others (judge.decide): its slope and bounds are of that
    #: checkpoint. None where it was judged at the run's end.
    settled_at: int | None = None

    @property
    def rise(self) -> float:
        """How far the probe went above its start: the highest value minus the first."""
        return self.peak - self.start

    def to_dict(self, *, samples: bool = True) -> ProbeRecord:
        data: ProbeRecord = {
            "unit": self.unit,
            "slope": finite_or_none(self.slope),
            "ci": [finite_or_none(self.ci[0]), finite_or_none(self.ci[1])],
            "start": finite_or_none(self.start),
            "run_start": finite_or_none(self.run_start),
            "peak": finite_or_none(self.peak),
            "rise": finite_or_none(self.rise),
            "growth": finite_or_none(self.growth),
            "verdict": self.verdict.value,
            "budgets": dict(self.budgets),
            "outcomes": [o.record() for o in self.outcomes],
        }
        if self.settled_at is not None:
            data["settled_at"] = self.settled_at
        if samples:
            data["samples"] = [float(v) for v in self.samples]
            data["sample_iterations"] = [int(v) for v in self.sample_iterations]
        return data


@dataclass
class MembudgetResult:
    """The outcome of one measured run: every probe's figures and the overall verdict."""

    iterations: int
    warmup: int
    stopped: StopReason
    seconds: float
    probes: dict[str, ProbeResult]
    evidence_data: GrowthEvidence = field(default_factory=lambda: GrowthEvidence())
    complete: bool = True
    #: The run settings in force (after marker, command line and ini were combined).
    settings: SettingsRecord = field(default_factory=lambda: cast("SettingsRecord", {}))
    #: Index in each probe's samples of the measured window's first sample: the samples
    #: before it are the warm-up's.
    window_start: int = 0
    #: What the budgets could not see but the run did (native_note): never a failure.
    notes: list[NoteRecord] = field(default_factory=list)
    #: After a failing peak or rise budget: what was alive at the peak and what kind of
    #: memory it was (evidence/peak.py).
    peak_evidence: PeakEvidence = field(
        default_factory=cast("Callable[[], PeakEvidence]", dict))

    @property
    def failures(self) -> list[BudgetOutcome]:
        """The budgets that were exceeded."""
        return [o for p in self.probes.values() for o in p.outcomes
                if o.status in (Status.FAIL, Status.STOPPED)]

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def unsettled(self) -> list[Unsettled]:
        """The budgets that ended inconclusive (a finished run's ambiguous ones), each with
        what would settle it."""
        if not self.complete:
            return []
        return [remedies_for(o, self) for p in self.probes.values() for o in p.outcomes
                if o.status is Status.AMBIGUOUS]

    def __getitem__(self, probe: str) -> ProbeResult:
        return self.probes[probe]

    def to_dict(self, *, samples: bool = True) -> ResultRecord:
        return {
            "schema": SCHEMA_VERSION,
            "passed": self.passed,
            "complete": self.complete,
            "iterations": self.iterations,
            "warmup": self.warmup,
            "window_start": self.window_start,
            "stopped": self.stopped.value,
            "seconds": round(self.seconds, 6),
            "failures": [o.record() for o in self.failures],
            "inconclusive": [u.to_dict() for u in self.unsettled],
            "evidence": self.evidence_data,
            "peak_evidence": self.peak_evidence,
            "notes": list(self.notes),
            "settings": {**self.settings},
            "probes": {name: p.to_dict(samples=samples) for name, p in self.probes.items()},
        }


class BudgetExceeded(AssertionError):
    """Raised in the test's call phase when a memory budget is exceeded."""

    def __init__(self, message: str, result: MembudgetResult | None = None) -> None:
        super().__init__(message)
        self.result = result


class FootprintRunaway(BudgetExceeded):
    """Raised inside the workload by the peak watch (measure/watch.py) when the RSS rise
    passed its hard ceiling: the test fails before the machine runs out of memory. It is
    raised by class, so it carries what the watch saw in :attr:`pending` (the plugin turns
    it into the failure's text)."""

    #: What the watch saw when it stopped the workload (set just before it raised).
    pending: RunawayRecord = {}  # noqa: RUF012 - one stop at a time, read by the edge

    def __init__(self, message: str = "", result: MembudgetResult | None = None) -> None:
        self.seen = cast("RunawayRecord", dict(FootprintRunaway.pending))
        super().__init__(message or (
            f"membudget: the workload was stopped: its RSS rose {self.seen.get('rise', 0):.0f} "
            f"bytes, past the hard ceiling of {self.seen.get('ceiling', 0):.0f}"), result)


def remedies_for(outcome: BudgetOutcome, result: MembudgetResult) -> Unsettled:
    """What would settle an ambiguous budget: more iterations for a fixed count, a higher cap
    or more time for an auto run (whichever stopped it), and an exact probe beside a coarse
    one."""
    remedies = []
    if outcome.probe in result.evidence_data.get("held", ()):
        remedies.append(Remedy.CACHE_FILLS)
    if result.stopped is StopReason.FIXED:
        remedies.append(Remedy.ITERATIONS)
    elif result.stopped is StopReason.CAP:
        cap = result.settings.get("max_iterations")
        at_cap = isinstance(cap, int) and result.iterations >= cap
        remedies.append(Remedy.MAX_ITERATIONS if at_cap else Remedy.MAX_SECONDS)
    exact = tuple(p for p in PROBES[outcome.probe].exact if p not in result.probes)
    if exact:
        remedies.append(Remedy.EXACT_PROBE)
    return Unsettled(outcome, tuple(remedies), exact)


def probe_verdict(statuses: list[Status], finished: bool) -> ProbeVerdict:
    """A probe's verdict from its budgets' statuses: any failure fails it; an ambiguous
    budget leaves it inconclusive once the run has finished (unjudged before)."""
    if Status.STOPPED in statuses:
        return ProbeVerdict.STOPPED
    if Status.FAIL in statuses:
        return ProbeVerdict.FAIL
    if Status.AMBIGUOUS in statuses:
        return ProbeVerdict.INCONCLUSIVE if finished else ProbeVerdict.UNJUDGED
    return ProbeVerdict.PASS if statuses else ProbeVerdict.UNJUDGED


def build_result(m: Measurement) -> MembudgetResult:
    """The public result of a measurement, finished or cut short by an error."""
    verdict = m.verdict
    if verdict is None and m.rows > 0:
        from pytest_membudget.judge.decide import Record, decide
        from pytest_membudget.judge.policy import RunPolicy

        policy = RunPolicy.for_run(m.spec.run)
        verdict = decide(m.spec, policy, m.facts(end=m.stopped),
                         m.record or Record.first(policy)).verdict
    stopped = m.stopped
    finished = stopped not in (StopReason.RUNNING, StopReason.CEILING)
    probes: dict[str, ProbeResult] = {}
    peaks, starts, run_starts = m.peaks(), m.starts(), m.run_starts()
    for column, name in enumerate(m.probes):
        if name in m.hidden:
            continue
        budgets: dict[str, float | None] = {kind.value: None for kind in BudgetKind}
        for kind, budget in m.spec.for_probe(name).items():
            budgets[kind.value] = budget.limit
        judgement = verdict.probes.get(name) if verdict is not None else None
        settled_at = judgement.settled_at if judgement is not None else None
        if settled_at is not None and settled_at >= m.measured:
            settled_at = None  # settled where the run ended: judged at its end
        slope, ci, growth = math.nan, (math.nan, math.nan), math.nan
        outcomes: tuple[BudgetOutcome, ...] = ()
        if judgement is not None:
            t = judgement.trend
            slope, ci, growth = t.slope, (t.lower, t.upper), t.growth
            outcomes = tuple(BudgetOutcome(name, o.budget.kind, o.budget.limit, o.status,
                                           o.measured) for o in judgement.outcomes)
        probes[name] = ProbeResult(
            name=name, unit=PROBES[name].unit, slope=slope, ci=ci, peak=peaks[name],
            growth=growth, samples=m.values[: m.rows, column].copy(),
            sample_iterations=m.x[: m.rows].copy(),
            verdict=probe_verdict([o.status for o in outcomes], finished),
            budgets=budgets, outcomes=outcomes, start=starts[name],
            run_start=run_starts[name], settled_at=settled_at,
        )
    # Every field of the run settings, key for key (SettingsRecord names them all).
    run = cast("SettingsRecord", asdict(m.spec.run))
    run["gc"] = m.spec.run.gc.value
    run["iterations"] = m.spec.run.iterations or "auto"
    return MembudgetResult(
        iterations=m.measured, warmup=m.warmup_done, stopped=stopped, seconds=m.seconds,
        probes=probes, evidence_data=m.evidence, complete=finished, settings=run,
        window_start=m.window_start, notes=native_note(m) if finished else [],
        peak_evidence=m.peak_evidence,
    )


def native_note(m: Measurement) -> list[NoteRecord]:
    """A note when the budgets are all blind to native memory and the probe watched beside
    them (RSS) grew clearly over the window: the slope, its bounds, what the budgets did
    not see and the budgets that would judge it."""
    if not m.watch:
        return []
    from pytest_membudget.judge.explain import explained_by_failure
    from pytest_membudget.judge.verdict import grows_clearly

    x, series = m.window()
    t = grows_clearly(m.watch, x, series[m.watch], m.spec.run.confidence)
    if t is None or (m.verdict is not None and explained_by_failure(m.verdict, t.slope)):
        return []
    budgeted = sorted({b.probe for b in m.spec.budgets})
    return [{"kind": "native_growth", "probe": m.watch, "slope": finite_or_none(t.slope),
             "ci": [finite_or_none(t.lower), finite_or_none(t.upper)], "budgeted": budgeted,
             "would_judge": [f"{m.watch}=0", "malloc=0"]}]

