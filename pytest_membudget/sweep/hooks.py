"""``--membudget-sweep``: the hooks that repeat every test in place and judge it.

The test's own call runs first, exactly as without the sweep; its outcome is the test's. Only
after it passed is the same function called again with the same fixture values, through
:func:`sweep.sweep_test` (a screen, then the full verdict for what the screen flags). A
repeat that raises, skips or xfails leaves the first outcome standing and the test is listed
as not repeatable. A leak fails the test in ``fail`` mode, through its report, with the
usual message and evidence. Results travel on the reports (``report.membudget_sweep``), so
the controller lists every worker's tests under pytest-xdist.
"""

from __future__ import annotations

import inspect
import time
import unittest
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any, TypedDict, cast

import pytest

from pytest_membudget.fixture import MemBudget
from pytest_membudget.judge.spec import RunSettings
from pytest_membudget.settings import SessionSettings
from pytest_membudget.sweep.driver import HEAVY_SWEEP_SECONDS, sweep_test, sweep_test_async
from pytest_membudget.sweep.housekeeping import Housekeeping
from pytest_membudget.sweep.outcome import SweepOutcome, SweepRecord, leak_summary
from pytest_membudget.sweep.typecache import TYPE_CACHE
from pytest_membudget.vocabulary import CutShort, NotRepeatable, SweepMode, SweepVerdict

#: The opt-out marker: ``@pytest.mark.no_membudget_sweep(reason="...")``.
OPT_OUT = "no_membudget_sweep"
#: Share of a pytest-timeout timeout the sweep allows itself (from when the timer started),
#: so that the test's first call, teardown and the sweep's own ends stay within it.
TIMEOUT_SHARE = 0.5
#: Exceptions of a repeat that end the repeats instead of the session. pytest.exit is an
#: Exception too; it is raised again (see _classify).
CAUGHT: tuple[type[BaseException], ...] = (
    Exception, SystemExit, pytest.skip.Exception, pytest.fail.Exception)

OUTCOME_KEY = pytest.StashKey[SweepOutcome]()
TIMER_KEY = pytest.StashKey[tuple[float, float]]()
#: Set while an async test runs through the sweep's coroutine (pytest_runtest_call).
SWEPT_ASYNC_KEY = pytest.StashKey[bool]()


def _classify(error: BaseException) -> NotRepeatable:
    if isinstance(error, pytest.exit.Exception):
        raise error
    if isinstance(error, (pytest.skip.Exception, unittest.SkipTest)):
        return NotRepeatable.SKIPPED
    if isinstance(error, pytest.xfail.Exception):
        return NotRepeatable.XFAILED
    return NotRepeatable.RAISED


def _is_async(item: pytest.Function) -> bool:
    # pytest-asyncio runs a coroutine test through a sync wrapper; the test is what it wraps.
    function = inspect.unwrap(item.obj)
    return inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function)


def _kinds(item: pytest.Item) -> set[str]:
    return {cls.__name__ for cls in type(item).__mro__}


def _is_unittest(item: pytest.Item) -> bool:
    """A unittest.TestCase method, as pytest runs it."""
    return "TestCaseFunction" in _kinds(item) and isinstance(
        getattr(item, "instance", None), unittest.TestCase)


def _item_reason(item: pytest.Item) -> NotRepeatable:
    """Why a passing test that no sweep hook repeated was not repeated."""
    kinds = _kinds(item)
    if "DoctestItem" in kinds:
        return NotRepeatable.DOCTEST
    if "TestCaseFunction" in kinds:
        return NotRepeatable.UNITTEST
    return NotRepeatable.OTHER_ITEM


def _unscreened(report: pytest.TestReport) -> str | None:
    """Why a test's own run left nothing to screen (failed, skipped, xfailed, an error in its
    set-up), or None."""
    if report.when == "setup" and not report.passed:
        return "skipped" if report.skipped else "error in set-up"
    if report.when != "call" or report.passed:
        return None
    if hasattr(report, "wasxfail"):
        return "xfailed"
    return "skipped" if report.skipped else "failed"


