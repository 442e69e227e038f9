"""Worker facts under pytest-xdist: what a worker sends, the summary line, the warning."""

from __future__ import annotations

from pytest_membudget import distributed


def facts(budgeted: int, cpus: int = 4, host: str = "ci", pid: int = 100) -> dict[str, object]:
    return {"pid": pid, "host": host, "cpus": cpus, "budgeted": budgeted, "seconds": 1.5}


def test_worker_facts_are_plain_data_counting_budgeted_tests() -> None:
    sent = distributed.worker_facts([("t::a", {"seconds": 1.25}), ("t::b", {"seconds": 0.5})])
    assert sent["budgeted"] == 2
    assert sent["seconds"] == 1.75
    assert sent["cpus"] >= 1
    assert all(isinstance(v, (int, float, str)) for v in sent.values())


def test_summary_line_names_busy_workers_and_cores() -> None:
    line = distributed.summary_line({"gw1": facts(2, pid=11), "gw0": facts(3, pid=10),
                                     "gw2": facts(0)})
    assert line.startswith("membudget: 5 budgeted test(s) on 2 of 3 xdist worker(s)")
    assert "gw0 (pid 10): 3, gw1 (pid 11): 2" in line
    assert "4 CPU core(s)" in line


def test_no_warning_when_workers_fit_the_cores() -> None:
    workers = {f"gw{i}": facts(1, cpus=4) for i in range(4)}
    assert distributed.oversubscription(workers) is None


def test_idle_workers_do_not_count_towards_oversubscription() -> None:
    workers = {f"gw{i}": facts(1 if i < 2 else 0, cpus=2) for i in range(6)}
    assert distributed.oversubscription(workers) is None


def test_warning_when_budgeted_tests_ran_on_more_workers_than_cores() -> None:
    workers = {f"gw{i}": facts(1, cpus=2) for i in range(3)}
    message = distributed.oversubscription(workers)
    assert message is not None
    assert "3 xdist workers" in message and "2 CPU core(s)" in message
    assert "-n 2" in message and "--dist loadgroup" in message


def test_cores_are_counted_per_host() -> None:
    workers = {"gw0": facts(1, cpus=1, host="a"), "gw1": facts(1, cpus=1, host="b")}
    assert distributed.oversubscription(workers) is None
