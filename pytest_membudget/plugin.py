"""pytest entry point: each hook delegates; nothing heavy is imported here."""

from __future__ import annotations

import inspect
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, cast

import pytest

from pytest_membudget import distributed, interpreter
from pytest_membudget import settings as _settings
from pytest_membudget.catalog import PROBES
from pytest_membudget.fixture import MemBudget
from pytest_membudget.judge.spec import BudgetSpec, SpecError, build_spec
from pytest_membudget.measure.results import BudgetExceeded, FootprintRunaway
from pytest_membudget.vocabulary import GcPolicy, StopReason, SweepMode

if TYPE_CHECKING:  # the records' types only: the sweep's modules load when a sweep runs
    from pytest_membudget.measure.records import ResultRecord, RunawayRecord
    from pytest_membudget.sweep.outcome import SweepRecord

SETTINGS_KEY = pytest.StashKey[_settings.SessionSettings]()
STATE_KEY = pytest.StashKey[MemBudget]()
#: Set on an async test whose body the async plugin runs through MemBudget.async_test.
MEASURED_ASYNC_KEY = pytest.StashKey[bool]()
REPORTS_KEY: pytest.StashKey[list[tuple[str, ResultRecord]]] = pytest.StashKey()
SWEEP_KEY: pytest.StashKey[dict[str, SweepRecord]] = pytest.StashKey()
MARKER = "membudget"
FIXTURE = "membudget"


def pytest_addoption(parser: pytest.Parser) -> None:
    _settings.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    _settings.bind_bare_sweep_flag(args)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "membudget(**budgets, iterations='auto', warmup=5): run the test's workload for many "
        "iterations and fail when a probe's slope, peak or growth exceeds its budget, e.g. "
        "@pytest.mark.membudget(rss='0', heap='4 KiB/iter', rss_peak='2 GiB')",
    )
    config.addinivalue_line(
        "markers",
        "no_membudget_sweep(reason=None): leave this test out of --membudget-sweep (it runs "
        "once, as without the sweep)",
    )
    settings = config.stash[SETTINGS_KEY] = _settings.resolve(config)
    config.stash[REPORTS_KEY] = []
    config.pluginmanager.register(ReportCollector(config), "membudget-reports")
    sweeping = settings.sweep is not SweepMode.OFF and not settings.disable
    if sweeping:
        from pytest_membudget.sweep.hooks import SweepHooks

        config.stash[SWEEP_KEY] = {}
        config.pluginmanager.register(
            SweepHooks(config, settings, config.stash[SWEEP_KEY], _own_budgets),
            "membudget-sweep")
    from pytest_membudget.artifacts.outputs import configure as configure_gating

    configure_gating(config, config.stash[REPORTS_KEY],
                     (settings.sweep, config.stash[SWEEP_KEY]) if sweeping else None)
    distributed.register(config, config.stash[REPORTS_KEY])


def _own_budgets(item: pytest.Item) -> MemBudget | None:
    return item.stash.get(STATE_KEY, None)


def _marker_kwargs(item: pytest.Item) -> dict[str, object] | None:
    markers = list(item.iter_markers(MARKER))
    if not markers:
        return None
    merged: dict[str, object] = {}
    for marker in reversed(markers):  # farthest (module, class) first; closest wins
        if marker.args:
            raise SpecError(
                f"the membudget marker takes keyword arguments only, got positional "
                f"{marker.args!r}; write e.g. membudget(rss=0)"
            )
        merged.update(marker.kwargs)
    return merged


def _applies(item: pytest.Item) -> bool:
    uses_fixture = FIXTURE in getattr(item, "fixturenames", ())
    return uses_fixture or item.get_closest_marker(MARKER) is not None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not _applies(item):
        return
    config = item.config.stash[SETTINGS_KEY]
    try:
        spec = build_spec(config.run, config.budgets, _marker_kwargs(item) or {},
                          "in the membudget marker")
    except SpecError as exc:
        problem = str(exc)
    else:
        problem = ""
    if problem:
        pytest.fail(f"{item.nodeid}: {problem}", pytrace=False)
    if not config.disable:
        _warn_device_wide(item, spec)
        _skip_unavailable(spec, item.nodeid, config.require_cuda)
    item.stash[STATE_KEY] = MemBudget(item.nodeid, spec, disabled=config.disable)


