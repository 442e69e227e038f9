"""The evidence's own bookkeeping never reads as growth: a rerun of a workload that keeps
nothing reports no growing type and no growing line, however many times it runs."""

from __future__ import annotations

import gc
import linecache
import time
from pathlib import Path

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


def test_source_lines_read_during_a_count_are_the_plugin_s_own(tmp_path: Path) -> None:
    from pytest_membudget.evidence.census import class_counts, named, own_objects

    source = tmp_path / "shape.py"
    source.write_text("".join(f"x{i} = {i}\n" for i in range(300)))
    before = class_counts(exclude=own_objects(()))
    linecache.getline(str(source), 1)  # what the plugin does to show a line
    try:
        after = class_counts(exclude=own_objects(()))
        after.subtract(before)
        assert named(after)["str"] < 300, named(after).most_common(5)
        assert named(after)["list"] < 2, named(after).most_common(5)
    finally:
        linecache.checkcache(str(source))
        linecache.cache.pop(str(source), None)


def test_the_plugin_s_own_types_are_left_out_of_every_count() -> None:
    from collections import Counter

    from pytest_membudget.evidence.census import named
    from pytest_membudget.measure.samples import Measurement

    assert named(Counter({Measurement: 3, dict: 2})) == Counter({"dict": 2})
