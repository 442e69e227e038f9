"""Real probes in a fresh process (an in-process run would also measure the outer pytest)."""

from __future__ import annotations

import pytest
from support.recording import read_rows, run_pytest, write_suite

pytestmark = pytest.mark.slow

WORKLOADS = '''
import ctypes, ctypes.util, os, threading
import pytest

KEEP = []
LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None)
LIBC.malloc.restype = ctypes.c_void_p
LIBC.malloc.argtypes = [ctypes.c_size_t]
LIBC.free.argtypes = [ctypes.c_void_p]
LIBC.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]

def python_leak():
    KEEP.append(["x" * 100 + str(i) for i in range(20)])  # 20 new strings: ~3 KiB a call

def native_leak():
    pointer = LIBC.malloc(8192)
    LIBC.memset(pointer, 1, 8192)  # touch the pages, so they count as resident

def clean_step():
    data = [bytearray(512) for _ in range(50)]
    pointer = LIBC.malloc(8192)
    LIBC.memset(pointer, 1, 8192)
    LIBC.free(pointer)
    return sum(len(d) for d in data)

STOP = threading.Event()

def thread_leak():
    threading.Thread(target=STOP.wait, daemon=True).start()

def fd_leak():
    KEEP.append(open(os.devnull))

@pytest.mark.membudget(rss=0)
def test_python_leak(membudget):
    membudget.run(python_leak)

@pytest.mark.membudget(rss=0)
def test_native_leak(membudget):
    membudget.run(native_leak)

@pytest.mark.membudget(rss=0, heap=0, threads=0, fds=0)
def test_clean(membudget):
    membudget.run(clean_step)

@pytest.mark.membudget(threads=0, rss="1 MiB/iter")
def test_thread_leak(membudget):
    membudget.run(thread_leak)

@pytest.mark.membudget(fds=0)
def test_fd_leak(membudget):
    membudget.run(fd_leak)

def small_native_leak():
    pointer = LIBC.malloc(64)
    LIBC.memset(pointer, 1, 64)

@pytest.mark.membudget(malloc=0)
def test_small_native_leak(membudget):
    membudget.run(small_native_leak)

@pytest.mark.membudget(malloc=0)
def test_malloc_clean(membudget):
    membudget.run(clean_step)
'''


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    where = write_suite(tmp_path_factory.mktemp("real"), WORKLOADS)
    completed = run_pytest(where, "-q", "test_workloads.py")
    results = {row["test"]: row for row in read_rows(where)}
    results["_output"] = {"stdout": completed.stdout}
    return results


@pytest.mark.parametrize("test", ["test_python_leak", "test_native_leak"])
def test_rss_catches_leaks(outcome: dict[str, dict], test: str) -> None:
    row = outcome[test]
    assert row["outcome"] == "failed", outcome["_output"]["stdout"]
    assert row["data"]["probes"]["rss"]["verdict"] == "fail"
    assert row["data"]["probes"]["rss"]["slope"] > 0


def test_native_leak_is_invisible_to_tracemalloc_and_said_so(outcome: dict[str, dict]) -> None:
    stdout = outcome["_output"]["stdout"]
    assert "the growth is native memory" in stdout


def test_python_leak_evidence_names_the_line(outcome: dict[str, dict]) -> None:
    evidence = outcome["test_python_leak"]["data"]["evidence"]
    assert any("python_leak" in site["code"] or "KEEP.append" in site["code"]
               for site in evidence["sites"]), evidence


def test_clean_loop_passes(outcome: dict[str, dict]) -> None:
    row = outcome["test_clean"]
    assert row["outcome"] == "passed", outcome["_output"]["stdout"]
    assert all(p["verdict"] in ("pass", "inconclusive") for p in row["data"]["probes"].values())


def test_malloc_probe_sees_a_64_byte_native_leak(outcome: dict[str, dict]) -> None:
    leak = outcome["test_small_native_leak"]
    assert leak["outcome"] == "failed", outcome["_output"]["stdout"]
    assert 64 <= leak["data"]["probes"]["malloc"]["slope"] <= 128  # 64 B and a chunk header
    clean = outcome["test_malloc_clean"]
    assert clean["outcome"] == "passed", outcome["_output"]["stdout"]


def test_thread_and_fd_leaks(outcome: dict[str, dict]) -> None:
    assert outcome["test_thread_leak"]["data"]["probes"]["threads"]["verdict"] == "fail"
    assert outcome["test_fd_leak"]["data"]["probes"]["fds"]["verdict"] == "fail"
    stdout = outcome["_output"]["stdout"]
    assert "threads started and still alive" in stdout
    assert "descriptors opened and still open" in stdout and "/dev/null" in stdout
