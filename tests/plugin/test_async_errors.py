"""Async mistakes get a clear error that says what to use instead; never a silent pass."""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_asyncio")
pytest.importorskip("anyio")

HEADER = """
import asyncio
import pytest

async def work():
    await asyncio.sleep(0)

def step():
    pass
"""


def run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(HEADER + source)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    return result


def no_unawaited_warning(result: pytest.RunResult) -> None:
    """The error says it all: no coroutine is left for a 'never awaited' warning on top."""
    assert "RuntimeWarning: coroutine" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize(("call", "message"), [
    ("membudget.run(work)", "*membudget.run() got the async function work: calling it only "
                            "creates a coroutine, which run() would not await; in an async "
                            "test write `await membudget.arun(work, ...)`*"),
    ("membudget.run(work())", "*membudget.run() takes the function to repeat, and got the "
                              "coroutine work(...), which can be awaited only once; pass the "
                              "async function itself: `await membudget.arun(work, ...)`*"),
    ("membudget.run(lambda: work())", "*membudget.run() called *<lambda>, which returned "
                                      "coroutine work: run() does not await it*"),
    ("membudget.arun(work)", "*membudget.arun() awaits the workload in the running asyncio "
                             "event loop, and no loop runs here; write `await membudget.arun"
                             "(fn)` in an async test*`membudget.run(fn)` for a sync workload*"),
])
def test_sync_test_mistakes(pytester: pytest.Pytester, call: str, message: str) -> None:
    result = run(pytester, f"""
@pytest.mark.membudget(gc_objects=0, iterations=40, warmup=1)
def test_mistake(membudget):
    {call}
""")
    result.assert_outcomes(failed=1, errors=0)
    result.stdout.fnmatch_lines([f"*test_mistake*{message}"])
    no_unawaited_warning(result)


@pytest.mark.parametrize(("call", "message"), [
    ("await membudget.arun(step)", "*membudget.arun() awaits what the workload returns, and "
                                   "step returned NoneType, not an awaitable; for a sync "
                                   "workload write membudget.run(step, ...)*"),
    ("await membudget.arun(work())", "*membudget.arun() takes the function to repeat, and got "
                                     "the coroutine work(...)*"),
    ("membudget.arun(work)", "*membudget.arun() was called but what it returned was never "
                             "awaited, so nothing was measured; write `await "
                             "membudget.arun(fn)`*"),
])
def test_async_test_mistakes(pytester: pytest.Pytester, call: str, message: str) -> None:
    result = run(pytester, f"""
@pytest.mark.asyncio
async def test_mistake(membudget):
    {call}
""")
    assert result.ret != 0
    result.stdout.fnmatch_lines([f"*test_mistake*{message}"])


def test_asyncio_tasks_where_no_loop_runs_says_why(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
@pytest.mark.membudget(heap=0, asyncio_tasks=0, iterations=40, warmup=1)
def test_sync(membudget):
    membudget.run(step)

def test_tracing_was_stopped():
    import tracemalloc
    assert not tracemalloc.is_tracing()
""")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines([
        "*test_sync: the asyncio_tasks budget counts the pending tasks of the running asyncio "
        "event loop, and no loop runs where this test measures; make the test async*"])


@pytest.mark.parametrize("uses_fixture", [False, True])
def test_an_async_test_no_plugin_runs_is_an_error(pytester: pytest.Pytester,
                                                  uses_fixture: bool) -> None:
    body = ("async def test_async(membudget):\n    await membudget.arun(work)" if uses_fixture
            else "async def test_async():\n    await work()")
    result = run(pytester, f"""
@pytest.mark.membudget(gc_objects=0)
{body}
""", "-p", "no:asyncio", "-p", "no:anyio")
    result.assert_outcomes(failed=1, errors=0)
    result.stdout.fnmatch_lines([
        "*test_async is an async test that uses membudget, and no async plugin ran it, so "
        "nothing was measured: install pytest-asyncio and mark the test @pytest.mark.asyncio*"])


def test_an_unmarked_async_test_is_an_error_even_with_the_plugins_installed(
        pytester: pytest.Pytester) -> None:
    # strict mode (the default of both plugins): an async test without their marker is theirs
    # to ignore; it must not pass unmeasured
    result = run(pytester, """
@pytest.mark.membudget(gc_objects=0)
async def test_async():
    await work()
""")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_async is an async test that uses membudget, and no "
                                 "async plugin ran it*"])


def test_an_async_generator_test_is_refused(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
@pytest.mark.membudget(gc_objects=0)
async def test_agen():
    yield
""", "-p", "no:asyncio", "-p", "no:anyio")
    assert result.ret != 0 and "passed" not in result.stdout.lines[-1]
    result.stdout.fnmatch_lines(["*test_agen: the membudget marker cannot repeat an async "
                                 "generator test*"])


def test_leaving_the_aiterate_loop_early_is_a_failure(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
@pytest.mark.asyncio
@pytest.mark.membudget(gc_objects=0)
async def test_left(membudget):
    async for i in membudget.aiterate():
        if i == 3:
            break
        await work()

def test_collector_released():
    import gc
    from pytest_membudget import interpreter
    assert not interpreter.session_froze()  # nothing of the plugin's left frozen
""")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*test_left: the membudget.iterate() (or aiterate()) loop was "
                                 "left before the run finished*"])
