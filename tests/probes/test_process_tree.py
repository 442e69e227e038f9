"""The process-tree probes on real processes, in a fresh pytest run, serially and under
pytest-xdist: leaked processes and growing workers are caught with a per-process table;
workers that come and go are not growth; a worker's descendants are its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.recording import read_rows, run_pytest, write_suite

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)"),
]

WORKLOADS = '''
import multiprocessing, os
import pytest
from pytest_membudget.probes import create, procfs

ctx = multiprocessing.get_context("fork")
HISTORY = []

def grow(size, keep):
    block = bytearray(b"x") * size  # written, so its pages are the worker's own
    if keep:
        HISTORY.append(block)
    return len(HISTORY)

def serve(conn):
    kept = []
    while True:
        size = conn.recv()
        if size is None:
            return
        kept.append(bytearray(b"x") * size)
        conn.send(len(kept))

@pytest.fixture
def pools():
    made = []
    def make(**kwargs):
        made.append(ctx.Pool(2, **kwargs))
        return made[-1]
    yield make
    for pool in made:
        pool.terminate()
        pool.join()

@pytest.fixture
def servers():
    made = []
    def start():
        here, there = ctx.Pipe()
        process = ctx.Process(target=serve, args=(there,), daemon=True)
        process.start()
        made.append((process, here))
        return process, here
    yield start
    for process, here in made:
        if process.is_alive():
            here.send(None)
        process.join(5)

@pytest.mark.membudget(children=0, warmup=2, iterations=40)
def test_process_per_step_never_joined(membudget, servers):
    membudget.run(servers)

@pytest.mark.membudget(children=0, children_uss=0, warmup=2, iterations=120)
def test_process_per_step_joined(membudget):
    def step():
        process = ctx.Process(target=grow, args=(65536, True))
        process.start()
        process.join()
    membudget.run(step)

@pytest.mark.membudget(children_uss=0, tree_pss=0, warmup=10)
def test_pool_workers_keep_results(membudget, pools):
    pool = pools()
    membudget.run(pool.starmap, grow, [(16384, True)] * 4, 1)

@pytest.mark.membudget(children_uss=0, children=0, warmup=10)
def test_pool_workers_return_results(membudget, pools):
    pool = pools()
    membudget.run(pool.starmap, grow, [(16384, False)] * 4, 1)

@pytest.mark.membudget(children_uss=0, children=0, warmup=10)
def test_recycled_pool_workers(membudget, pools):
    pool = pools(maxtasksperchild=4)
    membudget.run(pool.starmap, grow, [(16384, True)] * 4, 1)

@pytest.mark.membudget(children_uss=0, warmup=2, iterations=200)
def test_a_growing_server_and_one_that_exits(membudget, servers):
    growing, to_growing = servers()
    exiting, to_exiting = servers()
    done = []
    def step():
        to_growing.send(65536)
        to_growing.recv()
        if len(done) == 100:
            to_exiting.send(None)
            exiting.join()
        done.append(1)
    membudget.run(step)

def test_descendants_are_this_workers_own():
    siblings = procfs.child_pids(os.getppid())
    probe = create("children")
    probe.start()
    try:
        probe.sync()
        count = probe.read()
    finally:
        probe.stop()
    mine = procfs.descendants(os.getpid())
    assert os.getpid() in siblings and not set(siblings) & set(mine)
    assert count == len(mine)
    print("SIBLINGS", len(siblings), "COUNT", count)
'''


def run_suite(where: Path, *args: str) -> tuple[dict[str, dict], str, dict]:
    write_suite(where, WORKLOADS)
    completed = run_pytest(where, "-q", "-s", "-rA", "--membudget-json=report.json",
                           "test_workloads.py", *args)
    rows = {row["test"]: row for row in read_rows(where)}
    report = json.loads((where / "report.json").read_text())
    return rows, completed.stdout + completed.stderr, report


@pytest.fixture(scope="module", params=["serial", "xdist"])
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if request.param == "xdist":
        pytest.importorskip("xdist")
        args: tuple[str, ...] = ("-n", "2")
    else:
        args = ("-p", "no:xdist")
    return run_suite(tmp_path_factory.mktemp(request.param), *args)


def probe(rows: dict[str, dict], test: str, name: str) -> dict:
    return rows[test]["data"]["probes"][name]


def test_a_process_per_step_never_joined_fails_children(suite) -> None:
    rows, output, _ = suite
    assert rows["test_process_per_step_never_joined"]["outcome"] == "failed", output
    assert probe(rows, "test_process_per_step_never_joined", "children")["slope"] == 1.0
    assert "children: processes started during the window (" in output
    assert "started at iteration" in output


def test_growing_workers_fail_children_uss_with_a_table(suite) -> None:
    rows, output, _ = suite
    row = rows["test_pool_workers_keep_results"]
    assert row["outcome"] == "failed", output
    assert row["data"]["probes"]["children_uss"]["verdict"] == "fail"
    table = row["data"]["evidence"]["processes"]["children_uss"]
    growth = [r["last"] - r["first"] for r in table["rows"]]
    assert growth == sorted(growth, reverse=True) and growth[0] > 0
    assert all(r["name"].startswith("ForkPoolWorker") for r in table["rows"])
    assert "children_uss: USS of each process over the window, most growth first" in output


def test_workers_that_come_and_go_are_not_growth(suite) -> None:
    rows, output, _ = suite
    for test in ("test_process_per_step_joined", "test_pool_workers_return_results",
                 "test_recycled_pool_workers"):
        assert rows[test]["outcome"] == "passed", output
        verdicts = {p["verdict"] for p in rows[test]["data"]["probes"].values()}
        assert verdicts == {"pass"}, (test, rows[test]["data"]["probes"])


def test_a_child_that_exits_during_the_window_is_marked(suite) -> None:
    rows, output, _ = suite
    row = rows["test_a_growing_server_and_one_that_exits"]
    assert row["outcome"] == "failed", output
    table = row["data"]["evidence"]["processes"]["children_uss"]
    assert table["ended"] == 1
    ended = [r for r in table["rows"] if r["ended"]]
    assert len(ended) == 1 and ended[0]["last_iteration"] < 110
    assert "ended after iteration" in output and "ended during the window" in output


def test_a_workers_descendants_are_its_own(suite) -> None:
    _, output, _ = suite
    assert "PASSED test_workloads.py::test_descendants_are_this_workers_own" in output, output


def test_the_json_report_carries_the_probes_and_their_tables(suite) -> None:
    _, output, report = suite
    tests = {nodeid.split("::")[-1]: entry for nodeid, entry in report["tests"].items()}
    leaky = tests["test_pool_workers_keep_results"]
    assert {"children_uss", "tree_pss"} <= set(leaky["probes"]), output
    assert "children_uss" in leaky["evidence"]["processes"]
