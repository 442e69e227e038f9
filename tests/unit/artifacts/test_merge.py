"""Merging the reports of a run's shards: one report, or a clear refusal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_membudget.artifacts.document import build_document
from pytest_membudget.artifacts.merge import (
    NO_TESTS,
    MergeError,
    exit_status,
    merge,
    shard_paths,
)

FACTS = {"fingerprint": "Linux-x86_64-CPython-3.11-2cpu", "cuda_device": None}


def shard(*tests: str, exitstatus: int = 0, machine: dict[str, Any] | None = None,
          plugin: str = "0.1.0", sweep: dict[str, Any] | None = None) -> dict[str, Any]:
    data = {"passed": True, "iterations": 10, "warmup": 1, "stopped": "fixed",
            "probes": {"rss": {"slope": 0.0, "ci": [0.0, 0.0], "verdict": "pass"}}}
    document = build_document([(t, data) for t in tests], {t: "passed" for t in tests},
                              samples=False, exitstatus=exitstatus,
                              machine_facts=machine or FACTS)
    document["versions"]["pytest-membudget"] = plugin
    if sweep is not None:
        document["sweep"] = sweep
    return document


def test_every_test_of_every_shard_once_with_where_each_came_from() -> None:
    merged = merge([("a.json", shard("t.py::a", "t.py::b")), ("b.json", shard("u.py::c"))])
    assert list(merged["tests"]) == ["t.py::a", "t.py::b", "u.py::c"]
    assert merged["format"] == "pytest-membudget" and merged["name"] is None
    assert [(s["file"], s["tests"]) for s in merged["shards"]] == [("a.json", 2), ("b.json", 1)]
    assert merged["machine"]["fingerprint"] == FACTS["fingerprint"]
    again = merge([("all.json", merged), ("c.json", shard("v.py::d"))])
    assert [s["file"] for s in again["shards"]] == ["a.json", "b.json", "c.json"]


def test_a_test_in_two_shards_is_refused_and_named() -> None:
    with pytest.raises(MergeError, match=r"1 test\(s\) appear in more than one shard: "
                                         r"t.py::b \(in a.json and b.json\)"):
        merge([("a.json", shard("t.py::a", "t.py::b")), ("b.json", shard("t.py::b"))])


@pytest.mark.parametrize(("other", "message"), [
    (shard("u.py::c", machine={**FACTS, "fingerprint": "Linux-x86_64-CPython-3.12-2cpu"}),
     r"machine fingerprint differs \(Linux-x86_64-CPython-3.11-2cpu in a.json; "
     r"Linux-x86_64-CPython-3.12-2cpu in b.json\)"),
    (shard("u.py::c", plugin="0.2.0"),
     r"pytest-membudget version differs \(0.1.0 in a.json; 0.2.0 in b.json\)"),
])
def test_other_machines_and_plugin_versions_are_refused(other: dict[str, Any],
                                                         message: str) -> None:
    with pytest.raises(MergeError, match=message):
        merge([("a.json", shard("t.py::a")), ("b.json", other)])


def test_cuda_devices_a_shard_used_are_kept_and_two_kinds_refused() -> None:
    gpu = {**FACTS, "cuda_device": "cuda:0 NVIDIA H200"}
    merged = merge([("a.json", shard("t.py::a")), ("b.json", shard("u.py::c", machine=gpu))])
    assert merged["machine"]["cuda_device"] == "cuda:0 NVIDIA H200"
    other = {**FACTS, "cuda_device": "cuda:0 NVIDIA A100"}
    with pytest.raises(MergeError, match="CUDA device differs"):
        merge([("a.json", shard("t.py::a", machine=gpu)),
               ("b.json", shard("u.py::c", machine=other))])


@pytest.mark.parametrize(("statuses", "expected"), [
    ([0, 0], 0), ([0, 1], 1), ([5, 0], 0), ([5, 5], 5), ([1, 2], 2), ([None, 0], 0),
    ([None], None),
])
def test_the_run_exit_status_is_the_worst_shard_s(statuses: list[int | None],
                                                  expected: int | None) -> None:
    assert exit_status(statuses) == expected


def test_a_shard_that_collected_nothing_has_pytest_s_own_status() -> None:
    # artifacts/ sits below the pytest edge, so it names pytest's code as a number.
    assert NO_TESTS == pytest.ExitCode.NO_TESTS_COLLECTED


def test_sweep_sections_add_up() -> None:
    one = {"mode": "report", "counts": {"clean": 3, "leak": 1}, "seconds": {"sweep": 1.5},
           "leaks": [{"test": "t.py::a"}], "not_looked_at": {"not screened": {"skipped": 1}}}
    two = {"mode": "report", "counts": {"clean": 2}, "seconds": {"sweep": 0.25},
           "leaks": [], "not_looked_at": {"not screened": {"skipped": 2, "xfailed": 1}}}
    merged = merge([("a.json", shard("t.py::a", sweep=one)),
                    ("b.json", shard("u.py::c", sweep=two))])["sweep"]
    assert merged == {"mode": "report", "counts": {"clean": 5, "leak": 1},
                      "seconds": {"sweep": 1.75}, "leaks": [{"test": "t.py::a"}],
                      "not_looked_at": {"not screened": {"skipped": 3, "xfailed": 1}}}
    with pytest.raises(MergeError, match="different modes"):
        merge([("a.json", shard("t.py::a", sweep=one)),
               ("b.json", shard("u.py::c", sweep={**two, "mode": "fail"}))])


def test_nothing_to_merge() -> None:
    with pytest.raises(MergeError, match="no report to merge"):
        merge([])


def test_paths_expand_globs_in_order_and_name_each_file_once(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("shard-2.json", "shard-1.json", "other.txt"):
        (tmp_path / name).write_text("{}")
    paths, notes = shard_paths(["shard-*.json", "shard-1.json"])
    assert [p.name for p in paths] == ["shard-1.json", "shard-2.json"]
    assert notes == ["shard-1.json is named twice; merged once"]
    with pytest.raises(MergeError, match=r"no file matches 'gone/\*.json'"):
        shard_paths(["gone/*.json"])
