"""Under pytest-xdist, each budgeted test gets the verdict it gets in a serial run.

The runs are real pytest processes (xdist workers are processes anyway, and an in-process
serial run would also measure the outer pytest). Each run records, in the controller only,
the verdict of every probe of every budgeted test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.recording import read_rows, run_pytest, write_suite

pytest.importorskip("xdist")
pytestmark = pytest.mark.slow

WORKLOADS = '''
import os, threading
import pytest

KEEP = []
CACHE = {}
STOP = threading.Event()

def object_leak():
    KEEP.append({"step": len(KEEP), "data": [0] * 1000})

def rss_leak():
    KEEP.append(b"x" * 65536)

def clean_step():
    data = [bytearray(512) for _ in range(50)]
    return sum(len(d) for d in data)

def cache_fills(counter=[0]):
    counter[0] += 1
    if len(CACHE) < 20:
        CACHE[counter[0]] = [bytearray(4096)]

@pytest.mark.membudget(gc_objects=0, heap=0)
def test_object_leak(membudget):
    membudget.run(object_leak)

@pytest.mark.membudget(rss=0)
def test_rss_leak(membudget):
    membudget.run(rss_leak)

@pytest.mark.membudget(threads=0)
def test_thread_leak(membudget):
    membudget.run(lambda: threading.Thread(target=STOP.wait, daemon=True).start())

@pytest.mark.membudget(fds=0)
def test_fd_leak(membudget):
    membudget.run(lambda: KEEP.append(open(os.devnull)))

@pytest.mark.membudget(rss=0)
def test_clean_rss(membudget):
    membudget.run(clean_step)

@pytest.mark.membudget(heap=0)
def test_clean_heap(membudget):
    membudget.run(clean_step)

@pytest.mark.membudget(gc_objects=0, threads=0, fds=0)
def test_clean_counts(membudget):
    membudget.run(lambda: open(os.devnull).close())

@pytest.mark.membudget(heap=0, gc_objects=0)
def test_cache_fills_and_stops(membudget):
    membudget.run(cache_fills)

@pytest.mark.membudget(gc_objects=0)
def test_body_is_the_workload():
    sum(range(1000))
'''

LEAKING = {"test_object_leak", "test_rss_leak", "test_thread_leak", "test_fd_leak"}
CLEAN = {"test_clean_rss", "test_clean_heap", "test_clean_counts", "test_cache_fills_and_stops",
         "test_body_is_the_workload"}


def run_suite(where: Path, *args: str) -> dict[str, Any]:
    """Run the workloads in a fresh pytest process; return the recorded rows and the output."""
    results = where / "results.jsonl"
    if results.exists():
        results.unlink()
    completed = run_pytest(where, "-q", *args, "test_workloads.py")
    rows = [{"test": row["test"], "outcome": row["outcome"],
             "verdicts": {name: p["verdict"] for name, p in row["data"]["probes"].items()}}
            for row in read_rows(where)]
    return {"rows": rows, "stdout": completed.stdout + completed.stderr}


@pytest.fixture(scope="module")
def workloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = write_suite(tmp_path_factory.mktemp("xdist"), WORKLOADS)
    # Evidence reruns only explain failures; the verdicts are decided before them.
    (where / "pytest.ini").write_text("[pytest]\nmembudget_evidence = false\n")
    return where


@pytest.fixture(scope="module")
def serial(workloads: Path) -> dict[str, Any]:
    return run_suite(workloads, "-p", "no:xdist")


def by_test(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    tests = [row["test"] for row in run["rows"]]
    assert len(tests) == len(set(tests)), f"a test was reported twice: {tests}\n{run['stdout']}"
    return {row["test"]: row for row in run["rows"]}


def test_serial_run_tells_leaks_from_clean_loops(serial: dict[str, Any]) -> None:
    rows = by_test(serial)
    assert set(rows) == LEAKING | CLEAN, serial["stdout"]
    for test in LEAKING:
        assert rows[test]["outcome"] == "failed", serial["stdout"]
        assert set(rows[test]["verdicts"].values()) == {"fail"}, rows[test]
    for test in CLEAN:
        assert rows[test]["outcome"] == "passed", serial["stdout"]
        assert set(rows[test]["verdicts"].values()) == {"pass"}, rows[test]


@pytest.mark.parametrize("workers", ["2", "auto"])
def test_verdicts_under_xdist_match_the_serial_run(
    workloads: Path, serial: dict[str, Any], workers: str
) -> None:
    distributed = run_suite(workloads, "-n", workers)
    expected, got = by_test(serial), by_test(distributed)
    assert set(got) == set(expected), distributed["stdout"]
    for test, row in expected.items():
        assert got[test]["outcome"] == row["outcome"], (test, distributed["stdout"])
        assert got[test]["verdicts"] == row["verdicts"], (test, got[test], row)
    # The controller's summary shows the budgeted tests and, once, the workers that ran them.
    stdout = distributed["stdout"]
    assert stdout.count("budgeted test(s) on") == 1, stdout
    assert f"{len(expected)} budgeted test(s)" in stdout, stdout
    for test in LEAKING:  # -q lists only the failing tests in the membudget table
        assert f"test_workloads.py::{test} " in stdout, stdout


def test_worker_hooks_are_registered_only_with_xdist(pytester: pytest.Pytester) -> None:
    with_xdist = pytester.parseconfigure()
    assert with_xdist.pluginmanager.has_plugin("membudget-xdist")
    without = pytester.parseconfigure("-p", "no:xdist")
    assert not without.pluginmanager.has_plugin("membudget-xdist")
    pytester.makepyfile("""
        import pytest
        @pytest.mark.membudget(fds=0, iterations=40, warmup=1)
        def test_quick():
            pass
    """)
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert "xdist worker" not in result.stdout.str()


def four_quick_tests_on_one_core(pytester: pytest.Pytester) -> None:
    """Four budgeted test files; the conftest, imported by every worker, makes each worker
    report a single CPU core."""
    pytester.makeconftest("""
        import pytest_membudget.distributed as distributed
        distributed.available_cpus = lambda: 1
    """)
    pytester.makepyfile(**{f"test_part{i}": """
        import pytest
        @pytest.mark.membudget(fds=0, iterations=40, warmup=1)
        def test_quick():
            pass
    """ for i in range(4)})


def test_warns_once_when_workers_outnumber_cores(pytester: pytest.Pytester) -> None:
    four_quick_tests_on_one_core(pytester)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "--dist", "load")
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert "OversubscribedWarning" in out, out
    assert out.count("budgeted tests ran on 2 xdist workers") == 1, out
    assert "membudget: 4 budgeted test(s) on 2 of 2 xdist worker(s)" in out, out


def test_oversubscription_as_error_fails_the_run_cleanly(pytester: pytest.Pytester) -> None:
    four_quick_tests_on_one_core(pytester)
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "no:cacheprovider", "--dist", "load",
        "-W", "error::pytest_membudget.distributed.OversubscribedWarning")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert "INTERNALERROR" not in out, out
    assert "OversubscribedWarning (as error): membudget: budgeted tests ran on 2" in out, out
