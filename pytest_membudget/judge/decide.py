"""The one place a run's verdict is decided: :func:`decide` takes a window's facts (its
samples, what they cost, what the evidence found) and the judge's own record of the run so
far, and returns the verdict and what the run does next. measure/ hands the facts over and
does what it is told; nothing outside judge/ turns a judgement into another.

In order: each budget is judged on the window (judge.verdict); a coarse probe's pass waits
for its exact witnesses, or stands sooner when they are flat (judge.witness); a probe whose
budgets passed where it would have stood alone keeps that judgement while the run goes on
for others (``settled``); a failure the evidence found held by bounded caches still filling
turns inconclusive (judge.explain); a run the watch stopped inside a call has its footprint
budgets stopped and no other budget judged. The policy (judge.policy) then reads the verdict
and says where the run is judged next, or why it stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pytest_membudget.judge.explain import held_by_caches
from pytest_membudget.judge.fill import growing
from pytest_membudget.judge.fit import FloatArray
from pytest_membudget.judge.policy import Checkpoint, RunPolicy, reading_of
from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.judge.verdict import (
    PASS,
    ProbeJudgement,
    Verdict,
    all_clean,
    judge,
    stopped,
)
from pytest_membudget.judge.witness import hold_back, witnesses
from pytest_membudget.vocabulary import BudgetKind, StopReason


@dataclass(frozen=True)
class Found:
    """What the evidence found that bears on the verdict: whether every retaining path of
    the growth runs through a bounded cache still filling, and whether the traced Python
    allocations explain the failing coarse slope (None: nothing was traced against it)."""

    caches_filling: bool = False
    python_explains: bool | None = None


@dataclass(frozen=True)
class Window:
    """A window's facts, as measure/ hands them over: the iteration of each sample, every
    probe's samples (the witnesses and the watched probe too: ``hidden``, never judged), each
    probe's highest value and its value where the window began, the measured calls and their
    seconds. ``end``: None while the run goes on; otherwise why it ended, and the verdict is
    its last (a stop at the ceiling inside a call judges no budget on that call)."""

    x: FloatArray
    series: Mapping[str, FloatArray]
    peaks: Mapping[str, float]
    starts: Mapping[str, float]
    measured: int
    seconds: float
    hidden: frozenset[str] = frozenset()
    out_of_time: bool = False
    end: StopReason | None = None
    found: Found | None = None


@dataclass(frozen=True)
class Record:
    """The judge's record of one run between checkpoints: where it is judged next, and the
    probes whose budgets settled (each judgement carries the calls where it did)."""

    checkpoint: Checkpoint
    #: Probe -> its judgement where its budgets all passed and it would have stood alone,
    #: and whether it was clean there (a coarse probe vouched for by its witnesses).
    settled: Mapping[str, tuple[ProbeJudgement, bool]] = field(default_factory=dict)

    @classmethod
    def first(cls, policy: RunPolicy) -> Record:
        return cls(policy.first())


@dataclass(frozen=True)
class Decision:
    """The verdict on a window, and what the run does next: a checkpoint, or why it stops
    (why it ended, once it has); ``record`` goes with the next window."""

    verdict: Verdict
    step: Checkpoint | StopReason
    record: Record


def decide(spec: BudgetSpec, policy: RunPolicy, window: Window, record: Record) -> Decision:
    """The verdict on ``window`` and the run's next step. Pure."""
    verdict = _verdict(spec, policy, window, record)
    if window.end is not None:
        return Decision(verdict, window.end, record)
    settled = dict(record.settled)
    if policy.auto:
        for name, clean in _passing(verdict).items():
            if name not in settled and policy.settles(window.measured, window.seconds, clean):
                judgement = replace(verdict.probes[name], settled_at=window.measured)
                settled[name] = (judgement, clean)
    step = policy.after(record.checkpoint, window.measured, window.out_of_time,
                        reading_of(verdict), window.seconds, growing(verdict))
    checkpoint = step if isinstance(step, Checkpoint) else record.checkpoint
    return Decision(verdict, step, Record(checkpoint, settled))


def longest_tail(spec: BudgetSpec, policy: RunPolicy, measured: int, seconds: float) -> float:
    """The judged tail of the run length the pass rule assumes."""
    total = policy.reference(measured, seconds, spec.run.max_seconds)
    return max(total - total // 2, 1)


def _verdict(spec: BudgetSpec, policy: RunPolicy, window: Window, record: Record) -> Verdict:
    shown = {name: y for name, y in window.series.items() if name not in window.hidden}
    longest = longest_tail(spec, policy, window.measured, window.seconds)
    verdict = judge(spec, window.x, shown, dict(window.peaks), longest_tail=longest,
                    starts=dict(window.starts))
    witnessed = {coarse: present for coarse, names in witnesses(spec).items()
                 if coarse in window.series
                 and (present := tuple(w for w in names if w in window.series))}
    if witnessed:
        verdict = hold_back(verdict, window.x, dict(window.series), witnessed,
                            spec.run.confidence, longest)
    verdict = _keep_settled(verdict, record.settled)
    if window.end is StopReason.CEILING:
        return stopped(verdict)
    if window.found is not None and window.found.caches_filling:
        verdict = held_by_caches(verdict, window.found.python_explains)
    return verdict


def _passing(verdict: Verdict) -> dict[str, bool]:
    """The probes with a slope budget whose every budget passes in ``verdict``, each with
    whether it is clean on its own: the probes that may settle here if the run's policy
    would let them stand alone."""
    return {
        name: all_clean({name: p}, set(verdict.vouched))
        for name, p in verdict.probes.items()
        if p.outcomes and all(o.status is PASS for o in p.outcomes)
        and any(o.budget.kind is BudgetKind.SLOPE for o in p.outcomes)
    }


def _keep_settled(verdict: Verdict,
                  settled: Mapping[str, tuple[ProbeJudgement, bool]]) -> Verdict:
    """A probe whose budgets all passed at a checkpoint where it would have stood alone keeps
    that judgement while the run goes on for other budgets, unless one of its budgets fails
    now: a late page must not reopen an RSS pass that a run without the other budgets would
    have stopped on. A failure still counts."""
    if not settled:
        return verdict
    merged = dict(verdict.probes)
    vouched = set(verdict.vouched)
    for name, (judgement, clean) in settled.items():
        now = merged.get(name)
        if now is None or now.failed:
            continue
        merged[name] = judgement
        if clean:
            vouched.add(name)
    return Verdict(merged, clean=all_clean(merged, vouched), vouched=frozenset(vouched))


def prime(spec: BudgetSpec) -> None:
    """Decide on a synthetic window once: the first decision in a process runs lazy imports
    (``np.median`` imports ``numpy.ma``), which must not land inside a real window."""
    import numpy as np

    x = np.arange(1.0, 33.0)
    policy = RunPolicy.for_run(spec.run)
    window = Window(x, {name: x.copy() for name in spec.probes}, {}, {}, len(x), 1.0)
    decide(spec, policy, window, Record.first(policy))
