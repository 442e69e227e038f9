"""The suite sweep's driver: a test body repeated in place, screened on exact counters, and
judged by the full auto verdict when the screen flags it.

Both stages hand the body to measure.loop.measure, the loop every driver uses; this module
only decides which run to make and reads what came back. No pytest here: the caller says
which exceptions end the repeats (``catch``) and how to name them (``classify``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pytest_membudget.judge.policy import CONFIRM_GROWTH, RunPolicy
from pytest_membudget.judge.screen import (
    EXACT_SECONDS,
    SCREEN_CALLS,
    SCREEN_WARMUP,
    SLOW_CALL,
    STEADY_PROBES,
    look_ends,
    look_goes_on,
    second_look,
    sweep_verdict,
)
from pytest_membudget.judge.spec import Budget, BudgetSpec, RunSettings
from pytest_membudget.measure import own
from pytest_membudget.measure.loop import measure, open_measurement
from pytest_membudget.measure.results import MembudgetResult, build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.sweep.outcome import SecondLook, SweepOutcome, describe
from pytest_membudget.sweep.screen import (
    ScreenMeasurement,
    screen_policy,
    screen_probes,
    screen_spec,
)
from pytest_membudget.sweep.typecache import TYPE_CACHE
from pytest_membudget.vocabulary import (
    BudgetKind,
    CutShort,
    NotRepeatable,
    Phase,
    SweepVerdict,
)

T = TypeVar("T")
#: Where the sweep's own budgets come from, in results and messages.
SOURCE = "from the membudget sweep"


@dataclass
class Repetition:
    """A run of repeats: the measurement, and the exception that stopped it, if one did."""

    measurement: Measurement
    error: BaseException | None = None
    #: Calls made before the error (or all of them).
    calls: int = 0


Steps = Generator[None, None, T]


def repeat(spec: BudgetSpec, names: tuple[str, ...], catch: tuple[type[BaseException], ...],
           *, unmeasured: int = 0, storage: type[Measurement] = Measurement,
           policy: RunPolicy | None = None) -> Steps[Repetition]:
    """Yield once per call of the body: ``unmeasured`` calls, then as measure.loop.measure
    asks, sampling ``names``. A call's exception of ``catch``, thrown in by the driver, stops
    the repeats and is handed back instead of raised."""
    m = open_measurement(spec, names, storage)
    probes = m.probes
    done = Repetition(m)
    try:
        for _ in range(unmeasured):
            yield
            done.calls += 1
        loop = measure(spec, probes, m, policy)
        try:
            for _ in loop:
                yield
                done.calls += 1
        except catch as exc:
            loop.close()
            done.error = exc
    except catch as exc:
        done.error = exc
    return done


def drive(steps: Steps[T], body: Callable[[], object]) -> T:
    """Call ``body`` at each step; its exceptions go into the steps, which decide."""
    try:
        next(steps)
        while True:
            try:
                body()
            except BaseException as exc:  # the steps catch what they can
                steps.throw(exc)
            else:
                next(steps)
    except StopIteration as finished:
        result: T = finished.value
        return result


async def drive_async(steps: Steps[T], body: Callable[[], Awaitable[object]]) -> T:
    """:func:`drive` for a coroutine body, in the running event loop: each call is awaited,
    and the loop has one turn to run what it scheduled before the sample (as aiterate)."""
    import asyncio

    try:
        next(steps)
        while True:
            try:
                await body()
                await asyncio.sleep(0)
            except BaseException as exc:  # the steps catch what they can
                steps.throw(exc)
            else:
                next(steps)
    except StopIteration as finished:
        result: T = finished.value
        return result


def full_spec(run: RunSettings, probes: Mapping[str, float], defaults: tuple[Budget, ...],
              seconds: float) -> BudgetSpec:
    """The full auto verdict on the flagged probes: slope 0 each, unless a default budget
    (``membudget_budget``) names that probe's slope."""
    configured = {b.probe: b for b in defaults if b.kind is BudgetKind.SLOPE}
    budgets = tuple(configured.get(name, Budget(name, BudgetKind.SLOPE, 0.0, SOURCE))
                    for name in probes)
    return BudgetSpec(budgets, replace(run, iterations=None, max_seconds=seconds,
                                       strict=False))


def confirmation_policy(spec: BudgetSpec, flagged: Mapping[str, float]) -> RunPolicy:
    """How long the full verdict runs. Growth the screen saw on every call of an exact counter
    (``py_blocks``, ``malloc``: STEADY_PROBES), alone or beside coarser probes, is confirmed
    at CONFIRM_GROWTH times the calls of its first judgement (min_iterations: 128 calls by
    default), or after EXACT_SECONDS of a slow test's work, instead of the shortest
    verdict's 640 calls or 6 s, sampled after every call as the screen was: the sweep's
    repeats call the test with the same arguments, so a cache keyed by them is full after the
    first call, and a buffer that still fills after the screen must stop within about half of
    these calls (or seconds) to pass. Every flagged probe is judged on that run."""
    policy = RunPolicy.for_run(spec.run)
    if any(name in STEADY_PROBES for name in flagged):
        return replace(policy, shortest=min(policy.shortest,
                                            CONFIRM_GROWTH * policy.min_iterations),
                       shortest_seconds=min(policy.shortest_seconds, EXACT_SECONDS),
                       every_call=True)
    return policy


