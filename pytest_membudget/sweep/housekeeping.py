"""pytest's own records of a test call, kept flat while the sweep repeats the call.

pytest keeps what a test call prints, logs and warns, and monkeypatch keeps an undo entry per
change: each repeat would add to them, which reads as growth the test never made, and prints
the same output hundreds of times. While the sweep repeats a test, each repeat starts from
what the test's own first call left: output goes to a sink emptied after each call (or the
test's capture fixture is read empty), the log handlers and ``recwarn`` are emptied before
each call and given back the first call's records at the end, warnings go to a list emptied
after each call (for a test that reads recwarn, each call under fresh warning filters, which
warn again as on a first call), and monkeypatch's undo entries made by a repeat are undone
after it.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

import pytest

from pytest_membudget.sweep.typecache import TYPE_CACHE

CAPTURE_FIXTURES = ("capsys", "capsysbinary", "capfd", "capfdbinary", "capteesys")
#: Above every logging level: live logging (log_cli, log_file) stays silent during repeats.
SILENT = logging.CRITICAL + 1


class Wrap:
    """Makes the repeated body: the test's call between the resets."""

    def __init__(self, before: list[Callable[[], None]], after: list[Callable[[], None]],
                 fresh_warnings: bool) -> None:
        self.before, self.after = before, after
        # For a test that reads recwarn: each call under a fresh warnings state, so that a
        # "default" filter warns again as on a first call (entering catch_warnings clears the
        # registries of warnings already shown). Not for the others: a registry that grows
        # with each new message is a leak the sweep must see.
        self.warnings = warnings.catch_warnings if fresh_warnings else contextlib.nullcontext

    def synchronous(self, call: Callable[[], object]) -> Callable[[], None]:
        before, after, fresh = self.before, self.after, self.warnings

        def body() -> None:
            for step in before:
                step()
            try:
                with fresh():
                    call()
            finally:
                for step in after:
                    step()

        return body

    def asynchronous(self, call: Callable[[], Awaitable[object]]
                     ) -> Callable[[], Awaitable[None]]:
        before, after, fresh = self.before, self.after, self.warnings

        async def body() -> None:
            for step in before:
                step()
            try:
                with fresh():
                    await call()
            finally:
                for step in after:
                    step()

        return body


class Housekeeping:
    """``with Housekeeping(item) as wrap: body = wrap.synchronous(call)``: ``body`` runs
    ``call`` between the resets (``wrap.asynchronous`` for a coroutine function)."""

    def __init__(self, item: pytest.Function) -> None:
        self.item = item
        self.funcargs: dict[str, Any] = getattr(item, "funcargs", {})
        self.stack = contextlib.ExitStack()
        self.before: list[Callable[[], None]] = []
        self.after: list[Callable[[], None]] = []

    def __enter__(self) -> Wrap:
        # The type cache: cleared after each repeat of a full verdict and refilled at the end
        # (sweep/typecache.py); names built per call would otherwise fill it and read as
        # growth there.
        self.after.append(TYPE_CACHE.after_call)
        self.stack.callback(TYPE_CACHE.refill)
        self._output()
        self._logging()
        self._warnings()
        self._monkeypatch()
        return Wrap(self.before, self.after, "recwarn" in self.funcargs)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stack.close()

    def _output(self) -> None:
        fixtures = [self.funcargs[name] for name in CAPTURE_FIXTURES if name in self.funcargs]
        if fixtures:
            # The test reads its own output: each repeat starts with nothing unread.
            self.before += [fixture.readouterr for fixture in fixtures]
            self.stack.callback(lambda: [fixture.readouterr() for fixture in fixtures])
            return
        sink = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
        self.stack.enter_context(contextlib.redirect_stdout(sink))
        self.stack.enter_context(contextlib.redirect_stderr(sink))

        def empty() -> None:
            sink.seek(0)
            sink.truncate()

        self.after.append(empty)

    def _logging(self) -> None:
        plugin = self.item.config.pluginmanager.get_plugin("logging-plugin")
        if plugin is None:
            return
        for name in ("log_cli_handler", "log_file_handler"):
            handler = getattr(plugin, name, None)
            if isinstance(handler, logging.Handler):
                level = handler.level
                handler.setLevel(SILENT)
                self.stack.callback(handler.setLevel, level)
        for name in ("caplog_handler", "report_handler"):
            handler = getattr(plugin, name, None)
            records = getattr(handler, "records", None)
            stream = getattr(handler, "stream", None)
            if isinstance(records, list) and isinstance(stream, io.StringIO):
                self._keep_log(records, stream)

    def _keep_log(self, records: list[logging.LogRecord], stream: io.StringIO) -> None:
        # Emptied in place: caplog.records and caplog.get_records("call") are this list.
        saved, text = list(records), stream.getvalue()

        def empty() -> None:
            del records[:]
            stream.seek(0)
            stream.truncate()

        def restore() -> None:
            empty()
            records.extend(saved)
            stream.write(text)

        self.before.append(empty)
        self.stack.callback(restore)

    def _warnings(self) -> None:
        recorder = self.funcargs.get("recwarn")
        if isinstance(recorder, pytest.WarningsRecorder):
            saved = list(recorder.list)
            self.before.append(recorder.clear)

            def restore() -> None:
                recorder.clear()
                recorder.list.extend(saved)

            self.stack.callback(restore)
            return
        caught = self.stack.enter_context(warnings.catch_warnings(record=True))
        if caught is not None:
            self.after.append(caught.clear)

    def _monkeypatch(self) -> None:
        patcher = self.funcargs.get("monkeypatch")
        # The undo lists are monkeypatch's own; trimmed through its own undo().
        if not (isinstance(patcher, pytest.MonkeyPatch)
                and isinstance(getattr(patcher, "_setattr", None), list)
                and isinstance(getattr(patcher, "_setitem", None), list)):
            return
        marks = [0, 0]

        def mark() -> None:
            marks[:] = [len(patcher._setattr), len(patcher._setitem)]

        def undo_repeat() -> None:
            helper = pytest.MonkeyPatch()
            helper._setattr = patcher._setattr[marks[0]:]
            helper._setitem = patcher._setitem[marks[1]:]
            del patcher._setattr[marks[0]:]
            del patcher._setitem[marks[1]:]
            helper.undo()

        self.before.append(mark)
        self.after.append(undo_repeat)
