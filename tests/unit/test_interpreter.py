"""What the plugin assumes of the interpreter's garbage collector, checked on the running one
and on simulated ones that break an assumption (an incremental collector as in Python 3.14.0
to 3.14.4, a freeze that does nothing, a collect that leaves cycles); free-threaded builds by
simulation (none can be installed where these tests run)."""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest

from pytest_membudget import interpreter
from pytest_membudget.interpreter import GcFacts, check_gc, gc_collect_reason, notes
from pytest_membudget.measure.gcpolicy import GarbageCollection
from pytest_membudget.vocabulary import GcPolicy


def test_the_running_interpreter_holds_both_assumptions() -> None:
    facts = check_gc()
    assert (facts.collects, facts.freezes, facts.checked) == (True, True, True)
    expected = "free-threaded" if interpreter.free_threaded() else "generational"
    if sys.version_info[:2] <= (3, 13):
        assert facts.kind == expected
    assert facts.kind in ("generational", "incremental", "free-threaded")


def test_the_check_leaves_the_collector_as_it_found_it() -> None:
    callback = lambda phase, info: None  # noqa: E731
    gc.callbacks.append(callback)
    try:
        check_gc()
        assert gc.get_freeze_count() == interpreter._INHERITED  # the interpreter's own (3.12)
        assert gc.callbacks[-1] is callback
    finally:
        gc.callbacks.remove(callback)


def test_a_freeze_the_program_made_is_not_thawed_to_check() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        facts = check_gc()
        # Not thawed: none of the frozen objects left the permanent generation, bar a few
        # that another thread freed meanwhile (pytest-xdist's worker thread frees message
        # buffers frozen here: 2 of 295,570 in one run under -n 2).
        assert frozen - 64 <= gc.get_freeze_count() <= frozen
        assert facts.checked is False
    finally:
        gc.unfreeze()
        interpreter.refreeze_own()


def fake_gc(**changed: Callable[..., Any]) -> types.SimpleNamespace:
    """The gc module with some functions replaced: an interpreter that behaves otherwise."""
    names = ("freeze", "unfreeze", "get_freeze_count", "get_objects", "collect", "callbacks")
    module = types.SimpleNamespace(**{name: getattr(gc, name) for name in names})
    for name, function in changed.items():
        setattr(module, name, function)
    return module


def test_an_incremental_collector_is_told_from_its_generations(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """3.14.0 to 3.14.4: a young survivor is nowhere ``get_objects(1)`` looks."""
    monkeypatch.setattr(interpreter, "free_threaded", lambda: False)
    monkeypatch.setattr(interpreter, "gc", fake_gc(
        get_objects=lambda generation=None: [] if generation == 1 else gc.get_objects()))
    facts = check_gc()
    assert (facts.kind, facts.collects, facts.freezes) == ("incremental", True, True)
    assert any("incremental garbage collector" in line for line in notes(facts))


def test_a_freeze_that_does_nothing_is_not_relied_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "gc", fake_gc(freeze=lambda: None,
                                                   get_freeze_count=lambda: 0))
    facts = check_gc()
    assert facts.freezes is False
    assert facts.collects is True
    assert any("gc.freeze()" in line for line in notes(facts))


def test_a_collect_that_leaves_cycles_turns_gc_collect_into_a_skip(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "gc", fake_gc(collect=lambda generation=2: 0))
    facts = check_gc()
    gc.collect()  # the one its thaw could not run: CPython 3.12 freezes its own objects again
    assert facts.collects is False
    reason = gc_collect_reason(facts)
    assert reason is not None and "gc='off'" in reason
    assert any("skipped" in line for line in notes(facts))


def test_where_the_freeze_is_not_relied_on_the_window_freezes_nothing() -> None:
    own = interpreter._INHERITED  # 0, or the immortal objects CPython 3.12 keeps frozen
    window = GarbageCollection(GcPolicy.COLLECT, freezes=False)
    window.open_window()
    assert gc.get_freeze_count() == own
    window.release()
    trusted = GarbageCollection(GcPolicy.COLLECT, freezes=True)
    trusted.open_window()
    try:
        assert gc.get_freeze_count() > own
    finally:
        trusted.release()
    assert not interpreter.session_froze()
    gc.collect()
    assert gc.get_freeze_count() == own


@pytest.mark.skipif(not interpreter._INHERITED,
                    reason="the interpreter keeps nothing frozen itself (CPython 3.12 does)")
def test_the_interpreters_own_frozen_objects_are_frozen_by_the_next_full_collection() -> None:
    # CPython 3.12 keeps its immortal objects frozen from the start: the window freezes over
    # them; its thaw gives them back with everything else, and the next full collection (a
    # test that counts objects collects first) freezes them again, where a plain run has them.
    assert not interpreter.session_froze()
    gc.collect()
    listed = len(gc.get_objects())
    window = GarbageCollection(GcPolicy.COLLECT, freezes=True)
    window.open_window()
    assert window.frozen
    window.release()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gc.get_freeze_count() == interpreter._INHERITED
    assert len(gc.get_objects()) < listed + interpreter._INHERITED


def test_refreezing_puts_back_what_the_interpreter_keeps_frozen() -> None:
    # The evidence's counts before and after its rerun must list the same objects.
    gc.collect()
    gc.freeze()
    gc.unfreeze()
    interpreter.refreeze_own()
    assert gc.get_freeze_count() == interpreter._INHERITED


def test_a_usual_interpreter_gets_no_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "free_threaded", lambda: False)
    assert notes(GcFacts(collects=True, freezes=True, kind="generational")) == []


def test_a_free_threaded_build_is_named_with_its_gil_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter.sysconfig, "get_config_var",
                        lambda name: 1 if name == "Py_GIL_DISABLED" else None)
    monkeypatch.setattr(interpreter.sys, "_is_gil_enabled", lambda: False, raising=False)
    assert interpreter.free_threaded() is True
    lines = notes(GcFacts(collects=True, freezes=True, kind="free-threaded"))
    assert len(lines) == 1
    assert "free-threaded build (GIL disabled)" in lines[0] and "malloc" in lines[0]
    monkeypatch.setattr(interpreter.sys, "_is_gil_enabled", lambda: True)
    assert "(GIL enabled)" in notes(GcFacts(True, True, "free-threaded"))[0]


def test_a_build_with_the_gil_is_not_free_threaded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter.sysconfig, "get_config_var", lambda name: None)
    monkeypatch.delattr(interpreter.sys, "_is_gil_enabled", raising=False)
    assert interpreter.free_threaded() is False
    assert interpreter.gil_enabled() is True
