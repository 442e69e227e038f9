"""The sweep leaves no trace a test can observe: a suite whose tests read reference counts of
singletons and of an interned string around a call, and the interpreter's state (gc, tracing,
working directory, environment, signal handlers), passes alike plain and swept, in several
orders. A leaking test among them makes a full verdict run (whose repeats clear the type
cache) before others.

Real pytest processes with pytest-randomly: the orders are its seeds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.recording import run_pytest

pytestmark = pytest.mark.slow

pytest.importorskip("pytest_randomly")

CONFTEST = '''
import gc, os, signal, sys, tracemalloc

def environ():
    # pytest itself names the running test in PYTEST_CURRENT_TEST.
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


# The state before any test ran; every test must find it as it was.
START = {
    "threshold": gc.get_threshold(), "enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(), "tracing": tracemalloc.is_tracing(),
    "cwd": os.getcwd(), "environ": environ(),
    "signals": {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)},
}
'''

SUITE = '''
import gc, json, os, signal, sys, tracemalloc
import pytest
from conftest import START, environ

NAME = sys.intern("membudget_trace_name")
KEPT = []


class Holder:
    membudget_trace_name = 1


def work():
    json.dumps({"a": [1, 2, None, True, ()]})
    Holder().membudget_trace_name
    return sorted(["b", "a"])


# First calls fill caches (json's encoder, the type cache's entries for these lookups) that
# hold references; made at import, before any test and any sweep, so that a plain run in any
# order reads the same counts, and what a sweep leaves between tests still shows.
work()


@pytest.mark.parametrize("obj", [None, True, 0, 1, 255, ()], ids=repr)
def test_refcount_around_a_call(obj):
    before = sys.getrefcount(obj)
    work()
    assert sys.getrefcount(obj) == before


def test_interned_string_refcount():
    work()  # the lookups' first-time entries come before the count
    before = sys.getrefcount(NAME)
    work()
    assert sys.getrefcount(NAME) == before


def test_gc_state():
    assert gc.get_threshold() == START["threshold"]
    assert gc.isenabled() == START["enabled"]
    # After a full collection, as a test that reads the collector's lists makes first: on
    # Python 3.12 the interpreter's own frozen objects wait for one after the sweep's thaw.
    gc.collect()
    assert gc.get_freeze_count() == START["frozen"]


def test_tracing_state():
    assert tracemalloc.is_tracing() == START["tracing"]


def test_process_state():
    assert os.getcwd() == START["cwd"]
    assert environ() == START["environ"]
    assert {s: signal.getsignal(s) for s in START["signals"]} == START["signals"]


def test_leaks_so_a_full_verdict_runs():
    KEPT.append([object()])
'''


def outcomes(output: str) -> dict[str, str]:
    """test -> PASSED/FAILED from ``-rA``'s short summary."""
    return {m.group(2): m.group(1)
            for m in re.finditer(r"^(PASSED|FAILED|ERROR) \S+::(\S+)", output, re.M)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_plain_and_swept_outcomes_are_identical(tmp_path: Path, seed: int) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_trace.py").write_text(SUITE)
    order = ("-p", "randomly", "-o", "addopts=", f"--randomly-seed={seed}", "-rA")
    plain = run_pytest(tmp_path, *order)
    swept = run_pytest(tmp_path, *order, "--membudget-sweep=report")
    assert plain.returncode == 0, plain.stdout[-3000:]
    found = outcomes(swept.stdout)
    assert found == outcomes(plain.stdout), swept.stdout[-3000:]
    assert len(found) == 11 and set(found.values()) == {"PASSED"}
    # The leak was flagged, so a full verdict (whose repeats clear the type cache) ran
    # before some of the others (leaking or cut short, as the machine's load allows).
    assert re.search(r"membudget sweep \(report\):.* 1 flagged by the screen",
                     swept.stdout), swept.stdout
