"""The native watch (verdict.native_watch, grows_clearly): budgets that are all blind to
native memory have RSS watched beside them; its clear growth makes a note, and the note reads
the same in the terminal and in JUnit."""

from __future__ import annotations

import numpy as np
from support import series

from pytest_membudget.artifacts.junit import junit_properties
from pytest_membudget.judge.spec import Budget, BudgetSpec
from pytest_membudget.judge.verdict import grows_clearly, native_watch
from pytest_membudget.render.session import note_reasons, notes_summary
from pytest_membudget.settings import default_run

X = series.x(800)


def spec(*probes: str) -> BudgetSpec:
    return BudgetSpec(tuple(Budget(p, "slope", 0.0, "t") for p in probes), default_run())


def test_rss_is_watched_only_beside_budgets_blind_to_native_memory() -> None:
    assert native_watch(spec("heap")) == "rss"
    assert native_watch(spec("py_blocks", "gc_objects")) == "rss"
    assert native_watch(spec("heap", "rss")) == ""
    assert native_watch(spec("heap", "malloc")) == ""
    assert native_watch(spec("threads")) == ""
    assert native_watch(spec()) == ""


def test_clear_rss_growth_is_seen_and_flat_rss_is_not() -> None:
    assert grows_clearly("rss", X, 50e6 + 32 * 1024.0 * X, 0.95) is not None
    flat = 50e6 + 4096.0 * (np.arange(len(X)) % 2)  # a page in and out
    assert grows_clearly("rss", X, flat, 0.95) is None


NOTE = {"kind": "native_growth", "probe": "rss", "slope": 32768.0, "ci": [30000.0, 35000.0],
        "budgeted": ["heap"], "would_judge": ["rss=0", "malloc=0"]}


def test_the_note_names_the_slope_what_heap_misses_and_the_budget_that_judges_it() -> None:
    [line] = note_reasons([NOTE])
    assert "32 KiB/iter [29.3 KiB/iter, 34.2 KiB/iter]" in line
    assert "native memory, outside what heap measures" in line
    assert "rss=0 or malloc=0" in line
    assert notes_summary([("t.py::test", {"notes": [NOTE]})])[1].startswith("  t.py::test: ")
    assert notes_summary([("t.py::test", {"notes": []})]) == []


def test_the_note_is_a_junit_property() -> None:
    props = dict(junit_properties({"passed": True, "notes": [NOTE], "probes": {}}))
    assert "native memory" in props["membudget.note"] and props["membudget.verdict"] == "pass"
