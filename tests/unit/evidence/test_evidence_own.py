"""The evidence's own bookkeeping never reads as growth: a rerun of a workload that keeps
nothing reports no growing type and no growing line, however many times it runs."""

from __future__ import annotations

import gc
import time

from support.evidence_runs import evidence_of


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


_last_collection: list[float] = [0.0]


def _record_collection(phase: str, info: dict[str, int]) -> None:
    # What hypothesis does after its first test: a new float in a global at every collection.
    _last_collection[0] = time.perf_counter()


def test_gc_callbacks_that_keep_state_do_not_read_as_growth() -> None:
    gc.callbacks.append(_record_collection)
    try:
        evidence = evidence_of(lambda: [object() for _ in range(100)], {"rss"})
    finally:
        gc.callbacks.remove(_record_collection)
    assert evidence["sites"] == [], evidence["sites"]
    assert _record_collection not in gc.callbacks
