"""The type census of the evidence: what it counts before and after the rerun, and the
shorter count after it when listing the heap's strings and bytes was slow."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from support.evidence_runs import evidence_of

from pytest_membudget.evidence import steps
from pytest_membudget.evidence.census import large_object_bytes
from pytest_membudget.evidence.rerun import collect
from pytest_membudget.render.failure import atoms_line

OLD: list[bytes] = []
ROWS: list[dict[str, list[bytes]]] = []


def grown(evidence: dict[str, Any]) -> dict[str, int]:
    return {t["type"]: t["count"] for t in evidence["types"]}


@pytest.fixture(params=[False, True], ids=["whole", "slow first listing"])
def slow(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Either census: the whole heap listed twice, or (as when the first listing took longer
    than its share, steps.SHARE["whole_listing"]) the second listing made in the rerun's new
    containers only.
    Either is forced: a machine loaded by other work can make the first listing slow."""
    monkeypatch.setitem(steps.SHARE, "whole_listing", -1.0 if request.param else float("inf"))
    return bool(request.param)


def test_new_containers_and_the_bytes_they_hold_are_counted(slow: bool) -> None:
    ROWS.clear()
    size = 100  # a new bytes object each call
    # A dict holding a list: both tracked by the collector, made by the rerun. (A dict of
    # strings and bytes alone is untracked: put into an older list, it is an atom there.)
    evidence = evidence_of(lambda: ROWS.append({"row": [b"x" * size]}), {"gc_objects"})
    counts = grown(evidence)
    done = evidence["iterations"]
    # At least one of each per call (the interpreter may make a dict or two of its own
    # meanwhile: Python 3.10 showed one more dict once).
    assert min(counts.get(name, 0) for name in ("dict", "list", "bytes")) >= done, counts
    assert ("atoms_listed" in evidence) is slow
    ROWS.clear()


def test_bytes_put_into_an_older_container_are_counted_by_the_whole_listing_only(
        slow: bool) -> None:
    OLD.clear()
    size = 100
    evidence = evidence_of(lambda: OLD.append(b"y" * size), {"gc_objects"})
    counts = grown(evidence)
    if slow:
        # Listed in the new containers only: the old list's new bytes are not seen, and the
        # evidence says so; its lines still name where they were made.
        assert "bytes" not in counts
        assert evidence["atoms_listed"]["in"] == "new containers"
        assert any(s["file"].endswith("test_census.py") for s in evidence["sites"])
        assert "counted in the containers the rerun made only" in atoms_line(
            evidence["atoms_listed"])
    else:
        assert counts.get("bytes", 0) >= evidence["iterations"], counts
    OLD.clear()


def test_a_quick_first_listing_keeps_the_whole_census(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(steps.SHARE, "whole_listing", 100.0)
    run = collect({"gc_objects"}, iterations=10, start_iteration=0)
    try:
        while True:
            next(run)
    except StopIteration as done:
        evidence: dict[str, Any] = done.value
    assert "atoms_listed" not in evidence


def test_large_data_objects_are_the_ones_whose_memory_is_glibcs() -> None:
    """Bytes, strings and bytearrays over 512 B, and arrays that own their data: a view's
    bytes are its base's, a small object is pymalloc's, a list is not data."""
    np = pytest.importorskip("numpy")
    base = np.zeros(1000)
    objects: list[object] = [bytes(1000), "x" * 2000, bytearray(4000), base, base[10:],
                             bytes(100), "small", [0] * 1000, 12345]
    expected = (sys.getsizeof(objects[0]) + sys.getsizeof(objects[1])
                + sys.getsizeof(objects[2]) + base.nbytes)
    assert large_object_bytes(objects) == expected
    assert large_object_bytes([bytes(100), "small"]) == 0
