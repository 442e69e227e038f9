"""The process-tree probes on a fake /proc: walking down only, the live set judged at each
sample (a process that vanishes, a zombie, one still starting), and the per-process log."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.probeset import ProbeSet
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import Probe, create, procfs, proctree
from pytest_membudget.probes.proclog import ProcessLog
from pytest_membudget.probes.proctree import ProcessTree
from pytest_membudget.probes.records import TOP
from pytest_membudget.settings import default_run

ROLLUP = """\
55d0c000-7ffd0000 ---p 00000000 00:00 0                                  [rollup]
Rss:               {rss} kB
Pss:               {pss} kB
Pss_Anon:          {pss} kB
Shared_Clean:          4 kB
Private_Clean:        {clean} kB
Private_Dirty:       {dirty} kB
Private_Hugetlb:       0 kB
Swap:                  0 kB
"""


class FakeProc:
    """A /proc with the files the probes read: stat, smaps_rollup, task/<tid>/children."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def process(self, pid: int, parent: int, *, state: str = "S", name: str = "python",
                started: int = 100, uss_kib: int = 100, pss_kib: int = 150,
                threads: tuple[int, ...] = (), by_thread: int | None = None) -> None:
        where = self.root / str(pid)
        for tid in (pid, *threads):
            (where / "task" / str(tid)).mkdir(parents=True, exist_ok=True)
            children = where / "task" / str(tid) / "children"
            if not children.exists():
                children.write_text("")
        tail = " ".join(["0"] * 17)
        # Fields after the name: state, ppid, then 17 more up to start time (field 22).
        (where / "stat").write_text(f"{pid} ({name}) {state} {parent} {tail} {started} 0 0\n")
        half = uss_kib // 2
        (where / "smaps_rollup").write_text(ROLLUP.format(
            rss=pss_kib, pss=pss_kib, clean=half, dirty=uss_kib - half))
        (where / "cmdline").write_bytes(f"{name}\0--worker\0".encode())
        if parent in self.pids():
            self.adopt(parent, pid, by_thread)

    def adopt(self, parent: int, child: int, tid: int | None = None) -> None:
        children = self.root / str(parent) / "task" / str(tid or parent) / "children"
        children.write_text(children.read_text() + f"{child} ")

    def pids(self) -> set[int]:
        return {int(p.name) for p in self.root.iterdir() if p.name.isdigit()}

    def remove(self, pid: int) -> None:
        import shutil

        shutil.rmtree(self.root / str(pid))


ROOT = 1000


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeProc:
    monkeypatch.setattr(procfs, "PROC", str(tmp_path))
    monkeypatch.setattr(proctree, "PROC", str(tmp_path))
    proc = FakeProc(tmp_path)
    proc.process(1, 0, name="init")
    proc.process(ROOT - 1, 1, name="controller")  # pytest-xdist's controller
    proc.process(ROOT, ROOT - 1, name="worker-gw0", uss_kib=5000, pss_kib=6000,
                 threads=(ROOT + 1,))
    proc.process(ROOT + 2, ROOT - 1, name="worker-gw1")  # a sibling: never ours
    proc.process(ROOT + 3, ROOT + 2, name="gw1-child")
    return proc


def tree_at(root: int = ROOT, per_thread: bool = True) -> ProcessTree:
    tree = ProcessTree()
    tree.root, tree.per_thread = root, per_thread
    tree.log = ProcessLog(root)
    tree.users = tree.memory_users = tree.root_users = 1
    return tree


@pytest.mark.parametrize("per_thread", [True, False])
def test_descendants_walk_down_only(fake: FakeProc, per_thread: bool) -> None:
    fake.process(2000, ROOT)
    fake.process(2001, 2000)  # a grandchild
    fake.process(2002, ROOT, by_thread=ROOT + 1)  # forked by another thread of the test's
    assert sorted(procfs.descendants(ROOT, per_thread)) == [2000, 2001, 2002]
    assert procfs.descendants(2001, per_thread) == []


