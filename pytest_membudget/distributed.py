"""pytest-xdist support: worker facts travel to the controller, which reports on them.

Per-test results need nothing from this module: they are plain JSON-safe attributes of the
test reports, which xdist carries from the workers unchanged. What a report cannot carry is a
fact about the worker itself (its process, its CPUs, how many budgeted tests it ran). Each
worker puts those in ``config.workeroutput`` when its session finishes; the controller reads
them in ``pytest_testnodedown``, prints one summary line, and warns once when more workers ran
budgeted tests on one machine than it has CPU cores: contending workers slow each other down,
which adds noise to ``iter_time`` and stretches auto runs towards their time cap.

The hooks here are xdist hooks, so :func:`register` adds them only when xdist is present.
``pytest_testnodedown`` is not a hook pytest knows without xdist, and pluggy rejects a plugin
that implements an unknown hook.
"""

from __future__ import annotations

import os
import socket
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypedDict, cast

import pytest

if TYPE_CHECKING:  # types only
    from pytest_membudget.measure.records import ResultRecord


#: Key in ``config.workeroutput``; its value is a plain dict (execnet carries only plain data).
OUTPUT_KEY = "membudget"
#: Name under which the hooks are registered with the plugin manager.
PLUGIN_NAME = "membudget-xdist"


class WorkerFacts(TypedDict):
    """What a worker tells the controller about itself: its process, its host, the CPU cores
    it may run on, the budgeted tests it ran and their seconds."""

    pid: int
    host: str
    cpus: int
    budgeted: int
    seconds: float


class OversubscribedWarning(pytest.PytestWarning):
    """Budgeted tests ran on more xdist workers than the machine has CPU cores."""


def is_worker(config: pytest.Config) -> bool:
    """True inside a pytest-xdist worker (session-level files are the controller's job)."""
    return hasattr(config, "workerinput")


def available_cpus() -> int:
    """CPU cores this process may run on (its affinity mask, where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def worker_facts(reports: Iterable[tuple[str, ResultRecord]]) -> WorkerFacts:
    """What a worker tells the controller about itself, as plain data."""
    results = list(reports)
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "cpus": available_cpus(),
        "budgeted": len(results),
        "seconds": round(sum(float(data.get("seconds", 0.0)) for _, data in results), 3),
    }


def summary_line(workers: Mapping[str, WorkerFacts]) -> str:
    """One line for the terminal summary: budgeted tests per worker."""
    busy = {wid: facts for wid, facts in sorted(workers.items()) if facts.get("budgeted")}
    total = sum(int(facts["budgeted"]) for facts in busy.values())
    per_worker = ", ".join(
        f"{wid} (pid {facts.get('pid', '?')}): {facts['budgeted']}" for wid, facts in busy.items()
    )
    cpus = sorted({int(facts.get("cpus", 0)) for facts in workers.values()})
    cores = "/".join(str(c) for c in cpus) or "?"
    return (
        f"membudget: {total} budgeted test(s) on {len(busy)} of {len(workers)} xdist worker(s)"
        f" [{per_worker or 'none'}]; {cores} CPU core(s) per machine"
    )


def oversubscription(workers: Mapping[str, WorkerFacts]) -> str | None:
    """A warning text when, on some machine, more workers ran budgeted tests than it has
    CPU cores; None otherwise."""
    by_host: dict[str, list[WorkerFacts]] = {}
    for facts in workers.values():
        if facts.get("budgeted"):
            by_host.setdefault(str(facts.get("host", "")), []).append(facts)
    for host, busy in sorted(by_host.items()):
        cpus = min(int(facts.get("cpus", 0)) or 1 for facts in busy)
        if len(busy) > cpus:
            return (
                f"membudget: budgeted tests ran on {len(busy)} xdist workers on "
                f"{host or 'one host'}, which has {cpus} CPU core(s); workers competing for "
                "cores add noise to iter_time and stretch auto runs towards max_seconds, so "
                f"more verdicts may end inconclusive. Run with -n {cpus} or fewer, or keep "
                "heavy budgeted tests on one worker with --dist loadgroup and "
                "@pytest.mark.xdist_group(name=...)"
            )
    return None


class XdistHooks:
    """Both sides of the exchange; each method acts only on its own side."""

    def __init__(self, config: pytest.Config, reports: list[tuple[str, ResultRecord]]) -> None:
        self.config = config
        self.reports = reports
        self.workers: dict[str, WorkerFacts] = {}
        #: The oversubscription warning, when a warnings filter turned it into an error.
        self.error: str | None = None

    # worker side -------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:
            output[OUTPUT_KEY] = worker_facts(self.reports)
            return
        message = oversubscription(self.workers)
        if message is None:
            return
        try:
            warnings.warn(OversubscribedWarning(message), stacklevel=1)
        except OversubscribedWarning:
            # filterwarnings = error (or -W error) asked for a failure: give one, with the
            # message in the summary, instead of an internal error out of this hook.
            self.error = message
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    # controller side ---------------------------------------------------------------------
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        facts = output.get(OUTPUT_KEY)
        if isinstance(facts, dict):  # what worker_facts made, carried as plain data
            self.workers[str(node.gateway.id)] = cast(WorkerFacts, facts)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        if config.get_verbosity() <= -2 or not self.workers:
            return
        if any(facts.get("budgeted") for facts in self.workers.values()):
            terminalreporter.write_line(summary_line(self.workers))
        if self.error is not None:
            terminalreporter.write_line(f"OversubscribedWarning (as error): {self.error}",
                                        red=True)


def register(config: pytest.Config, reports: list[tuple[str, ResultRecord]]) -> None:
    """Add the xdist hooks when pytest-xdist is active in this run."""
    if config.pluginmanager.hasplugin("xdist") and not config.pluginmanager.has_plugin(
        PLUGIN_NAME
    ):
        config.pluginmanager.register(XdistHooks(config, reports), PLUGIN_NAME)
