"""Retaining paths: the evidence names what keeps the new objects alive, from each kind of
root, and says when its search stopped short."""

from __future__ import annotations

import ctypes
import functools
import gc
import time
from typing import Any, ClassVar

import pytest
from support.evidence_runs import evidence_of

from pytest_membudget import interpreter
from pytest_membudget.evidence import steps
from pytest_membudget.evidence.paths import retaining_paths
from pytest_membudget.render.retention import path_text
from pytest_membudget.vocabulary import RootKind

KEEP: list[dict[str, list[bytes]]] = []


@pytest.fixture(autouse=True)
def _time_enough(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a path is, not how fast it comes (bench/evidence.py measures that): a machine
    loaded by other work must not cut the search short, and a heap grown by the tests that
    ran before (pytester's inner sessions) must not make the second count list the rerun's
    own containers only (steps.SHARE["whole_listing"]), which misses atoms kept in older
    ones, such as a class's list made at import."""
    monkeypatch.setitem(steps.SHARE, "paths_least", 12.5)
    monkeypatch.setitem(steps.SHARE, "whole_listing", 100.0)


class Registry:
    items: ClassVar[list[object]] = []


def path_of(evidence: dict[str, Any], type_name: str) -> dict[str, Any]:
    entry = next((p for p in evidence["paths"] if p["type"] == type_name), None)
    assert entry is not None and "path" in entry, evidence["paths"]
    return entry["path"]


def test_a_module_global_registry_is_named_with_the_chain_to_the_objects() -> None:
    KEEP.clear()
    size = 64  # a new bytes object each call (b"x" * 64 would be one constant)
    evidence = evidence_of(lambda: KEEP.append({"rows": [b"x" * size]}), {"gc_objects"})
    path = path_of(evidence, "bytes")  # untracked atoms get a path too
    assert path["root"]["kind"] == RootKind.MODULE.value
    assert path["root"]["file"].endswith("test_retaining_paths.py")
    assert path["steps"][0]["step"] == "KEEP"
    assert [s["type"] for s in path["steps"]] == ["list", "dict", "list", "bytes"]
    assert path["steps"][2]["step"] == "['rows']"
    assert path_text(path).startswith("module ") and ": KEEP (list) -> [" in path_text(path)
    KEEP.clear()


def test_a_class_attribute_is_named() -> None:
    Registry.items.clear()
    evidence = evidence_of(lambda: Registry.items.append(object()), {"gc_objects"})
    path = path_of(evidence, "object")
    assert path["root"]["kind"] == RootKind.CLASS.value
    assert path["root"]["name"].endswith("Registry")
    assert path["steps"][0]["step"] == "items"
    Registry.items.clear()


def _hooks_step() -> Any:
    hooks = []

    def step() -> None:
        data = bytearray(64)

        def hook(data: bytearray = data) -> bytearray:
            return data

        hooks.append(hook)

    return step


def test_a_closure_names_the_function_and_its_cell() -> None:
    evidence = evidence_of(_hooks_step(), {"gc_objects"})
    path = path_of(evidence, "function")
    assert path["root"]["kind"] == RootKind.CLOSURE.value
    assert path["root"]["name"] == "_hooks_step.<locals>.step"
    assert path["steps"][0] == {"step": "hooks", "type": "list"}


def test_a_live_frames_local_is_named() -> None:
    kept: list[list[float]] = []
    evidence = evidence_of(lambda: kept.append([1.5]), {"gc_objects"})
    path = path_of(evidence, "list")
    assert path["root"]["kind"] == RootKind.FRAME.value
    assert path["root"]["name"].endswith("test_a_live_frames_local_is_named")
    assert path["steps"][0] == {"step": "kept", "type": "list"}


def _keep_from_c() -> None:
    # A reference taken in C and never given back: no Python object refers to the list.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object([1.5, 2.5]))


def test_an_object_only_c_code_holds_is_named_so() -> None:
    evidence = evidence_of(_keep_from_c, {"gc_objects"})
    path = path_of(evidence, "list")
    assert path["root"]["kind"] == RootKind.NATIVE.value
    assert path["steps"] == [{"step": "", "type": "list"}]


def test_a_search_out_of_time_says_it_stopped_short() -> None:
    held = [[1.5] for _ in range(3)]
    found = retaining_paths([("list", 3)], {"list": held}, deadline=time.perf_counter() - 1)
    assert "path" not in found[0]
    assert found[0]["reason"].startswith("stopped short"), found


WIDE: list[list[object]] = []


def test_only_the_deadline_bounds_how_many_objects_the_search_visits() -> None:
    """A sample held by 2,100 lists, which a module global holds: the search visits
    them all on its way up (no count of objects stops it) and names the global."""
    WIDE[:] = _held_by_many([2.5], 2100)  # no local of this frame holds the sample
    try:
        found = retaining_paths([("list", 1)], {"list": [WIDE[0][0]]},
                                deadline=time.perf_counter() + 60)
        path = found[0].get("path")
        assert path is not None, found
        assert path["root"]["kind"] == RootKind.MODULE.value and path["steps"][0]["step"] == (
            "WIDE"), path
    finally:
        WIDE.clear()


def _held_by_many(sample: object, holders: int) -> list[list[object]]:
    return [[sample] for _ in range(holders)]


BYTES_HELD: dict[str, bytes] = {}


def test_a_holder_search_cut_short_is_no_root_of_c_code(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """An untracked object (bytes) a module's dict holds: the dict is found among the
    untracked holders' referrers only if the scan of them runs to its end. Cut by the
    deadline there, the search says it stopped short, never "held by C code only"."""
    from pytest_membudget.evidence import paths

    BYTES_HELD["blob"] = b"y" * 4096
    deadline = time.perf_counter() + 60
    real = time.perf_counter
    calls = iter(range(1_000_000))

    def clock() -> float:  # the deadline passes once the untracked scan has begun
        return real() + (120 if next(calls) >= 1 else 0)

    monkeypatch.setattr(paths.time, "perf_counter", clock)
    found = retaining_paths([("bytes", 1)], {"bytes": [BYTES_HELD["blob"]]}, deadline=deadline,
                            untracked=[BYTES_HELD])
    assert found[0].get("path", {}).get("root", {}).get("kind") != RootKind.NATIVE.value, found
    assert found[0].get("reason", "").startswith("stopped short"), found


def test_a_type_without_a_new_object_to_start_from_gets_a_reason() -> None:
    found = retaining_paths([("list", 3)], {}, deadline=time.perf_counter() + 1)
    assert "path" not in found[0] and "no new object" in found[0]["reason"]


@functools.cache
def _unbounded(key: int) -> tuple[int, ...]:
    return tuple(range(key % 7, key % 7 + 48))


@functools.lru_cache(maxsize=100_000)
def _bounded(key: int) -> list[int]:
    return [key]


def test_an_unbounded_caches_dict_is_looked_into_though_the_collector_untracks_it() -> None:
    # Its results are tuples of ints, and once collected the dict holding them is untracked:
    # the collector's referrer search never walks it.
    _unbounded.cache_clear()
    calls = iter(range(10**9))
    evidence = evidence_of(lambda: _unbounded(next(calls)), {"gc_objects"})
    path = path_of(evidence, "tuple")
    assert path["root"]["kind"] == RootKind.MODULE.value
    assert path["steps"][0]["step"] == "_unbounded"
    assert [s["type"] for s in path["steps"]] == [
        "functools._lru_cache_wrapper", "dict", "tuple"]
    assert "cache" not in path  # unbounded: it never stops
    assert not evidence.get("bounded")
    _unbounded.cache_clear()


def test_a_bounded_cache_on_the_path_says_how_full_it_is_and_how_fast_it_fills() -> None:
    _bounded.cache_clear()
    calls = iter(range(10**9))
    evidence = evidence_of(lambda: _bounded(next(calls)), {"gc_objects"})
    path = path_of(evidence, "list")
    cache = path["cache"]
    assert cache["kind"] == "functools.lru_cache" and cache["maxsize"] == 100_000
    assert cache["name"].endswith("_bounded")
    assert 0 < cache["currsize"] < 100_000 and cache["per_call"] == 1
    assert cache["calls_to_full"] == 100_000 - cache["currsize"]
    assert evidence["bounded"] == [cache]
    _bounded.cache_clear()


def test_a_freeze_the_session_made_is_left_and_the_paths_say_why_none_is_told() -> None:
    # A conftest's gc.freeze() before forking workers: the rerun must not thaw it, so the new
    # objects cannot be told from the old ones, and the evidence says that, not that this
    # Python's freeze does not work.
    kept: list[list[int]] = []
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        evidence = evidence_of(lambda: kept.append([1, 2]), {"gc_objects"})
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()
        interpreter.refreeze_own()
    entry = next(p for p in evidence["paths"] if p["type"] == "list")
    assert "path" not in entry
    assert entry["reason"].startswith("objects the session froze itself"), entry


def test_a_type_grown_on_some_calls_only_does_not_hide_the_cache_that_holds_the_rest() -> None:
    from pytest_membudget.evidence.caches import still_filling

    cache = {"name": "m.entry", "kind": "functools.lru_cache", "currsize": 75,
             "maxsize": 300, "per_call": 1.0, "calls_to_full": 225}
    root = {"kind": RootKind.MODULE.value, "name": "m"}
    held = {"type": "numpy.ndarray", "count": 7, "path": {"root": root, "cache": cache}}
    once = {"type": "tuple", "count": 1, "path": {"root": {"kind": "module global",
                                                           "name": "sys"}}}
    assert still_filling([held, once], calls=6) == [cache]
    # Growth elsewhere on most calls is growth the cache does not hold.
    assert still_filling([held, {**once, "count": 3}], calls=6) == []
    assert still_filling([held, once]) == []  # no count of calls: every path counts


def test_the_caller_found_for_a_library_line_is_not_growth() -> None:
    # The growing line is numpy's, so the evidence looks for the test's line that called it
    # and records it on the site: that record is the evidence's, not a growing tuple.
    import numpy as np

    KEEP.clear()
    views: list[object] = []
    KEEP.append({"views": views})  # type: ignore[dict-item]

    def step() -> None:
        views.append(np.ones(8192)[:4])  # a view keeps its 64 KiB base

    evidence = evidence_of(step, {"rss"})
    assert any(site.get("via_line") for site in evidence["sites"]), evidence["sites"]
    assert [t["type"] for t in evidence["types"]] == ["numpy.ndarray"], evidence["types"]
    assert [p["type"] for p in evidence["paths"]] == ["numpy.ndarray"], evidence["paths"]
    KEEP.clear()