class EvidenceOnce:
    """Evidence for the first leak of each test function (in this process): the others of
    the same function (its parameter sets, mostly) are judged as fully, without the evidence
    rerun, and point to the one that has it: on a suite whose leaks come in parameter sets, the
    evidence would be most of the sweep's time. A function whose first flagged test was not a
    leak (a bounded cache still filling: the evidence made it inconclusive) keeps its evidence
    for the next."""

    def __init__(self) -> None:
        #: Test function (its node id without parameters) -> the test that has the evidence.
        self.given: dict[str, str] = {}

    @staticmethod
    def function(item: pytest.Item) -> str:
        return item.nodeid.split("[", 1)[0]

    def run_for(self, item: pytest.Item, run: RunSettings) -> RunSettings:
        """The run settings of ``item``'s full verdict: without evidence when another test of
        its function has it."""
        if run.evidence and self.function(item) in self.given:
            return replace(run, evidence=False)
        return run

    def record(self, item: pytest.Item, outcome: SweepOutcome) -> None:
        if outcome.verdict is not SweepVerdict.LEAK or outcome.result is None:
            return
        function = self.function(item)
        first = self.given.get(function)
        if first is not None:
            outcome.result.evidence_data = {"same_as": first}
        elif outcome.result.evidence_data:
            self.given[function] = item.nodeid


class Allowance(TypedDict):
    """The sweep's time for a test (sweep.driver.sweep_steps's keywords)."""

    allowed: float
    bound: CutShort
    most: float


