"""The ``membudget`` fixture object: run(fn), iterate(), their async forms arun(fn) and
aiterate(), and the repeated test body."""

from __future__ import annotations

import inspect
import sys
from collections.abc import AsyncGenerator, Callable, Coroutine, Generator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, cast

import pytest

from pytest_membudget.judge.spec import BudgetSpec
from pytest_membudget.measure.phases import Phases
from pytest_membudget.measure.results import BudgetExceeded, FootprintRunaway, MembudgetResult
from pytest_membudget.vocabulary import BudgetKind, Phase, StopReason

if TYPE_CHECKING:
    from pytest_membudget.measure.records import RunawayRecord, StoppedAt
    from pytest_membudget.measure.samples import Measurement

#: Probes sampled when no budget names any: the cheap ones, for a result to look at.
DEFAULT_PROBES = ("rss", "gc_objects", "threads", "fds", "iter_time")


def _name(fn: object) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
               or type(fn).__name__)


def running_loop() -> bool:
    """Whether an asyncio event loop runs in this thread (asyncio is not imported for it)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass(repr=False)
class MemBudget:
    """Runs a workload for the configured iterations, measures it and judges the budgets.

    ``run(fn, *args, **kwargs)`` calls ``fn`` once per iteration; ``for i in iterate(): ...``
    is the loop form. In an async test, ``await arun(coro_fn, *args, **kwargs)`` and
    ``async for i in aiterate(): ...`` do the same in the running event loop. All raise
    :class:`pytest_membudget.BudgetExceeded` when a budget is exceeded and otherwise leave
    the result in :attr:`result`.
    """

    test: str
    spec: BudgetSpec
    disabled: bool = False
    result: MembudgetResult | None = None
    _measurement: Measurement | None = field(default=None, repr=False)
    _loop: Generator[int, None, Measurement] | None = field(default=None, repr=False)
    _used: bool = field(default=False, repr=False)
    #: arun() was called and its coroutine has not started: it may never be awaited.
    _awaiting: bool = field(default=False, repr=False)
    #: The async test body was started by an async plugin (see async_test).
    body_ran: bool = field(default=False, repr=False)
    #: The test's phases (``with membudget.phase(...)``), and whether the test is running
    #: (phases are measured only inside it).
    phases: Phases = field(default_factory=Phases, repr=False)
    active: bool = field(default=False, repr=False)
    #: What the peak watch saw when it stopped the workload (its RSS passed the hard
    #: ceiling); empty while it has not.
    runaway: RunawayRecord = field(default_factory=cast("Callable[[], RunawayRecord]", dict),
                                   repr=False)

    @contextmanager
    def phase(self, name: str, **budgets: object) -> Generator[None, None, None]:
        """``with membudget.phase("solve", rss_rise="2 GiB"): ...`` measures the block: how
        far RSS (and each budgeted probe) rose above its start, what the block left at its
        end, and what the memory was made of at its peak. Budgets are optional and named as
        in the marker; the test fails at its end when one is exceeded, with every phase in
        one table. A phase may hold other phases, not itself."""
        __tracebackhide__ = True
        if not isinstance(name, str) or not name.strip():
            pytest.fail(f"{self.test}: membudget.phase() takes a name for the phase as its "
                        f"first argument, a non-empty string; got {name!r}", pytrace=False)
        if not self.active:
            pytest.fail(f"{self.test}: membudget.phase({name!r}) was entered outside the "
                        "test that requested the membudget fixture (after it ended, or in "
                        "another test); a phase measures a stretch of its own test",
                        pytrace=False)
        if name in self.phases.open:
            pytest.fail(f"{self.test}: membudget.phase({name!r}) was entered inside itself; "
                        "a phase may hold other phases (with other names), not itself",
                        pytrace=False)
        from pytest_membudget.judge.spec import SpecError
        from pytest_membudget.measure.phases import phase_spec, run_phase

        try:
            spec = phase_spec(self.spec, budgets, f"in membudget.phase({name!r})")
        except SpecError as exc:
            problem = str(exc)
        else:
            problem = ""
        if problem:
            pytest.fail(f"{self.test}: {problem}", pytrace=False)
        if self.disabled:
            yield
            return
        yield from run_phase(name, spec, self.phases)

    def run(self, fn: Callable[..., object], *args: object, **kwargs: object) -> MembudgetResult:
        """Call ``fn(*args, **kwargs)`` for the warm-up and measured iterations, then judge."""
        __tracebackhide__ = True
        self._check_workload(fn, "run")
        loop = self.iterate()
        first = True
        for _ in loop:
            try:
                returned = fn(*args, **kwargs)
            except Exception as exc:
                self._raised(loop, exc)
            if first:
                first = False
                if inspect.isawaitable(returned):
                    loop.close()
                    self._refuse(returned, f"membudget.run() called {_name(fn)}, which "
                                 f"returned {type(returned).__name__} {_name(returned)}: "
                                 "run() does not await it, so nothing of it would run; in an "
                                 f"async test write `await membudget.arun({_name(fn)}, ...)`")
            del returned  # the workload's result must not be alive at the next sample
        assert self.result is not None
        return self.result

    def arun(self, fn: Callable[..., Any], *args: object,
             **kwargs: object) -> Coroutine[Any, Any, MembudgetResult]:
        """``await membudget.arun(coro_fn, *args, **kwargs)``: await ``coro_fn(*args,
        **kwargs)`` in the test's running event loop for every iteration, then judge. The
        samples are taken between the awaits, after the loop has had one turn to run the
        callbacks the workload scheduled."""
        __tracebackhide__ = True
        self._check_workload(fn, "arun")
        if not running_loop():
            self._used = True
            pytest.fail(
                f"{self.test}: membudget.arun() awaits the workload in the running asyncio "
                "event loop, and no loop runs here; write `await membudget.arun(fn)` in an "
                "async test (run by pytest-asyncio or anyio), or `membudget.run(fn)` for a "
                "sync workload in a sync test", pytrace=False)
        self._awaiting = True
        return self._arun(fn, args, kwargs)

    async def _arun(self, fn: Callable[..., Any], args: tuple[object, ...],
                    kwargs: dict[str, object]) -> MembudgetResult:
        __tracebackhide__ = True
        import asyncio

        self._awaiting = False
        loop = self.iterate()
        first = True
        for _ in loop:
            try:
                awaitable = fn(*args, **kwargs)
                if first:
                    first = False
                    if not inspect.isawaitable(awaitable):
                        loop.close()
                        self._refuse(None, f"membudget.arun() awaits what the workload "
                                     f"returns, and {_name(fn)} returned "
                                     f"{type(awaitable).__name__}, not an awaitable; for a "
                                     f"sync workload write membudget.run({_name(fn)}, ...)")
                await awaitable
                del awaitable
            except Exception as exc:
                self._raised(loop, exc)
            # One turn of the loop: callbacks and task steps the iteration scheduled run
            # before the sample, as they would before the next await of a real program.
            await asyncio.sleep(0)
        assert self.result is not None
        return self.result

    async def aiterate(self) -> AsyncGenerator[int, None]:
        """``async for i in membudget.aiterate(): body`` repeats ``body`` (which may await)
        in the running event loop and measures it."""
        __tracebackhide__ = True
        import asyncio

        for iteration in self.iterate():
            yield iteration
            await asyncio.sleep(0)

    def iterate(self) -> Generator[int, None, None]:
        """``for i in membudget.iterate(): body`` repeats ``body`` and measures it."""
        __tracebackhide__ = True
        self._begin()
        if self.disabled:
            yield 0
            self.result = MembudgetResult(1, 0, StopReason.DISABLED, 0.0, {})
            return
        from pytest_membudget.measure.loop import measure, open_measurement
        from pytest_membudget.measure.results import build_result
        from pytest_membudget.probes import ProbeError

        self._measurement = open_measurement(self.spec, self.spec.probes or DEFAULT_PROBES)
        self._loop = loop = measure(self.spec, self._measurement.probes, self._measurement)
        try:
            # Not `yield from`: closing this generator (a loop left early, or the frames of
            # a stopped test let go) must not close the run, which stopped() and _close()
            # finish.
            for iteration in loop:  # noqa: UP028
                yield iteration
        except ProbeError as exc:
            self._loop = None
            pytest.fail(f"{self.test}: {exc}", pytrace=False)
        self._loop = None
        self.result = build_result(self._measurement)
        if not self.result.passed:
            from pytest_membudget.render.failure import failure_message

            raise BudgetExceeded(
                failure_message(self.test, self.result, self.spec.run.confidence), self.result
            )
        if self.spec.run.strict and self.result.unsettled:
            from pytest_membudget.render.failure import strict_message

            raise BudgetExceeded(strict_message(self.test, self.result), self.result)

    def __repr__(self) -> str:
        from pytest_membudget.render.units import fmt

        budgets = ", ".join(
            f"{b.key}={fmt(b.probe, b.limit, per_iter=b.kind is BudgetKind.SLOPE)}"
            for b in self.spec.budgets)
        return f"<membudget {self.test}: {budgets or 'no budgets'}>"

    def _raised(self, loop: Generator[int, None, None], exc: Exception) -> NoReturn:
        """The workload raised ``exc``: during the evidence's calls, the verdict stands
        without evidence (a finite data source cannot run longer); stopped at the ceiling,
        the test fails with what the watch saw; else it goes on to the test."""
        __tracebackhide__ = True
        if self._in_evidence():
            loop.close()
            self._fail_without_evidence(exc)
        if isinstance(exc, FootprintRunaway):
            self.stopped(exc)
        raise exc

    def stopped(self, stop: FootprintRunaway) -> NoReturn:
        """The peak watch stopped the workload at the ceiling: the stopped call's frames are
        let go (the next test starts where it would have), the run records the stop and its
        evidence, and the test fails with them."""
        __tracebackhide__ = True
        from pytest_membudget.frames import let_go, stopped_at
        from pytest_membudget.measure.results import build_result
        from pytest_membudget.render.stopped import (
            phase_details,
            phase_lines,
            runaway_message,
        )

        seen: RunawayRecord = {**stop.seen, "stopped_at": cast("StoppedAt", stopped_at(stop))}
        let_go(stop)
        loop, self._loop = self._loop, None
        if loop is not None and self._measurement is not None:
            with suppress(StopIteration):
                loop.throw(stop)
            self.result = build_result(self._measurement)
        elif loop is not None:
            loop.close()
        self.runaway = seen
        evidence = self.result.peak_evidence if self.result is not None else {}
        # A stopped phase shows its own lines below.
        shown = {**seen, "rose": []} if self.phases.rows else seen
        message = runaway_message(self.test, shown, evidence)
        if self.phases.rows:
            phases = self.phases.to_list()
            message += "\n" + "\n".join(phase_lines(phases) + phase_details(phases))
        raise BudgetExceeded(message, self.result) from None

    def _fail_without_evidence(self, exc: BaseException) -> NoReturn:
        __tracebackhide__ = True
        from pytest_membudget.measure.results import build_result
        from pytest_membudget.render.failure import failure_message

        self._loop = None
        assert self._measurement is not None
        result = build_result(self._measurement)
        result.evidence_data = {
            "error": f"the workload raised {type(exc).__name__}: {exc} during the evidence "
                     "rerun, so no evidence was gathered"
        }
        self.result = result
        failure = BudgetExceeded(failure_message(self.test, result, self.spec.run.confidence),
                                 result)
        if isinstance(exc, FootprintRunaway):
            # The machine ran short during the evidence's call: its memory goes back now.
            from pytest_membudget.frames import let_go

            let_go(exc)
            raise failure from None
        raise failure from exc

    def _in_evidence(self) -> bool:
        return self._measurement is not None and self._measurement.phase is Phase.EVIDENCE

    def _check_workload(self, fn: object, method: str) -> None:
        """Refuse what ``method`` cannot repeat: a non-callable, an awaitable (a coroutine
        object runs once), and for run() an async function (run() would not await it)."""
        __tracebackhide__ = True
        if inspect.isawaitable(fn):
            self._refuse(fn, f"membudget.{method}() takes the function to repeat, and got the "
                         f"{type(fn).__name__} {_name(fn)}(...), which can be awaited only "
                         "once; pass the async function itself: "
                         f"`await membudget.arun({_name(fn)}, ...)`")
        if not callable(fn):
            self._refuse(None, f"membudget.{method}() takes the workload to repeat as its "
                         f"first argument, a callable; got {type(fn).__name__} {fn!r:.80}")
        if method == "run" and (inspect.iscoroutinefunction(fn)
                                or inspect.isasyncgenfunction(fn)):
            self._refuse(None, f"membudget.run() got the async function {_name(fn)}: calling "
                         "it only creates a coroutine, which run() would not await; in an "
                         f"async test write `await membudget.arun({_name(fn)}, ...)`")

    def _refuse(self, awaitable: object, message: str) -> NoReturn:
        __tracebackhide__ = True
        if inspect.iscoroutine(awaitable):
            awaitable.close()  # the error says it all; no 'never awaited' warning on top
        self._used = True  # the test meant to measure: one error is enough, not a second
        self._measurement = None  # nothing was measured worth showing beside the error
        pytest.fail(f"{self.test}: {message}", pytrace=False)

    def async_test(self, body: Callable[..., Any], *,
                   repeat: bool) -> Callable[..., Coroutine[Any, Any, None]]:
        """The coroutine function an async plugin runs in place of the async test ``body``:
        with ``repeat`` (the marker without the fixture) it repeats the body in the loop
        through arun(); otherwise it awaits the body once. Either way it notes that an async
        plugin did run it (:attr:`body_ran`)."""

        async def membudget_async_test(**kwargs: Any) -> None:
            __tracebackhide__ = True
            self.body_ran = True
            if repeat:
                await self.arun(body, **kwargs)
            else:
                await body(**kwargs)

        return membudget_async_test

    def fail_unrun_async_test(self) -> NoReturn:
        __tracebackhide__ = True
        self._used = True
        pytest.fail(
            f"{self.test} is an async test that uses membudget, and no async plugin ran it, "
            "so nothing was measured: install pytest-asyncio and mark the test "
            "@pytest.mark.asyncio (or set asyncio_mode = auto), or install anyio and mark it "
            "@pytest.mark.anyio", pytrace=False)

    def reset(self) -> None:
        """Forget the previous run so that the same test can measure again."""
        self._close()
        self.result = None
        self._measurement = None
        self._used = False
        self._awaiting = False

    # -- plumbing for the plugin ------------------------------------------------------------

    def _begin(self) -> None:
        if self._used:
            pytest.fail(
                f"{self.test}: the membudget fixture was already used for a run in this test; "
                "call membudget.reset() before measuring again (each run is judged on its own)",
                pytrace=False,
            )
        self._used = True

    def _close(self) -> None:
        """Stop a loop left suspended (the workload raised, or the loop was left early)."""
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def partial_result(self) -> MembudgetResult | None:
        """The samples so far of a run that did not finish."""
        if self._measurement is None or self.result is not None:
            return None
        from pytest_membudget.measure.results import build_result

        return build_result(self._measurement)

    @property
    def used(self) -> bool:
        return self._used
