"""The asyncio_tasks probe and the evidence for tasks left pending: what runs in them, where it
is defined and waits, and the line that created them."""

from __future__ import annotations

import asyncio
import sys
import traceback
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_membudget.evidence.tasks import TaskWatch, pending_tasks
from pytest_membudget.frames import STACK_FRAMES, is_user_frame
from pytest_membudget.probes import ProbeError
from pytest_membudget.probes.tasks import AsyncioTasksProbe

FOREVER = asyncio.Event()


async def worker() -> None:
    await FOREVER.wait()


def start_workers(count: int) -> list[asyncio.Task[None]]:
    return [asyncio.create_task(worker()) for _ in range(count)]  # the creating line


def test_the_probe_counts_the_pending_tasks_of_the_running_loop() -> None:
    async def main() -> list[float]:
        probe = AsyncioTasksProbe()
        probe.start()
        readings = [probe.read()]
        tasks = start_workers(3)
        readings.append(probe.read())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        readings.append(probe.read())
        probe.stop()
        return readings

    assert asyncio.run(main()) == [1.0, 4.0, 1.0]  # the main task, three workers, then none


def test_the_probe_where_no_loop_runs_says_why() -> None:
    with pytest.raises(ProbeError, match="no loop runs where this test measures; make the "
                                         "test async"):
        AsyncioTasksProbe().start()
    assert pending_tasks() == set()


def test_new_pending_tasks_are_grouped_with_their_creation_line() -> None:
    async def main() -> list[dict[str, Any]]:
        before = start_workers(2)
        depth = sys.get_coroutine_origin_tracking_depth()
        watch = TaskWatch(is_user_frame)
        watch.track()
        assert sys.get_coroutine_origin_tracking_depth() == max(depth, STACK_FRAMES)
        tasks = start_workers(5)
        await asyncio.sleep(0)  # the workers reach their await
        watch.stop()
        assert sys.get_coroutine_origin_tracking_depth() == depth
        found = watch.new_tasks(iterations=5)
        for task in before + tasks:
            task.cancel()
        await asyncio.gather(*before, *tasks, return_exceptions=True)
        return found

    found = asyncio.run(main())
    assert len(found) == 1  # the two tasks from before the watch are not listed
    entry = found[0]
    assert entry["coroutine"] == "worker" and entry["count"] == 5 and entry["per_iter"] == 1.0
    assert entry["defined_file"] == __file__
    assert entry["defined_line"] == worker.__code__.co_firstlineno
    assert entry["waiting_line"] == worker.__code__.co_firstlineno + 1
    assert entry["created_file"] == __file__
    assert entry["created_function"] in ("<listcomp>", "start_workers")  # 3.12 inlines it
    assert entry["created_code"].endswith("# the creating line")


def test_a_debug_loop_s_creation_traceback_stands_in_for_a_missing_origin() -> None:
    async def plain() -> None:
        pass

    coro = plain()
    # innermost last: the library's frame that made the task, under the user's call
    stack = traceback.StackSummary.from_list([("/app/service.py", 42, "handle", ""),
                                              ("/lib/site-packages/lib.py", 3, "spawn", "")])
    task = SimpleNamespace(get_coro=lambda: coro, _source_traceback=stack)
    watch = TaskWatch(lambda filename: "site-packages" not in filename)
    created = watch.creation(coro, task)
    coro.close()
    assert created == ("/app/service.py", 42, "handle")
    assert watch.creation(SimpleNamespace(), SimpleNamespace()) is None