#: The most seconds the sweep of one flagged test may take when its full verdict does not fit
#: in membudget_sweep_seconds at the test's pace (a heavy step: a training step, a rollout),
#: unless pytest-timeout allows less. A test whose verdict would need longer is cut short
#: without one, as before.
HEAVY_SWEEP_SECONDS = 10.0
#: Headroom on the time a full verdict needs at the screen's pace (calls vary; the loop's
#: samples and collections take their share).
NEEDED_HEADROOM = 1.25


def seconds_needed(policy: RunPolicy, warmup: int, call_seconds: float) -> float:
    """The seconds a full verdict's warm-up and window need at ``call_seconds`` a call, to
    a confirmed failure (the evidence's traced calls come after the time bound)."""
    calls = warmup + policy.calls_to_verdict(call_seconds)
    return NEEDED_HEADROOM * calls * call_seconds


def sweep_test(body: Callable[[], object], **settings: Any) -> SweepOutcome:
    """Screen ``body`` (the test's call with its fixtures bound), then judge it fully if the
    screen flags it; ``settings`` as :func:`sweep_steps` takes them."""
    return drive(sweep_steps(**settings), body)


async def sweep_test_async(body: Callable[[], Awaitable[object]],
                           **settings: Any) -> SweepOutcome:
    """:func:`sweep_test` for an async test body, in the running event loop."""
    return await drive_async(sweep_steps(**settings), body)


def sweep_steps(
    *,
    run: RunSettings,
    defaults: tuple[Budget, ...],
    first_call: float,
    allowed: float,
    bound: CutShort,
    catch: tuple[type[BaseException], ...],
    classify: Callable[[BaseException], NotRepeatable],
    screen_calls: int = SCREEN_CALLS,
    most: float | None = None,
) -> Steps[SweepOutcome]:
    """The sweep of one test, a step per call of its body: the screen, then the full verdict
    if the screen flags it, all within ``allowed`` seconds, or, for a flagged test whose
    verdict does not fit there at its pace, within the seconds it needs up to ``most`` (no
    more than ``allowed`` when None)."""
    ending = _Ending(SweepOutcome(SweepVerdict.CLEAN, allowed=allowed, bound=bound,
                                  first_call=first_call), time.perf_counter(), classify)
    outcome = ending.outcome
    spec = screen_spec(run, screen_calls)
    _prime_screen(spec)
    # The screen is fixed-length: a body too slow for it within the time is not started.
    if first_call * (SCREEN_WARMUP + (spec.run.iterations or 0)) > allowed:
        return ending.cut_short()
    slow = first_call >= SLOW_CALL
    # Names built per call that the interpreter's type cache keeps would read as a block or
    # two per call: the cache is cleared after each repeat, the screen's as the verdict's.
    TYPE_CACHE.arm()
    screen = yield from screen_run(spec, catch, slow)
    outcome.calls = screen.calls
    if screen.error is not None:
        outcome.screen_seconds = ending.elapsed()
        return ending.not_repeatable(screen, 0)
    outcome.flagged = _flags(screen)
    look = second_look(outcome.flagged)
    if look is not None and 2 * ending.elapsed() < allowed:
        again = yield from _second_look(spec, catch, ending, screen, look)
        if again.error is not None:
            outcome.screen_seconds = ending.elapsed()
            return ending.not_repeatable(again, screen.calls)
    outcome.screen_seconds = ending.elapsed()
    if not outcome.flagged:
        return ending.finish()
    if outcome.second_look is not None and not outcome.second_look.goes_on:
        outcome.verdict = SweepVerdict.PASSED
        return ending.finish()
    spec = full_spec(run, outcome.flagged, defaults, 0.0)
    policy = confirmation_policy(spec, outcome.flagged)
    left = _time_for_verdict(ending, spec, policy, most)
    if left <= 0:
        return ending.cut_short()
    spec = replace(spec, run=replace(spec.run, max_seconds=left))
    full = yield from repeat(spec, tuple(outcome.flagged), catch, policy=policy)
    outcome.calls += full.calls
    if full.error is not None and full.measurement.phase is not Phase.EVIDENCE:
        return ending.not_repeatable(full, screen.calls)
    return ending.judged(full)


