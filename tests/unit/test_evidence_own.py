"""The evidence's own bookkeeping never reads as growth: a rerun of a workload that keeps
nothing reports no growing type and no growing line, however many times it runs."""

from __future__ import annotations

from typing import Any

from pytest_membudget.attribution import collect


def evidence_of(step: Any, failing: set[str]) -> dict[str, Any]:
    rerun = collect(failing, iterations=40, start_iteration=0)
    try:
        while True:
            next(rerun)
            step()
    except StopIteration as done:
        result: dict[str, Any] = done.value
    return result


def test_a_workload_that_keeps_nothing_shows_no_growth() -> None:
    for _ in range(3):  # the first run in a process too, and every later one
        evidence = evidence_of(lambda: [object() for _ in range(100)], {"rss"})
        assert evidence["types"] == [] and evidence["sites"] == [], evidence


def test_a_workload_that_keeps_one_list_per_call_shows_it() -> None:
    kept: list[list[int]] = []
    evidence = evidence_of(lambda: kept.append([1, 2, 3]), {"gc_objects"})
    lists = next(t for t in evidence["types"] if t["type"] == "list")
    assert lists["per_iter"] == 1.0
    assert any(site["code"] == "evidence = evidence_of(lambda: kept.append([1, 2, 3]), "
               "{\"gc_objects\"})" for site in evidence["sites"]), evidence["sites"]
