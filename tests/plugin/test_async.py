"""Async workloads under pytest-asyncio and anyio: ``await membudget.arun(fn)``,
``async for i in membudget.aiterate()`` and the marker alone on an async test. An async memory
leak, a task leak and a clean loop get their verdicts in every form, serially and under
pytest-xdist; the samples are taken between the awaits.

The runs are real pytest processes (an in-process run would also measure the outer pytest).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.recording import RECORDER, read_rows

pytest.importorskip("pytest_asyncio")
pytest.importorskip("anyio")
pytestmark = pytest.mark.slow

WORKLOADS = '''
import asyncio
import pytest

KEEP = []


async def worker():
    await asyncio.sleep(3600)


async def object_leak():
    await asyncio.sleep(0)
    KEEP.append([len(KEEP)])


async def task_leak():
    asyncio.create_task(worker())
    await asyncio.sleep(0)


async def clean_step():
    helper = asyncio.create_task(asyncio.sleep(0))
    data = [{"i": i} for i in range(20)]
    await helper
    return len(data)


@pytest.mark.membudget(gc_objects=0)
async def test_arun_object_leak(membudget):
    await membudget.arun(object_leak)


@pytest.mark.membudget(asyncio_tasks=0)
async def test_arun_task_leak(membudget):
    await membudget.arun(task_leak)


@pytest.mark.membudget(gc_objects=0, asyncio_tasks=0)
async def test_arun_clean(membudget):
    await membudget.arun(clean_step)


@pytest.mark.membudget(gc_objects=0)
async def test_aiterate_object_leak(membudget):
    async for _ in membudget.aiterate():
        await object_leak()


@pytest.mark.membudget(asyncio_tasks=0)
async def test_aiterate_task_leak(membudget):
    async for _ in membudget.aiterate():
        await task_leak()


@pytest.mark.membudget(gc_objects=0, asyncio_tasks=0)
async def test_aiterate_clean(membudget):
    async for _ in membudget.aiterate():
        await clean_step()


@pytest.mark.membudget(gc_objects=0)
async def test_body_object_leak():
    await object_leak()


@pytest.mark.membudget(asyncio_tasks=0)
async def test_body_task_leak():
    await task_leak()


@pytest.mark.membudget(gc_objects=0, asyncio_tasks=0)
async def test_body_clean():
    await clean_step()
'''

PLUGINS = {
    "asyncio": "pytestmark = pytest.mark.asyncio\n",
    "anyio": ("pytestmark = pytest.mark.anyio\n\n\n@pytest.fixture\n"
              "def anyio_backend():\n    return 'asyncio'\n"),
}
FORMS = ("arun", "aiterate", "body")
EXPECTED = {"object_leak": ("failed", "gc_objects", "fail"),
            "task_leak": ("failed", "asyncio_tasks", "fail"),
            "clean": ("passed", "asyncio_tasks", "pass")}


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def write_suites(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makeconftest(RECORDER)
    for plugin, header in PLUGINS.items():
        pytester.makepyfile(**{f"test_{plugin}_work": WORKLOADS + "\n\n" + header})


def run(pytester: pytest.Pytester, *args: str) -> tuple[subprocess.CompletedProcess[str],
                                                         dict[str, dict[str, Any]]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", *args],
        cwd=pytester.path, capture_output=True, text=True, timeout=600)
    assert "INTERNALERROR" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done, {row["nodeid"]: row for row in read_rows(Path(pytester.path))}


def check_verdicts(rows: dict[str, dict[str, Any]], output: str) -> None:
    for plugin in PLUGINS:
        for form in FORMS:
            for case, (outcome, probe, verdict) in EXPECTED.items():
                nodeid = f"test_{plugin}_work.py::test_{form}_{case}"
                row = rows.get(nodeid)
                assert row is not None, f"{nodeid} was not measured\n{output}"
                probes = row["data"]["probes"]
                assert (row["outcome"], probes[probe]["verdict"]) == (outcome, verdict), (
                    f"{nodeid}: {row['outcome']}, {probe} {probes[probe]['verdict']}\n{output}")
                assert row["data"]["iterations"] >= 32
                if case == "clean":
                    assert probes["gc_objects"]["verdict"] == "pass", nodeid


def test_verdicts_under_both_plugins_in_every_form(pytester: pytest.Pytester) -> None:
    write_suites(pytester)
    done, rows = run(pytester)
    output = done.stdout + done.stderr
    check_verdicts(rows, output)
    assert "12 failed, 6 passed" in output, output
    # the task leak's evidence names the coroutine and the line that created its tasks
    assert "asyncio tasks started and still pending:" in output
    assert "x worker (" in output
    written = (pytester.path / "test_asyncio_work.py").read_text().splitlines()
    line = written.index("    asyncio.create_task(worker())") + 1
    assert f"created at test_asyncio_work.py:{line} in task_leak" in output
    assert f"created at test_anyio_work.py:{line} in task_leak" in output
    assert "        asyncio.create_task(worker())" in output


def test_verdicts_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_suites(pytester)
    done, rows = run(pytester, "-n", "2")
    check_verdicts(rows, done.stdout + done.stderr)


SAMPLED_INSIDE = '''
import asyncio
import pytest
from pytest_membudget.probes import gcobjects

INSIDE = [False]
READS = []
original = gcobjects.GcObjectsProbe.read


def read(self):
    READS.append(INSIDE[0])
    return original(self)


gcobjects.GcObjectsProbe.read = read


async def workload():
    INSIDE[0] = True
    await asyncio.sleep(0)
    await asyncio.sleep(0.0001)
    INSIDE[0] = False


@pytest.mark.asyncio
@pytest.mark.membudget(gc_objects=0, iterations=64, warmup=2)
async def test_arun(membudget):
    await membudget.arun(workload)


@pytest.mark.asyncio
@pytest.mark.membudget(gc_objects=0, iterations=64, warmup=2)
async def test_aiterate(membudget):
    async for _ in membudget.aiterate():
        await workload()


@pytest.mark.asyncio
@pytest.mark.membudget(gc_objects=0, iterations=64, warmup=2)
async def test_body():
    await workload()


def test_every_sample_was_taken_between_the_awaits():
    assert len(READS) >= 3 * 34
    assert not any(READS)
'''


def test_samples_are_taken_between_the_awaits_never_inside(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_inside=SAMPLED_INSIDE)
    done, _ = run(pytester)
    assert "4 passed" in done.stdout, done.stdout + done.stderr