def _second_look(spec: BudgetSpec, catch: tuple[type[BaseException], ...],
                 ending: _Ending, screen: Repetition, probe: str) -> Steps[Repetition]:
    """Rounds of the screen's length on the flagged probe alone, each after one call
    unread (as the screen's window: the first call after a run's first reading reads more
    of ``malloc`` than the calls after it), all calls read, the type
    cache cleared after each as before: whether the growth goes on. A round that grew on
    every call goes to the full verdict at once; one whose growth slowed as a fill's does
    (judge.screen.look_goes_on) passes the test; one in between is followed by another
    round while the rounds (judge.screen.SECOND_LOOK_ROUNDS) and the time last. Its figures
    go into the outcome."""
    assert isinstance(screen.measurement, ScreenMeasurement)
    outcome = ending.outcome
    first = screen.measurement.per_call(probe)
    look = replace(spec, run=replace(spec.run, warmup=1))
    rounds: list[float] = []
    while True:
        again = yield from repeat(look, (probe,), catch, storage=ScreenMeasurement,
                                  policy=RunPolicy.for_run(look.run))
        outcome.calls += again.calls
        if again.error is not None:
            return again
        assert isinstance(again.measurement, ScreenMeasurement)
        rounds.append(again.measurement.per_call(probe))
        every = probe in again.measurement.flagged()
        goes_on = look_goes_on(probe, first, rounds, every)
        outcome.second_look = SecondLook(probe, first, tuple(rounds), every, goes_on)
        if look_ends(rounds, every, goes_on) or 2 * ending.elapsed() >= outcome.allowed:
            return again


def _time_for_verdict(ending: _Ending, spec: BudgetSpec, policy: RunPolicy,
                      most: float | None) -> float:
    """Seconds left for the full verdict: what is left of the allowed time, or, where the
    verdict needs more at the screen's pace and that fits within ``most``, what it needs
    (the outcome's allowance and bound then say so)."""
    outcome, elapsed = ending.outcome, ending.elapsed()
    left = outcome.allowed - elapsed
    pace = outcome.screen_seconds / max(1, outcome.calls)  # the screens' calls
    needed = seconds_needed(policy, spec.run.warmup, pace)
    outcome.needed = elapsed + needed
    if needed > left and most is not None and elapsed + needed <= most:
        outcome.allowed, outcome.bound = elapsed + needed, CutShort.HEAVY
        return needed
    return left


def screen_run(spec: BudgetSpec, catch: tuple[type[BaseException], ...],
            slow: bool = False) -> Steps[Repetition]:
    return (yield from repeat(spec, screen_probes(), catch, unmeasured=SCREEN_WARMUP - 1,
                              storage=ScreenMeasurement, policy=screen_policy(spec, slow)))


def _flags(screen: Repetition) -> dict[str, float]:
    assert isinstance(screen.measurement, ScreenMeasurement)
    return screen.measurement.flagged()


@dataclass
class _Ending:
    """How one test's sweep ends, with its time taken."""

    outcome: SweepOutcome
    started: float
    classify: Callable[[BaseException], NotRepeatable]

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def finish(self) -> SweepOutcome:
        self.outcome.seconds = self.elapsed()
        return self.outcome

    def cut_short(self) -> SweepOutcome:
        self.outcome.verdict = SweepVerdict.CUT_SHORT
        return self.finish()

    def not_repeatable(self, repetition: Repetition, calls_before: int) -> SweepOutcome:
        error = repetition.error
        assert error is not None
        self.outcome.verdict = SweepVerdict.NOT_REPEATABLE
        self.outcome.reason = self.classify(error)
        self.outcome.detail = describe(error)
        self.outcome.failed_call = calls_before + repetition.calls + 1
        return self.finish()

    def judged(self, full: Repetition) -> SweepOutcome:
        result = build_result(full.measurement)
        if full.error is not None:  # the verdict was in; only the evidence was cut short
            result.evidence_data = {
                "error": f"the workload raised {describe(full.error)} during the evidence "
                         "rerun, so no evidence was gathered"}
        self.outcome.result = result
        self.outcome.verdict = verdict_of(result)
        return self.finish()


def _prime_screen(spec: BudgetSpec) -> None:
    """Screen an empty body twice per process before the first real screen (measure/own.py):
    a process's first screen reads its own first-time costs as growth on every call."""

    def prime() -> None:
        for _ in range(2):
            drive(repeat(spec, screen_probes(), (), storage=ScreenMeasurement,
                         policy=screen_policy(spec)), lambda: None)

    own.prime_once("screen", prime)


def verdict_of(result: MembudgetResult) -> SweepVerdict:
    """The sweep's verdict on a full verdict's result (judge.screen.sweep_verdict)."""
    cap = result.settings.get("max_iterations")
    return sweep_verdict(bool(result.failures), result.stopped, result.iterations,
                         cap if isinstance(cap, int) else None,
                         [u.remedies for u in result.unsettled])