def test_a_pid_listed_twice_is_taken_once(fake: FakeProc) -> None:
    fake.process(2000, ROOT)
    fake.adopt(2000, ROOT)  # a reused pid can make the listing look like a cycle
    fake.adopt(ROOT, 2000, tid=ROOT + 1)
    assert procfs.descendants(ROOT) == [2000]


def test_parse_stat_keeps_a_name_with_parentheses_and_spaces() -> None:
    raw = b"42 (a (b) c) R 7 " + b" ".join([b"0"] * 17) + b" 9876 0\n"
    assert procfs.parse_stat(raw) == (b"R", b"a (b) c", 7, 9876)


def test_parse_rollup_sums_the_private_lines_for_uss() -> None:
    raw = ROLLUP.format(rss=900, pss=700, clean=100, dirty=300).encode()
    assert procfs.parse_rollup(raw) == (400 * 1024, 700 * 1024)


def test_the_pss_leaves_file_pages_out_where_the_kernel_splits_it() -> None:
    split = (b"Rss: 900 kB\nPss: 700 kB\nPss_Anon: 500 kB\nPss_File: 150 kB\n"
             b"Pss_Shmem: 50 kB\nPrivate_Dirty: 400 kB\n")
    assert procfs.parse_rollup(split) == (400 * 1024, 550 * 1024)
    whole = b"Rss: 900 kB\nPss: 700 kB\nPrivate_Dirty: 400 kB\n"  # before Linux 5.7
    assert procfs.parse_rollup(whole) == (400 * 1024, 700 * 1024)


def test_the_live_set_at_one_sample(fake: FakeProc) -> None:
    fake.process(2000, ROOT, uss_kib=100, pss_kib=150)
    fake.process(2001, ROOT, uss_kib=200, pss_kib=300)
    fake.process(2002, ROOT, state="Z")  # exited, not yet reaped: holds nothing
    fake.adopt(ROOT, 2003)  # listed, but gone before it could be read
    tree = tree_at()
    tree.refresh()
    assert tree.count == 2
    assert tree.uss == 300 * 1024
    assert tree.pss == 450 * 1024
    assert tree.root_pss == 6000 * 1024


def test_a_process_still_starting_counts_with_what_it_holds(fake: FakeProc) -> None:
    fake.process(2000, ROOT, state="R", uss_kib=0, pss_kib=0)  # forked, nothing written yet
    tree = tree_at()
    tree.refresh()
    assert (tree.count, tree.uss) == (1, 0)


def test_a_count_alone_reads_no_memory(fake: FakeProc) -> None:
    fake.process(2000, ROOT)
    (fake.root / "2000" / "smaps_rollup").unlink()
    tree = tree_at()
    tree.memory_users = 0
    tree.refresh()
    assert (tree.count, tree.uss) == (1, 0)


def test_workers_that_come_and_go_leave_nothing_behind(fake: FakeProc) -> None:
    tree = tree_at()
    tree.log.open = True
    totals = []
    for step in range(6):
        if step:
            fake.remove(2000 + step - 1)
            (fake.root / str(ROOT) / "task" / str(ROOT) / "children").write_text("")
        fake.process(2000 + step, ROOT, uss_kib=1000, started=100 + step)
        tree.iteration = step * 10
        tree.refresh()
        totals.append((tree.count, tree.uss))
    assert totals == [(1, 1000 * 1024)] * 6
    table = tree.log.table("uss")
    assert table["started"] == 5 and table["ended"] == 5 and table["alive"] == 1


