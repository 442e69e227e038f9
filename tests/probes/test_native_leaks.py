"""Native leaks at the default settings, in a fresh process each: 80 B malloc'd per call in a
heap fragmented beforehand, so that glibc serves the leak from free chunks RSS already counts,
fails rss=0 (the malloc witness holds the pass back until RSS shows it); its twin that frees
what it allocates passes clearly; and where time runs out before RSS moves, the verdict is
inconclusive, never a pass."""

from __future__ import annotations

import pytest
from support.recording import read_rows, run_pytest, write_suite

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not __import__("sys").platform.startswith("linux"),
                                 reason="glibc's malloc")]

WORKLOADS = '''
import ctypes
import pytest

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
KEPT = []

def fragment(blocks):
    # Small native blocks, every other one freed: free chunks of the leak's size, inside
    # memory the process already has resident.
    pointers = [libc.malloc(80) for _ in range(blocks)]
    for pointer in pointers[1::2]:
        libc.free(pointer)
    KEPT.extend(pointers[::2])

def work():
    return sum(range(50))

def native_leak():
    work()
    libc.malloc(80)  # the pointer is dropped: 80 B a call, never freed

def native_twin():
    work()
    libc.free(libc.malloc(80))

@pytest.mark.membudget(rss=0)
def test_native_leak_rss(membudget):
    fragment(64_000)
    membudget.run(native_leak)

@pytest.mark.membudget(rss=0)
def test_native_twin_rss(membudget):
    fragment(64_000)
    membudget.run(native_twin)

@pytest.mark.membudget(rss=0, max_seconds=0.5)
def test_native_leak_rss_out_of_time(membudget):
    fragment(600_000)
    def slow_leak():
        sum(range(2000))
        native_leak()
    membudget.run(slow_leak)

def parser_arena():
    # A binding over a C parser: an arena malloc'd per call and never freed, 32 KiB of it
    # written; no Python object is involved.
    arena = libc.malloc(109 * 1024)
    ctypes.memset(arena, 1, 32 * 1024)

@pytest.mark.membudget(heap=0)
def test_native_leak_under_heap(membudget):
    membudget.run(parser_arena)

@pytest.mark.membudget(heap=0, py_blocks=0)
def test_native_twin_under_heap(membudget):
    membudget.run(native_twin)

KEPT = []

@pytest.mark.membudget(py_blocks=0)
def test_python_leak_under_py_blocks(membudget):
    membudget.run(lambda: KEPT.append([0] * 1000))
'''

TESTS = ("test_native_leak_rss", "test_native_twin_rss", "test_native_leak_rss_out_of_time",
         "test_native_leak_under_heap", "test_native_twin_under_heap",
         "test_python_leak_under_py_blocks")


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    where = write_suite(tmp_path_factory.mktemp("native"), WORKLOADS, "test_native.py")
    for test in TESTS:
        done = run_pytest(where, "-p", "no:randomly", "-q", f"test_native.py::{test}",
                          "--no-membudget-evidence", "--junit-xml", f"{test}.xml",
                          timeout=300)
        (where / f"{test}.out").write_text(done.stdout)
    rows = {row["test"]: row for row in read_rows(where)}
    for test, row in rows.items():
        row["terminal"] = (where / f"{test}.out").read_text()
        row["junit"] = (where / f"{test}.xml").read_text()
    return rows


def summary(row: dict) -> dict:
    return {key: value for key, value in row["data"].items() if key != "samples"}


def test_a_native_leak_in_a_fragmented_heap_fails_rss(rows) -> None:
    row = rows["test_native_leak_rss"]
    assert row["outcome"] == "failed", summary(row)
    assert row["data"]["probes"]["rss"]["verdict"] == "fail"
    assert list(row["data"]["probes"]) == ["rss"]  # the witness is not reported


def test_its_twin_that_frees_passes_clearly(rows) -> None:
    row = rows["test_native_twin_rss"]
    assert row["outcome"] == "passed", summary(row)
    assert row["data"]["stopped"] == "clear"
    assert row["data"]["probes"]["rss"]["verdict"] == "pass"


def test_a_witness_still_growing_at_the_cap_leaves_rss_inconclusive(rows) -> None:
    row = rows["test_native_leak_rss_out_of_time"]
    assert row["data"]["stopped"] == "cap", summary(row)
    assert row["data"]["probes"]["rss"]["verdict"] == "inconclusive", summary(row)


def test_a_native_leak_under_a_heap_budget_passes_with_a_note(rows) -> None:
    row = rows["test_native_leak_under_heap"]
    assert row["outcome"] == "passed", summary(row)
    [note] = row["data"]["notes"]
    assert note["probe"] == "rss" and note["ci"][0] > 16 * 1024, note
    assert list(row["data"]["probes"]) == ["heap"]  # RSS was watched, not reported
    assert "native memory, outside what heap measures" in row["terminal"]
    assert "rss=0 or malloc=0 would judge it" in row["terminal"]
    assert 'name="membudget.note"' in row["junit"]


def test_a_python_leak_its_budget_fails_gets_no_note_on_the_rss_it_grows(rows) -> None:
    # RSS grows with the kept lists, but that is the growth py_blocks failed on, not native
    # memory: the note would say what is not so.
    row = rows["test_python_leak_under_py_blocks"]
    assert row["outcome"] == "failed" and row["data"]["notes"] == [], summary(row)
    assert "native memory, outside" not in row["terminal"]


def test_a_clean_native_step_under_a_heap_budget_has_no_note(rows) -> None:
    row = rows["test_native_twin_under_heap"]
    assert row["outcome"] == "passed" and row["data"]["notes"] == [], summary(row)
    assert "native memory" not in row["terminal"]
