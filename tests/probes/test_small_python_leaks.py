"""Small Python leaks at the default settings, in a fresh process: one float kept per
iteration of a sub-millisecond step fails rss=0 (the auto run goes on past 2000 iterations
until RSS shows it) and py_blocks=0 (one block per iteration); gc_objects cannot see it; a
clean step still passes with a clear verdict."""

from __future__ import annotations

import pytest
from support.recording import read_rows, run_pytest, write_suite

pytestmark = pytest.mark.slow

WORKLOADS = '''
import time
import pytest

KEEP = []

def work():
    return sum(range(300))

def float_leak():
    work()
    KEEP.append(time.perf_counter())  # a new float each call: 32 bytes, one block

def clean():
    work()

@pytest.mark.membudget(rss=0)
def test_float_leak_rss(membudget):
    membudget.run(float_leak)

ROOM = []

@pytest.mark.membudget(rss=0)
def test_float_leak_rss_with_room(membudget):
    # Free room in the interpreter's pools: 200,000 floats made, one in 400 kept, so that no
    # pool empties; the leak's floats reuse their blocks for ~200,000 iterations before RSS
    # gets a new page. RSS reads flat over any window shorter than that.
    made = [float(i) for i in range(200_000)]
    ROOM.extend(made[::400])
    del made
    membudget.run(float_leak)

@pytest.mark.membudget(py_blocks=0)
def test_float_leak_py_blocks(membudget):
    membudget.run(float_leak)

@pytest.mark.membudget(gc_objects=0)
def test_float_leak_gc_objects(membudget):
    membudget.run(float_leak)

@pytest.mark.membudget(rss=0, py_blocks=0)
def test_clean(membudget):
    membudget.run(clean)
'''


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    where = write_suite(tmp_path_factory.mktemp("small"), WORKLOADS, "test_small.py")
    # One test per process: what one test leaves in the allocators is not the next one's.
    for test in ("test_float_leak_rss", "test_float_leak_rss_with_room",
                 "test_float_leak_py_blocks", "test_float_leak_gc_objects", "test_clean"):
        run_pytest(where, "-p", "no:randomly", "-q", f"test_small.py::{test}",
                   "--no-membudget-evidence", timeout=300)
    return {row["test"]: row for row in read_rows(where)}


def test_one_float_per_iteration_fails_rss_at_the_default_settings(rows) -> None:
    row = rows["test_float_leak_rss"]
    assert row["outcome"] == "failed" and row["data"]["probes"]["rss"]["verdict"] == "fail", (
        {key: value for key, value in row["data"].items() if key != "samples"})
    # RSS shows 32 B/iter only once pymalloc's free pools are used up: past the reference
    # length of 2000 iterations, which an auto run no longer stops at.
    assert row["data"]["iterations"] > 2000


def test_a_flat_rss_is_no_pass_while_python_blocks_grow(rows) -> None:
    """With room in the pools, RSS stays flat for far longer than a verdict needs; the
    py_blocks count sampled beside it (unreported) holds the pass back until RSS shows it."""
    row = rows["test_float_leak_rss_with_room"]
    assert row["outcome"] == "failed" and row["data"]["probes"]["rss"]["verdict"] == "fail", (
        {key: value for key, value in row["data"].items() if key != "samples"})
    assert list(row["data"]["probes"]) == ["rss"]


def test_py_blocks_sees_one_block_per_iteration(rows) -> None:
    probe = rows["test_float_leak_py_blocks"]["data"]["probes"]["py_blocks"]
    assert probe["verdict"] == "fail" and 0.9 <= probe["slope"] <= 1.1


def test_gc_objects_cannot_see_floats(rows) -> None:
    assert rows["test_float_leak_gc_objects"]["outcome"] == "passed"


def test_a_clean_step_passes_clearly(rows) -> None:
    row = rows["test_clean"]
    assert row["outcome"] == "passed"
    assert row["data"]["stopped"] == "clear"
    assert all(p["verdict"] == "pass" for p in row["data"]["probes"].values())
