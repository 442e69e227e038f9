"""The suite sweep's driver: a test body repeated in place, screened on exact counters, and
judged by the full auto verdict when the screen flags it.

Both stages hand the body to :func:`runner.measure`, the loop every driver uses; this module
only decides which run to make and reads what came back. No pytest here: the caller says
which exceptions end the repeats (``catch``) and how to name them (``classify``).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_membudget.catalog import PROBES
from pytest_membudget.results import MembudgetResult, _finite, build_result
from pytest_membudget.runner import capacity_for, measure
from pytest_membudget.sampling import Measurement
from pytest_membudget.screening import SCREEN_CALLS, SCREEN_PROBES, SCREEN_WARMUP, flagged
from pytest_membudget.spec import MIN_VERDICT_ITERATIONS, Budget, BudgetSpec, RunSettings
from pytest_membudget.verdict import Verdict
from pytest_membudget.vocabulary import (
    BudgetKind,
    CutShort,
    GcPolicy,
    NotRepeatable,
    Phase,
    ProbeKind,
    Remedy,
    StopReason,
    SweepVerdict,
)

#: Where the sweep's own budgets come from, in results and messages.
SOURCE = "from the membudget sweep"


@dataclass
class SweepOutcome:
    """How one test came out of the sweep: data, turned into text at the edge."""

    verdict: SweepVerdict
    #: Probes the screen flagged, each with its growth over the screen.
    flagged: dict[str, float] = field(default_factory=dict)
    #: Repeats made after the test's own first call (screen and full verdict).
    calls: int = 0
    seconds: float = 0.0
    #: Of ``seconds``, those of the screen (the rest: the full verdict and its evidence).
    screen_seconds: float = 0.0
    #: The seconds the sweep allowed itself for this test, and what bounded them.
    allowed: float = 0.0
    bound: CutShort = CutShort.SWEEP_SECONDS
    #: Seconds of the test's own first call.
    first_call: float = 0.0
    result: MembudgetResult | None = None
    reason: NotRepeatable | None = None
    #: The exception that ended the repeats, as ``Type: message``.
    detail: str = ""
    #: The repeat (1 = the first after the test's own call) that raised.
    failed_call: int = 0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "verdict": self.verdict.value,
            "flagged": dict(self.flagged),
            "calls": self.calls,
            "seconds": round(self.seconds, 6),
            "screen_seconds": round(self.screen_seconds, 6),
            "allowed": round(self.allowed, 3),
            "bound": self.bound.value,
            "first_call": round(self.first_call, 6),
        }
        if self.reason is not None:
            data.update(reason=self.reason.value, detail=self.detail,
                        failed_call=self.failed_call)
        if self.result is not None:
            data["leaks"] = leak_summary(self.result)
        return data


class ScreenMeasurement(Measurement):
    """The screen's samples: the screening rule reads them, so the runner's own judgement of
    a budgetless window (a trend per probe, twice per run) is skipped."""

    def judge(self) -> Verdict:
        return Verdict({})


@dataclass
class Repetition:
    """A run of repeats: the measurement, and the exception that stopped it, if one did."""

    measurement: Measurement
    error: BaseException | None = None
    #: Calls made before the error (or all of them).
    calls: int = 0


def repeat(spec: BudgetSpec, names: tuple[str, ...], body: Callable[[], object],
           catch: tuple[type[BaseException], ...], *, unmeasured: int = 0,
           storage: type[Measurement] = Measurement) -> Repetition:
    """Call ``body`` ``unmeasured`` times, then as :func:`runner.measure` asks, sampling
    ``names``; stop at the first exception of ``catch`` and hand it back instead of raising
    it."""
    from pytest_membudget.probes import create

    options = {"device": spec.run.device, "cuda_history": spec.run.cuda_history}
    probes = {name: create(name, options) for name in names}
    m = storage(spec, probes, capacity_for(spec))
    done = Repetition(m)
    # What the session holds is frozen before the run, not only at the window: the warm-up's
    # reads of gc_objects then list only what the test makes, not every object of the session
    # (the runner unfreezes it all at the end, as it does its own freeze).
    gc.freeze()
    try:
        for _ in range(unmeasured):
            body()
            done.calls += 1
        loop = measure(spec, probes, m)
        try:
            for _ in loop:
                body()
                done.calls += 1
        except catch as exc:
            loop.close()
            done.error = exc
    except catch as exc:
        done.error = exc
    finally:
        gc.unfreeze()
    return done


def screen_spec(run: RunSettings, calls: int = SCREEN_CALLS) -> BudgetSpec:
    """A fixed, short run, sampled after every call, budgets none: the screen reads the
    samples itself. Its warm-up calls are made before the run (``repeat``'s
    ``unmeasured``), unsampled: only the window's samples are read."""
    return BudgetSpec((), replace(run, iterations=calls, warmup=1, gc=GcPolicy.COLLECT,
                                  evidence=False, strict=False))


def full_spec(run: RunSettings, probes: Mapping[str, float], defaults: tuple[Budget, ...],
              seconds: float) -> BudgetSpec:
    """The full auto verdict on the flagged probes: slope 0 each, unless a default budget
    (``membudget_budget``) names that probe's slope."""
    configured = {b.probe: b for b in defaults if b.kind is BudgetKind.SLOPE}
    budgets = tuple(configured.get(name, Budget(name, BudgetKind.SLOPE, 0.0, SOURCE))
                    for name in probes)
    return BudgetSpec(budgets, replace(run, iterations=None, max_seconds=seconds,
                                       strict=False))