class DeviceWideWarning(pytest.PytestWarning):
    """A device-wide figure is budgeted where other processes share the device."""


_WARNED_DEVICE_WIDE = pytest.StashKey[bool]()


def _warn_device_wide(item: pytest.Item, spec: BudgetSpec) -> None:
    config = item.config
    if "cuda_device_used" not in spec.probes or not distributed.is_worker(config):
        return
    if config.stash.get(_WARNED_DEVICE_WIDE, False):
        return
    config.stash[_WARNED_DEVICE_WIDE] = True
    item.warn(DeviceWideWarning(
        "membudget: cuda_device_used is device-wide; under pytest-xdist it mixes the memory "
        "of every worker on the GPU. The other cuda_* probes are per process."))


def pytest_report_header(config: pytest.Config) -> list[str]:
    """What in this interpreter differs from what the plugin's verdicts are made on: nothing
    on most, one line each where something does (see :mod:`pytest_membudget.interpreter`)."""
    return [f"membudget: {note}" for note in interpreter.header_notes()]


def _skip_unavailable(spec: BudgetSpec, nodeid: str, require_cuda: bool) -> None:
    from pytest_membudget.probes import create

    if spec.run.gc is GcPolicy.COLLECT:
        reason = interpreter.gc_collect_reason(interpreter.gc_facts())
        if reason:
            pytest.skip(f"membudget: gc='collect' cannot be honoured here: {reason}")
    for name in spec.probes:
        reason = create(name, {"device": spec.run.device}).unavailable()
        if not reason:
            continue
        message = f"membudget: the {name} budget cannot be measured here: {reason}"
        if require_cuda and PROBES[name].needs_device:
            pytest.fail(f"{nodeid}: {message} (--membudget-require-cuda is set)", pytrace=False)
        pytest.skip(message)