class SweepHooks:
    """Registered by the plugin when the sweep is on; one per process."""

    def __init__(self, config: pytest.Config, settings: SessionSettings,
                 records: dict[str, SweepRecord],
                 own_budgets: Callable[[pytest.Item], MemBudget | None]) -> None:
        self.config = config
        self.settings = settings
        self.mode = settings.sweep
        self.records = records
        #: The membudget state of a test with its own budgets (marker or fixture), else None.
        self.own_budgets = own_budgets
        self.evidence = EvidenceOnce()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # The type cache's refill plan is found once per process, here, rather than in the
        # first swept test's call, whose time a timeout marker bounds.
        TYPE_CACHE.prepare()

    # -- timing ----------------------------------------------------------------------------

    @pytest.hookimpl(optionalhook=True, wrapper=True)
    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> Generator[
            None, object, object]:
        """pytest-timeout's timer for this test: the sweep keeps within a share of it."""
        timeout = getattr(settings, "timeout", None)
        if isinstance(timeout, (int, float)) and timeout > 0:
            item.stash[TIMER_KEY] = (time.perf_counter(), float(timeout))
        return (yield)

    def _allowed(self, item: pytest.Item) -> Allowance:
        """The sweep's time for ``item``: ``allowed`` seconds (and the ``bound`` that set
        them), and the ``most`` a flagged heavy test's verdict may take beyond them."""
        allowed, bound = self.settings.sweep_seconds, CutShort.SWEEP_SECONDS
        most = max(allowed, HEAVY_SWEEP_SECONDS)
        timer = item.stash.get(TIMER_KEY, None)
        if timer is not None:
            started, timeout = timer
            left = max(TIMEOUT_SHARE * timeout - (time.perf_counter() - started), 0.0)
            most = min(most, left)
            if left < allowed:
                allowed, bound = left, CutShort.TIMEOUT
        return {"allowed": allowed, "bound": bound, "most": most}

    # -- the repeat ------------------------------------------------------------------------

    def _not_swept(self, item: pytest.Function) -> SweepOutcome | None:
        """The outcome of a test the sweep leaves alone, or None for one it repeats."""
        if self.own_budgets(item) is not None:
            return SweepOutcome(SweepVerdict.OWN_BUDGETS)
        if item.get_closest_marker(OPT_OUT) is not None:
            return SweepOutcome(SweepVerdict.OPTED_OUT)
        if item.get_closest_marker("xfail") is not None:
            return SweepOutcome(SweepVerdict.NOT_REPEATABLE, reason=NotRepeatable.XFAIL_MARKED)
        return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        """A unittest.TestCase method, once it passed, is repeated as unittest runs it alone
        (``TestCase.debug()``: setUp, the method, tearDown, the cleanups; the class's set-up
        stays). An async test: the async plugin (pytest-asyncio, anyio) runs, in its event
        loop, a coroutine function put in place of the test's, which awaits the test's own
        call and then sweeps it there. A test no async plugin runs fails on its own,
        unswept."""
        if _is_unittest(item):
            return (yield from self._unittest(item))
        if not (isinstance(item, pytest.Function) and self.own_budgets(item) is None
                and _is_async(item) and inspect.iscoroutinefunction(item.obj)):
            return (yield)
        body = item.obj
        item.obj = self._async_test(item, body)
        item.stash[SWEPT_ASYNC_KEY] = True
        try:
            return (yield)
        finally:
            item.obj = body

    def _unittest(self, item: pytest.Item) -> Generator[None, None, None]:
        begin = time.perf_counter()
        yield  # the test's own run: unittest records its outcome on the item
        first_call = time.perf_counter() - begin
        # Anything recorded (a failure, a skip, an expected failure) is the test's outcome;
        # under --pdb the tearDown is postponed, so a run is not complete.
        if getattr(item, "_excinfo", None) or item.config.getoption("usepdb", False):
            return
        assert isinstance(item, pytest.Function)
        outcome = self._not_swept(item)
        if outcome is None:
            outcome = self._sweep(item, item.instance.debug, first_call)
        item.stash[OUTCOME_KEY] = outcome

    def _async_test(self, item: pytest.Function, body: Callable[..., Any]
                    ) -> Callable[..., Any]:
        async def membudget_sweep(**kwargs: Any) -> None:
            begin = time.perf_counter()
            await body(**kwargs)  # the test's own call: whatever it raises is its outcome
            first_call = time.perf_counter() - begin
            outcome = self._not_swept(item)
            if outcome is None:
                with Housekeeping(item) as wrap:
                    outcome = await sweep_test_async(
                        wrap.asynchronous(lambda: body(**kwargs)),
                        run=self.evidence.run_for(item, self.settings.run),
                        defaults=self.settings.budgets, first_call=first_call,
                        catch=CAUGHT, classify=_classify,
                        screen_calls=self.settings.sweep_screen, **self._allowed(item))
                self.evidence.record(item, outcome)
            item.stash[OUTCOME_KEY] = outcome

        return membudget_sweep

    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> Generator[
            None, object, object]:
        if pyfuncitem.stash.get(SWEPT_ASYNC_KEY, False):
            return (yield)  # swept by the coroutine pytest_runtest_call put in
        begin = time.perf_counter()
        result = yield  # the test's own call: whatever it raises is its outcome
        first_call = time.perf_counter() - begin
        outcome = self._not_swept(pyfuncitem)
        if outcome is None:
            function = pyfuncitem.obj
            kwargs = {name: pyfuncitem.funcargs[name]
                      for name in pyfuncitem._fixtureinfo.argnames}
            outcome = self._sweep(pyfuncitem, lambda: function(**kwargs), first_call)
        pyfuncitem.stash[OUTCOME_KEY] = outcome
        return result

    def _sweep(self, item: pytest.Function, call: Callable[[], object],
               first_call: float) -> SweepOutcome:
        with Housekeeping(item) as wrap:
            outcome = sweep_test(
                wrap.synchronous(call), run=self.evidence.run_for(item, self.settings.run),
                defaults=self.settings.budgets, first_call=first_call, catch=CAUGHT,
                classify=_classify, screen_calls=self.settings.sweep_screen,
                **self._allowed(item))
        self.evidence.record(item, outcome)
        return outcome

    # -- reports ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        outcome = item.stash.get(OUTCOME_KEY, None)
        leak = outcome is not None and outcome.verdict is SweepVerdict.LEAK
        if call.when == "call" and leak and outcome is not None and outcome.result is not None:
            from pytest_membudget.artifacts.junit import junit_properties

            item.user_properties.extend(junit_properties(outcome.result.to_dict()))
        report: pytest.TestReport = yield
        if call.when == "call":
            self._call_report(item, report, outcome)
        elif call.when == "teardown" and outcome is not None and outcome.calls and report.failed:
            self._teardown_report(item, report, outcome)
        return report

    def _call_report(self, item: pytest.Item, report: pytest.TestReport,
                     outcome: SweepOutcome | None) -> None:
        own = self.own_budgets(item)
        if own is not None:
            # Judged by its own budgets, as without the sweep; a leak there is listed too.
            outcome = SweepOutcome(SweepVerdict.OWN_BUDGETS)
        elif outcome is None:
            if not report.passed:  # failed or skipped on its own: nothing to list
                return
            if item.get_closest_marker(OPT_OUT) is not None:
                outcome = SweepOutcome(SweepVerdict.OPTED_OUT)
            else:
                outcome = SweepOutcome(SweepVerdict.NOT_REPEATABLE, reason=_item_reason(item))
        data = outcome.to_dict()
        if own is not None and own.result is not None and own.result.failures:
            data["leaks"] = leak_summary(own.result)
        report.membudget_sweep = data  # type: ignore[attr-defined]
        # JUnit XML (which reads them from the teardown report, made from the item's): the
        # sweep's verdict, and why a test was not repeated.
        item.user_properties.append(("membudget.sweep", outcome.verdict.value))
        if outcome.reason is not None:
            from pytest_membudget.sweep.table import reason_text

            item.user_properties.append(("membudget.sweep.reason", reason_text(data)))
        # A leak's full result travels as a budgeted test's does (the membudget table, the
        # JSON report's tests, JUnit); the other verdicts are the sweep's lists alone, whose
        # advice (membudget_sweep_seconds) is the sweep's, not a marker's max_seconds.
        if outcome.result is None or outcome.verdict is not SweepVerdict.LEAK:
            return
        report.membudget = outcome.result.to_dict()  # type: ignore[attr-defined]
        if self.mode is SweepMode.FAIL and report.passed:
            from pytest_membudget.sweep.table import failure_text

            report.outcome = "failed"
            report.longrepr = failure_text(item.nodeid, outcome.result,
                                           self.settings.run.confidence)

    def _teardown_report(self, item: pytest.Item, report: pytest.TestReport,
                         outcome: SweepOutcome) -> None:
        """A teardown that failed after the repeats may have failed because of them: the
        sweep does not turn it into an error; it lists the test as not repeatable."""
        text = str(report.longrepr)
        crash = getattr(report.longrepr, "reprcrash", None)
        message = getattr(crash, "message", None) or text.strip().splitlines()[-1:]
        outcome.verdict = SweepVerdict.NOT_REPEATABLE
        outcome.reason = NotRepeatable.TEARDOWN
        outcome.detail = " ".join(str(message).split())[:200]
        report.outcome = "passed"
        report.longrepr = None
        report.sections.append(("membudget sweep: teardown after the repeats", text))
        data = report.membudget_sweep = outcome.to_dict()  # type: ignore[attr-defined]
        from pytest_membudget.sweep.table import reason_text

        # This report is the one JUnit XML reads the properties from (a copy of the item's).
        report.user_properties[:] = [p for p in report.user_properties
                                     if not p[0].startswith("membudget.sweep")]
        report.user_properties += [("membudget.sweep", outcome.verdict.value),
                                   ("membudget.sweep.reason", reason_text(data))]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "membudget_sweep", None)
        if isinstance(data, dict):  # a SweepRecord, as the report carried it
            self.records[report.nodeid] = cast(SweepRecord, data)
            return
        reason = _unscreened(report)
        if reason is not None and report.nodeid not in self.records:
            # Its own outcome was not a pass, so it was never repeated: counted, so that the
            # report says what the sweep did not look at.
            self.records[report.nodeid] = {"verdict": SweepVerdict.NOT_SCREENED.value,
                                           "reason": reason}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_membudget.sweep.table import summary_lines

        lines = summary_lines(self.records, self.mode, self.config.get_verbosity())
        if not lines:
            return
        terminalreporter.write_sep("-", "membudget sweep")
        for line in lines:
            terminalreporter.write_line(line)