def sweep_test(
    body: Callable[[], object],
    *,
    run: RunSettings,
    defaults: tuple[Budget, ...],
    first_call: float,
    allowed: float,
    bound: CutShort,
    catch: tuple[type[BaseException], ...],
    classify: Callable[[BaseException], NotRepeatable],
) -> SweepOutcome:
    """Screen ``body`` (the test's call with its fixtures bound), then judge it fully if the
    screen flags it, all within ``allowed`` seconds."""
    started = time.perf_counter()
    outcome = SweepOutcome(SweepVerdict.CLEAN, allowed=allowed, bound=bound,
                           first_call=first_call)

    def stop(repetition: Repetition, calls_before: int) -> SweepOutcome:
        error = repetition.error
        assert error is not None
        outcome.verdict = SweepVerdict.NOT_REPEATABLE
        outcome.reason = classify(error)
        outcome.detail = describe(error)
        outcome.failed_call = calls_before + repetition.calls + 1
        return finish()

    def finish() -> SweepOutcome:
        outcome.seconds = time.perf_counter() - started
        return outcome

    spec = screen_spec(run)
    # The screen is fixed-length: a body too slow for it within the time is not started.
    if first_call * (SCREEN_WARMUP + (spec.run.iterations or 0)) > allowed:
        outcome.verdict = SweepVerdict.CUT_SHORT
        return finish()
    screen = repeat(spec, SCREEN_PROBES, body, catch, unmeasured=SCREEN_WARMUP - 1,
                    storage=ScreenMeasurement)
    outcome.calls = screen.calls
    outcome.screen_seconds = time.perf_counter() - started
    if screen.error is not None:
        return stop(screen, 0)
    window = screen.measurement.window()[1]
    outcome.flagged = flagged(window)
    if not outcome.flagged:
        return finish()
    left = allowed - (time.perf_counter() - started)
    if left <= 0:
        outcome.verdict = SweepVerdict.CUT_SHORT
        return finish()
    full = repeat(full_spec(run, outcome.flagged, defaults, left), tuple(outcome.flagged),
                  body, catch)
    outcome.calls += full.calls
    m = full.measurement
    if full.error is not None and m.phase is not Phase.EVIDENCE:
        return stop(full, screen.calls)
    result = build_result(m)
    if full.error is not None:  # the verdict was in; only the evidence was cut short
        result.evidence_data = {"error": f"the workload raised {describe(full.error)} during "
                                         "the evidence rerun, so no evidence was gathered"}
    outcome.result = result
    outcome.verdict = verdict_of(result)
    return finish()


def verdict_of(result: MembudgetResult) -> SweepVerdict:
    """A failure stands as a leak wherever the run stopped. A run the sweep's time stopped
    before the shortest auto verdict was cut short, even where its samples read flat."""
    if result.failures:
        return SweepVerdict.LEAK
    cap = result.settings.get("max_iterations")
    shortest = min(MIN_VERDICT_ITERATIONS, cap) if isinstance(cap, int) else (
        MIN_VERDICT_ITERATIONS)
    out_of_time = result.stopped is StopReason.CAP and result.iterations < shortest
    unsettled = result.unsettled
    if out_of_time or any(Remedy.MAX_SECONDS in u.remedies for u in unsettled):
        return SweepVerdict.CUT_SHORT
    return SweepVerdict.INCONCLUSIVE if unsettled else SweepVerdict.PASSED


def describe(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 200 characters)."""
    text = str(error).strip().splitlines()
    message = text[0] if text else ""
    line = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return line if len(line) <= 200 else line[:197] + "..."


def leak_summary(result: MembudgetResult) -> dict[str, Any]:
    """What the leak table shows of a judged test: each failing slope budget's probe, slope
    and bounds, the growth per call in bytes where a probe or the evidence measured it (the
    table's rank), and the top line of the evidence."""
    failing = [o for o in result.failures if o.kind is BudgetKind.SLOPE]
    probes: list[dict[str, Any]] = [
        {"probe": o.probe, "unit": PROBES[o.probe].unit, "slope": _finite(o.measured),
         "lower": _finite(result.probes[o.probe].ci[0]),
         "upper": _finite(result.probes[o.probe].ci[1])} for o in failing]
    byte_slopes = [o.measured for o in failing
                   if PROBES[o.probe].kind is ProbeKind.BYTES and _finite(o.measured) is not None]
    evidence = result.evidence_data
    sites = evidence.get("sites") or []
    done = evidence.get("iterations") or 0
    if sites and done:
        byte_slopes.append(sum(s["bytes"] for s in sites) / done)
    return {"probes": probes, "bytes_per_call": max(byte_slopes) if byte_slopes else None,
            "evidence": top_evidence(evidence, tuple(o.probe for o in failing))}


def top_evidence(evidence: Mapping[str, Any], failing: tuple[str, ...] = ()
                 ) -> dict[str, Any] | None:
    """The first line of the evidence: the first thread or descriptor left open when those
    probes fail, else the top growing allocation site, else what kept the evidence away."""
    if "error" in evidence:
        return {"kind": "error", "text": evidence["error"]}
    if "threads" in failing and evidence.get("threads"):
        return {"kind": "thread", **evidence["threads"][0]}
    if "fds" in failing and evidence.get("fds"):
        return {"kind": "fd", "target": evidence["fds"][0]}
    sites = evidence.get("sites")
    if sites:
        top = sites[0]
        return {"kind": "site", **{k: top.get(k) for k in (
            "file", "line", "bytes", "per_iter", "code", "via_file", "via_line")}}
    if sites is not None:
        return {"kind": "native"}
    return None
