"""Tasks of the running asyncio event loop."""

from __future__ import annotations

import asyncio

from pytest_membudget.probes import Probe, ProbeError

NO_LOOP = (
    "the asyncio_tasks budget counts the pending tasks of the running asyncio event loop, and "
    "no loop runs where this test measures; make the test async (run by pytest-asyncio or "
    "anyio's asyncio backend) and measure with `await membudget.arun(fn)`, "
    "`async for i in membudget.aiterate()`, or the marker alone on the async test"
)


class AsyncioTasksProbe(Probe):
    """Tasks of the running loop that have not finished: a task started per iteration and
    never awaited or cancelled adds one per iteration. The loop is the one running when the
    run starts (the test's own loop under pytest-asyncio or anyio); the test's own task and
    the plugin's runner tasks are a constant offset."""

    name = "asyncio_tasks"

    def start(self) -> None:
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            raise ProbeError(NO_LOOP) from None

    def read(self) -> float:
        return float(len(asyncio.all_tasks(self._loop)))

    def stop(self) -> None:
        self._loop = None


PROBE_CLASSES: dict[str, type[Probe]] = {"asyncio_tasks": AsyncioTasksProbe}
