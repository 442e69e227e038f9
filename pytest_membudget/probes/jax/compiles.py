"""The compilations of the process, counted from jax.monitoring's backend compile events,
and for the evidence, which jitted functions compiled in the window, from which line, and
what changed between their calls (JAX's own explanation of each tracing cache miss, which
this log turns on while it runs and keeps out of the user's log).

One listener is registered with jax.monitoring per process, once (jax.monitoring cannot
unregister a listener in every version); it counts for the log that is open, if any.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter, deque
from typing import Any

from pytest_membudget.frames import is_own, is_user_frame, source_line
from pytest_membudget.probes.jax.arrays import is_jax
from pytest_membudget.probes.jax.explain import HEADER, parse, strongest
from pytest_membudget.probes.records import CompileRow, CompilesFound, Explanation

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
EXPLAIN_OPTION = "jax_explain_cache_misses"
#: The modules whose loggers write the explanations: the tracing cache's (jax 0.5 and later;
#: pjit's before), and the persistent cache's, which also speak up under the option.
EXPLAINERS = ("jax._src.interpreters.partial_eval", "jax._src.pjit")
CACHE_LOGGERS = ("jax._src.compiler", "jax._src.compilation_cache")

_active: CompileLog | None = None
_registered = False


def _on_duration(event: str, duration: float, *args: Any, **kwargs: Any) -> None:
    log = _active
    if log is not None and event == BACKEND_COMPILE:
        log.compiled(str(kwargs.get("fun_name", "?")))


def _register(jax: Any) -> None:
    global _registered
    if not _registered:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _registered = True


def call_site() -> tuple[str, int] | None:
    """The user's line that is running now (the line whose call compiles), or None."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if not is_jax(name) and not is_own(name) and is_user_frame(name):
            return name, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None


class _Catch(logging.Filter):
    """Takes JAX's explanations for the log; lets them through only where the user had the
    option on already."""

    def __init__(self, log: CompileLog, passes: bool) -> None:
        super().__init__()
        self.log, self.passes = log, passes

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith(HEADER):
            self.log.explained(message)
        elif record.levelno < logging.WARNING or "cache" not in message.lower():
            return True
        return self.passes


class CompileLog:
    """Counts compilations from ``start`` to ``stop``; from ``open_window`` on, also which
    function compiled where, and the latest explanations of each."""

    def __init__(self, jax: Any) -> None:
        self.jax = jax
        self.count = 0
        self.recording = False
        self.functions: Counter[str] = Counter()
        self.sites: dict[str, Counter[tuple[str, int]]] = {}
        #: Each function's latest three explanations: the remedy addresses the strongest
        #: kind of change among them, the text shows the latest one's changes.
        self.explanations: dict[str, deque[Explanation]] = {}
        self.misses: Counter[str] = Counter()
        #: Each function's arguments as its latest explained compilation passed them.
        self.latest: dict[str, dict[str, str]] = {}
        self.option_was: bool | None = None
        self.catch: _Catch | None = None

    def start(self) -> None:
        global _active
        _register(self.jax)
        _active = self
        config = self.jax.config
        try:
            self.option_was = bool(getattr(config, EXPLAIN_OPTION))
            config.update(EXPLAIN_OPTION, True)
        except (AttributeError, KeyError, ValueError):
            self.option_was = None  # a JAX without the option: counts, no explanations
        self.catch = _Catch(self, passes=bool(self.option_was))
        for name in (*EXPLAINERS, *CACHE_LOGGERS):
            logging.getLogger(name).addFilter(self.catch)

    def open_window(self) -> None:
        self.recording = True
        self.functions.clear()
        self.sites.clear()
        self.explanations.clear()
        self.misses.clear()

    def compiled(self, name: str) -> None:
        self.count += 1
        if self.recording:
            self.functions[name] += 1
            site = call_site()
            if site is not None:
                self.sites.setdefault(name, Counter())[site] += 1

    def explained(self, text: str) -> None:
        found = parse(text)
        if found is None or not found.get("function"):
            return
        name = f"jit({found['function']})"
        # JAX compares with the closest key it holds, which need not be the previous call's:
        # the change between consecutive compilations is what a person reads.
        latest = self.latest.setdefault(name, {})
        for change in found["changes"]:
            change["before"] = latest.get(change["arg"], change["before"])
            latest[change["arg"]] = change["now"]
        if not self.recording:
            return
        self.misses[name] += 1
        self.explanations.setdefault(name, deque(maxlen=3)).append(found)

    def evidence(self) -> CompilesFound:
        """The functions that compiled in the window, most compilations first (eight: those
        that compiled most are where the time goes)."""
        rows = []
        for name, count in self.functions.most_common(8):
            row: CompileRow = {"function": name, "compiles": count}
            site = self.sites.get(name)
            if site:
                (row["call_file"], row["call_line"]), row["call_count"] = site.most_common(1)[0]
            explained = list(self.explanations.get(name, ()))
            if explained:
                _explain(row, explained, self.misses[name])
            call_file, call_line = row.get("call_file"), row.get("call_line")
            if call_file and call_line is not None:
                row["call_code"] = source_line(call_file, call_line)
            rows.append(row)
        return {"functions": rows, "total": sum(self.functions.values()),
                "explanations": self.option_was is not None}

    def stop(self) -> None:
        global _active
        if _active is self:
            _active = None
        if self.catch is not None:
            for name in (*EXPLAINERS, *CACHE_LOGGERS):
                logging.getLogger(name).removeFilter(self.catch)
            self.catch = None
        if self.option_was is False:
            self.jax.config.update(EXPLAIN_OPTION, False)
        self.option_was = None


def _explain(row: CompileRow, explained: list[Explanation], misses: int) -> None:
    """Put a function's explanations (oldest first) in its row: the strongest kind of change
    among them, how many compilations were explained, the latest one's changes, and where it
    says the function is defined and called."""
    latest = explained[-1]
    kind = latest["kind"]
    for earlier in explained[:-1]:
        kind = strongest(kind, earlier["kind"])
    row.update({"kind": kind, "explained": misses, "changes": latest["changes"]})
    if latest.get("defined_file") is not None:
        row["defined_file"] = latest.get("defined_file")
    if latest.get("defined_line") is not None:
        row["defined_line"] = latest.get("defined_line")
    if latest.get("call_file") is not None:
        row["call_file"] = latest.get("call_file")
    if latest.get("call_line") is not None:
        row["call_line"] = latest.get("call_line")