@pytest.fixture
def membudget(request: pytest.FixtureRequest) -> Generator[MemBudget, None, None]:
    """Run a workload for many iterations and judge its memory budgets."""
    state = request.node.stash.get(STATE_KEY, None)
    if state is None:  # requested through getfixturevalue after setup
        pytest_runtest_setup(request.node)
        state = request.node.stash[STATE_KEY]
    yield state
    state._close()
    if state._awaiting:
        pytest.fail(
            f"{request.node.nodeid}: membudget.arun() was called but what it returned was "
            "never awaited, so nothing was measured; write `await membudget.arun(fn)`",
            pytrace=False,
        )
    if (request.node.get_closest_marker(MARKER) is not None and not state.used
            and not state.phases.rows):
        pytest.fail(
            f"{request.node.nodeid} has a membudget marker and requests the membudget fixture "
            "but never called membudget.run() or membudget.iterate(): nothing was measured",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A budgeted test's call: a workload the peak watch stopped (its RSS passed the hard
    ceiling) fails with what the watch saw; a test whose phases exceeded a budget fails at
    its end, with every phase in one table."""
    __tracebackhide__ = True
    state = item.stash.get(STATE_KEY, None)
    if state is None:
        return (yield)
    state.active = True
    try:
        yield from _call(item, state)
    except FootprintRunaway as stop:
        # Stopped in the test's own body (an iterate() loop, a phase): the run, if one is
        # open, records the stop; the test fails with what the watch saw.
        state.stopped(stop)
    finally:
        state.active = False
    if state.phases.failed:
        from pytest_membudget.render.stopped import phases_message

        raise BudgetExceeded(phases_message(item.nodeid, state.phases.to_list()))
    return None


def _call(item: pytest.Item, state: MemBudget) -> Generator[None, None, None]:
    """An async budgeted test: the async plugin (pytest-asyncio, anyio) runs, in its loop,
    a coroutine function put in place of the test's: it repeats the body (marker without the
    fixture) or awaits it once, and notes that it ran. A test no plugin ran gets an error."""
    __tracebackhide__ = True
    if not isinstance(item, pytest.Function) or not inspect.iscoroutinefunction(item.obj):
        yield
        return
    body = item.obj
    item.obj = state.async_test(body, repeat=FIXTURE not in item.fixturenames)
    item.stash[MEASURED_ASYNC_KEY] = True
    try:
        yield
    except (Exception, pytest.fail.Exception, pytest.skip.Exception):
        if state.body_ran:
            raise
        # not run: pytest's own "not natively supported", or nothing; the error below says
        # which plugin and marker to add
    finally:
        item.obj = body
    if not state.body_ran:
        state.fail_unrun_async_test()


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A marked sync test that does not request the fixture is itself the workload."""
    __tracebackhide__ = True
    state = pyfuncitem.stash.get(STATE_KEY, None)
    if (state is None or FIXTURE in pyfuncitem.fixturenames
            or pyfuncitem.stash.get(MEASURED_ASYNC_KEY, False)):
        return None  # async tests are repeated by the function pytest_runtest_call put in
    function = pyfuncitem.obj
    if inspect.isasyncgenfunction(function):
        pytest.fail(
            f"{pyfuncitem.nodeid}: the membudget marker cannot repeat an async generator "
            "test; write the test as `async def` with `await` (no `yield`)",
            pytrace=False,
        )
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    state.run(function, **kwargs)
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    state = item.stash.get(STATE_KEY, None)
    if state is None or call.when != "call":
        return (yield)
    result = state.result
    partial = result is None
    if partial:
        result = state.partial_result()
    data = result.to_dict() if result is not None else None
    if state.phases.rows:
        data = with_phases(data, state)
        partial = partial and state.used
    if state.runaway and data is not None:
        data["passed"] = False
        data["stopped"] = StopReason.CEILING.value
        data["runaway"] = cast("RunawayRecord",
                               {key: value for key, value in state.runaway.items()})
    if data is not None:
        from pytest_membudget.artifacts.junit import junit_properties

        item.user_properties.extend(junit_properties(data))
    report: pytest.TestReport = yield
    report.membudget = data  # type: ignore[attr-defined]
    left_early = partial and state.used and not state.disabled and report.passed
    if left_early:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid}: the membudget.iterate() (or aiterate()) loop was left before the "
            "run finished "
            f"({data['iterations'] if data else 0} measured iterations), so nothing was judged; "
            "let the loop run to its end instead of breaking out of it"
        )
    if partial and data is not None and report.failed and not state.runaway:
        from pytest_membudget.render.failure import series_lines

        stop = "the loop was left" if left_early else "the workload raised"
        report.sections.append((
            "membudget: samples before the run stopped",
            f"{data['iterations']} measured iterations before {stop}\n"
            + "\n".join(series_lines(result)),  # type: ignore[arg-type]
        ))
    return report


def with_phases(data: ResultRecord | None, state: MemBudget) -> ResultRecord:
    """A test's report data with its phases; a test that measured phases only gets the
    same keys as one that ran a workload, with no probes of its own."""
    phases = state.phases.to_list()
    if data is None:
        from pytest_membudget.measure.results import SCHEMA_VERSION

        data = {"schema": SCHEMA_VERSION, "passed": True, "complete": True, "iterations": 0,
                "warmup": 0, "window_start": 0, "stopped": "fixed", "seconds": 0.0,
                "failures": [], "inconclusive": [], "evidence": {}, "peak_evidence": {},
                "notes": [], "settings": {}, "probes": {}}
    data["phases"] = phases
    data["passed"] = bool(data.get("passed", True)) and not state.phases.failed
    return data


class ReportCollector:
    """Gathers every budgeted test's results where reports arrive: in the controller under
    pytest-xdist, since results travel as plain attributes of the reports."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.results: list[tuple[str, ResultRecord]] = config.stash[REPORTS_KEY]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "membudget", None)
        if report.when == "call" and data:
            self.results.append((report.nodeid, data))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    from pytest_membudget.render.session import (
        inconclusive_summary,
        notes_summary,
        summary_table,
    )

    results = config.stash.get(REPORTS_KEY, [])
    lines = summary_table(results, config.get_verbosity())
    # Shown at every verbosity: an inconclusive budget is a green test nobody would notice.
    unsettled = inconclusive_summary(results)
    notes = notes_summary(results)
    if lines or unsettled or notes:
        terminalreporter.write_sep("-", "membudget")
    for line in lines:
        terminalreporter.write_line(line)
    for line in unsettled:
        terminalreporter.write_line(line, yellow=True)
    for line in notes:
        terminalreporter.write_line(line, yellow=True)