def test_the_table_puts_most_growth_first_and_marks_the_ended(fake: FakeProc) -> None:
    tree = tree_at()
    tree.log.open = True
    for step in range(5):
        fake.process(2000, ROOT, uss_kib=100 + 10 * step)
        if step < 3:
            fake.process(2001, ROOT, uss_kib=100 + 50 * step)
        elif step == 3:
            fake.remove(2001)
            (fake.root / str(ROOT) / "task" / str(ROOT) / "children").write_text("2000 ")
        tree.iteration = 100 + step
        tree.refresh()
    rows = tree.log.table("uss")["rows"]
    assert [r["pid"] for r in rows] == [2001, 2000]
    ended, alive = rows
    assert ended["ended"] and ended["last_iteration"] == 102 and ended["command"] == ""
    assert (alive["first"], alive["last"]) == (100 * 1024, 140 * 1024)
    assert alive["slope"] == pytest.approx(10 * 1024)
    assert alive["command"] == "python --worker"
    assert not alive["started_in_window"]
    pss_rows = tree.log.table("pss")["rows"]
    assert any(r["root"] for r in pss_rows)


def test_the_children_table_lists_the_processes_started_in_the_window(fake: FakeProc) -> None:
    tree = tree_at()
    tree.memory_users = tree.root_users = 0
    tree.log.open = True
    fake.process(2000, ROOT)  # there before the window: not part of the growth
    for step in range(4):
        if step:
            fake.process(3000 + step, ROOT, name=f"env-{step}")
        tree.iteration = step
        tree.refresh()
    table = tree.log.table("count")
    assert [r["pid"] for r in table["rows"]] == [3001, 3002, 3003]
    assert table["rows"][0]["first_iteration"] == 1 and table["figure"] == "count"
    assert table["started"] == 3 and table["alive"] == 4


def test_a_reused_pid_is_a_new_process(fake: FakeProc) -> None:
    tree = tree_at()
    tree.log.open = True
    fake.process(2000, ROOT, started=100)
    tree.refresh()
    fake.process(2000, ROOT, started=555)
    tree.refresh()
    table = tree.log.table("uss")
    assert table["ended"] == 1 and table["started"] == 1


def test_ended_processes_kept_for_the_evidence_are_bounded(fake: FakeProc) -> None:
    tree = tree_at()
    tree.log.open = True
    for step in range(3 * TOP):
        (fake.root / str(ROOT) / "task" / str(ROOT) / "children").write_text("")
        fake.process(5000 + step, ROOT, uss_kib=step)
        tree.refresh()
    assert len(tree.log.ended) <= TOP
    assert tree.log.ended_total == 3 * TOP - 1


class Recorder(Probe):
    name = "children"

    def __init__(self) -> None:
        super().__init__()
        self.iterations: list[int] = []

    def note_iteration(self, iteration: int) -> None:
        self.iterations.append(iteration)

    def read(self) -> float:
        return 0.0


def test_each_sample_tells_the_probe_its_iteration() -> None:
    spec = build_spec(default_run(), (), {"children": 0}, "in test")
    probe = Recorder()
    m = Measurement(spec, {"children": probe}, 8)
    sample = ProbeSet({"children": probe}).sampler(m, collect=False)
    sample(0, 0.0)
    sample(7, 0.0)
    assert probe.iterations == [0, 7]


class Tables(Probe):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def read(self) -> float:
        return 0.0

    def evidence(self) -> dict[str, object]:
        return {"processes": {self.name: {"rows": []}}}


def test_evidence_of_probes_sharing_a_key_is_merged() -> None:
    probes = {name: Tables(name) for name in ("children", "children_uss")}
    gathered = ProbeSet(dict(probes)).evidence({"children", "children_uss"})
    assert set(gathered["processes"]) == {"children", "children_uss"}


def test_elsewhere_than_linux_the_probes_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proctree.sys, "platform", "darwin")
    for name in ("children", "children_uss", "tree_pss"):
        reason = create(name).unavailable()
        assert reason is not None and "Linux only" in reason and "darwin" in reason


def test_without_smaps_rollup_the_memory_probes_say_why(
        fake: FakeProc, monkeypatch: pytest.MonkeyPatch) -> None:
    (fake.root / "self" / "task").mkdir(parents=True)
    monkeypatch.setattr(proctree.sys, "platform", "linux")
    assert create("children").unavailable() is None
    reason = create("children_uss").unavailable()
    assert reason is not None and "smaps_rollup" in reason and "4.14" in reason
