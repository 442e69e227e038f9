"""The process tables of a failure: rendered from the evidence data at the edge."""

from __future__ import annotations

from typing import Any

from pytest_membudget.render.failure import evidence_lines, process_lines

KIB = 1024


def row(pid: int, first: float | None, last: float | None, slope: float | None,
        **extra: Any) -> dict[str, Any]:
    return {"pid": pid, "name": "Process-1", "command": "python -m pytest examples",
            "first": first, "last": last, "first_iteration": 20, "last_iteration": 700,
            "slope": slope, "started_in_window": False, "ended": False, "root": False,
            **extra}


def test_a_memory_table_shows_first_last_and_slope_per_process() -> None:
    evidence = {"processes": {"children_uss": {
        "figure": "uss", "alive": 2, "started": 1, "ended": 1, "not_shown": 3,
        "rows": [row(4121, 1200 * KIB, 43000 * KIB, 64 * KIB),
                 row(4188, 900 * KIB, 2000 * KIB, 2 * KIB, ended=True, last_iteration=412,
                     started_in_window=True, first_iteration=300, command=""),
                 row(4122, 900 * KIB, 900 * KIB, None)]}}}
    text = "\n".join(process_lines(evidence))
    lines = text.splitlines()
    assert "children_uss: USS of each process over the window, most growth first" in text
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["pid"])
    assert lines[header + 1].split()[0] == "4121"
    assert "1.17 MiB -> 42 MiB" in lines[header + 1] and "+64 KiB/iter" in lines[header + 1]
    assert "Process-1: python -m pytest examples" in lines[header + 1]
    assert "started at iteration 300, ended after iteration 412" in lines[header + 2]
    assert lines[header + 3].rstrip().endswith(" -")  # one sample: no slope
    assert "1 process(es) ended during the window" in text
    assert "3 more not shown" in text


def test_the_count_table_lists_the_processes_started_in_the_window() -> None:
    evidence = {"processes": {"children": {
        "figure": "count", "alive": 41, "started": 40, "ended": 0, "not_shown": 30,
        "rows": [row(5000 + i, None, None, None, started_in_window=True, first_iteration=i,
                     name=f"env-worker-{i}") for i in range(10)]}}}
    text = "\n".join(process_lines(evidence))
    assert "children: processes started during the window (40 started, 0 ended, 41 alive" in text
    assert "env-worker-3" in text and "started at iteration 3" in text
    assert "30 more not shown" in text


def test_a_worker_forked_without_exec_is_named_so_not_by_the_test_command() -> None:
    evidence = {"processes": {"children_uss": {
        "figure": "uss", "alive": 1, "started": 0, "ended": 0, "not_shown": 0,
        "rows": [row(4121, 1200 * KIB, 43000 * KIB, 64 * KIB, forked=True,
                     name="ForkPoolWorker-1")]}}}
    text = "\n".join(process_lines(evidence))
    assert "ForkPoolWorker-1 (forked from the test's process)" in text
    assert "python -m pytest" not in text


def test_the_count_table_has_no_figure_columns() -> None:
    evidence = {"processes": {"children": {
        "figure": "count", "alive": 1, "started": 1, "ended": 0, "not_shown": 0,
        "rows": [row(5000, None, None, None, started_in_window=True, first_iteration=7)]}}}
    lines = process_lines(evidence)
    header = next(line for line in lines if line.split()[:1] == ["pid"])
    assert "first -> last" not in header and "slope" not in header


def test_the_test_process_is_named_as_such_in_the_pss_table() -> None:
    evidence = {"processes": {"tree_pss": {
        "figure": "pss", "alive": 0, "started": 0, "ended": 0, "not_shown": 0,
        "rows": [row(77, 50 * KIB ** 2, 60 * KIB ** 2, 20 * KIB, root=True)]}}}
    text = "\n".join(process_lines(evidence))
    assert "this test's process" in text and "50 MiB -> 60 MiB" in text


def test_no_process_evidence_no_lines() -> None:
    assert process_lines({}) == []
    assert process_lines({"sites": []}) == []


def test_a_rerun_with_nothing_to_show_adds_no_heading() -> None:
    # children_uss is not traced: its rerun finds no sites, and here no thread or descriptor.
    assert evidence_lines({"iterations": 8, "seconds": 0.1, "threads": [], "fds": []}) == []
    assert evidence_lines({"iterations": 8, "fds": ["12 -> pipe:[1]"]})[1] == (
        "Evidence from 8 more iterations:")
