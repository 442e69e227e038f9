"""A budgeted test's result as typed records: what measure/results.py's ``to_dict`` makes, the
test reports carry (from every xdist worker), the JSON report keeps under ``tests`` and every
view reads (the session's table, the JUnit properties, the plots, the exporters, the merge),
key for key. Each is a TypedDict: a plain dict at run time, so the JSON is the records
themselves. A key that is not always there sits in a ``total=False`` part."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from pytest_membudget.evidence.peakrecords import (
    Composition,
    PeakEvidence,
    WatchedLine,
    WatchTimeline,
)
from pytest_membudget.evidence.records import GrowthEvidence


class OutcomeRecord(TypedDict):
    """One budget and how it was judged (results.BudgetOutcome): ``kind`` and ``status`` are
    vocabulary.BudgetKind's and Status's values; a limit or figure that is not finite is
    None."""

    probe: str
    kind: str
    limit: float | None
    status: str
    measured: float | None


class UnsettledRecord(OutcomeRecord):
    """A budget that ended inconclusive, with what would settle it (vocabulary.Remedy's
    values) and the exact probes to put beside it."""

    remedies: list[str]
    exact_probes: list[str]


class _ProbeRecord(TypedDict):
    unit: str
    slope: float | None
    #: The slope's one-sided bounds, [lower, upper].
    ci: list[float | None]
    start: float | None
    run_start: float | None
    peak: float | None
    rise: float | None
    growth: float | None
    verdict: str
    #: Each budget kind's limit (vocabulary.BudgetKind's values), None where not budgeted.
    budgets: dict[str, float | None]
    outcomes: list[OutcomeRecord]


class ProbeRecord(_ProbeRecord, total=False):
    """What one probe measured (results.ProbeResult): ``settled_at`` where its budgets
    settled before the run's end; the samples unless they were left out."""

    settled_at: int
    samples: list[float]
    sample_iterations: list[int]


class CeilingRecord(TypedDict):
    """judge.spec.Ceiling: where a footprint run is stopped."""

    multiple: float | None
    size: float | None
    machine: bool


class SettingsRecord(TypedDict, total=False):
    """The run settings in force (judge.spec.RunSettings), ``iterations`` "auto" for an auto
    run and ``gc`` the policy's value; none for a test that measured phases only."""

    iterations: int | str
    warmup: int
    min_iterations: int
    max_iterations: int | None
    max_seconds: float
    gc: str
    evidence: bool
    confidence: float
    device: str | None
    cuda_history: bool
    strict: bool
    ceiling: CeilingRecord


class NoteRecord(TypedDict):
    """Growth the budgets could not see (``kind`` "native_growth"): the watched probe's
    slope and bounds, the probes budgeted, and the budgets that would judge it."""

    kind: str
    probe: str
    slope: float | None
    ci: list[float | None]
    budgeted: list[str]
    would_judge: list[str]


class PhaseBudget(TypedDict):
    """A phase's budget: its marker key, its probe, its kind (vocabulary.BudgetKind's value)
    and its limit (None where not finite)."""

    key: str
    probe: str
    kind: str
    limit: float | None


class PhaseFigures(TypedDict):
    """What one probe read over a phase's latest entry (None where not finite)."""

    start: float | None
    peak: float | None
    rise: float | None


class PhaseRecord(TypedDict):
    """One phase of a test (measure/phases.py's PhaseRow): its calls, its highest rise and
    what its latest entry left (None where not finite), its verdict (vocabulary.ProbeVerdict's
    value), its budgets and their failures, each probe's figures; of its highest entry, the
    composition at the peak, the lines that ran while RSS rose and those that started
    threads, the watch's timeline and when it began (seconds since the test's first phase
    began). The composition and the timeline are empty where no watch read the phase."""

    name: str
    calls: int
    rise: float | None
    left: float | None
    verdict: str
    budgets: list[PhaseBudget]
    failures: list[OutcomeRecord]
    probes: dict[str, PhaseFigures]
    composition: Composition
    rose: list[WatchedLine]
    threads: list[WatchedLine]
    timeline: WatchTimeline
    began: float


class StoppedAt(TypedDict, total=False):
    """The innermost line of the user's own code a stopped workload was running (empty where
    none was on its stack)."""

    file: str
    line: int
    function: str
    code: str


class RunawayRecord(TypedDict, total=False):
    """What the peak watch (measure/watch.py) saw when it stopped the workload: the rise
    above the start, the ceiling, the RSS at the start and at the stop, the seconds into the
    run, the lines that ran while RSS rose; the ceiling's ``multiple`` or ``size`` (the
    budget that set it); ``by``: "ceiling", or "machine" where the machine (or its cgroup,
    ``room_where``) had only ``room`` of ``room_total`` left, under the ``reserve``, with the
    run's RSS ``run_rise`` above its start; and where the workload was stopped."""

    rise: float
    ceiling: float
    rss_start: float
    rss: float
    seconds: float
    rose: list[WatchedLine]
    multiple: float | None
    size: float | None
    by: str
    room: float
    room_total: float
    room_where: str
    reserve: float
    run_rise: float
    stopped_at: StoppedAt


class _ResultRecord(TypedDict):
    schema: int
    passed: bool
    complete: bool
    iterations: int
    warmup: int
    window_start: int
    stopped: str
    seconds: float
    failures: list[OutcomeRecord]
    inconclusive: list[UnsettledRecord]
    evidence: GrowthEvidence
    peak_evidence: PeakEvidence
    notes: list[NoteRecord]
    settings: SettingsRecord
    probes: dict[str, ProbeRecord]


class ResultRecord(_ResultRecord, total=False):
    """One budgeted test (results.MembudgetResult): its phases where it measured some, what
    the peak watch saw where it stopped the workload, and, in the JSON report, the test's
    outcome (pytest's: "passed", "failed", "skipped")."""

    phases: Sequence[PhaseRecord]
    runaway: RunawayRecord
    outcome: str | None
