"""A bounded cache still filling is not a leak: when every retaining path of the growth runs
through a ``functools.lru_cache`` with a ``maxsize`` that is not full yet, the budget ends
inconclusive and names the cache, how full it is and in how many calls it stops. Growth into
an unbounded cache or a plain dict still fails."""

from __future__ import annotations

import json

import pytest

from pytest_membudget.evidence import steps

SUITE = """
    import functools
    import pytest

    @functools.lru_cache(maxsize=8192)
    def bounded(key):
        return (key, [key] * 4)

    @functools.lru_cache(maxsize=None)
    def unbounded(key):
        return (key, [key] * 4)

    PLAIN = {}

    def plain(key):
        return PLAIN.setdefault(key, (key, [key] * 4))

    def stepper(cached):
        calls = [0]
        def step():
            calls[0] += 1
            # 8 entries a call: the run ends before the bounded cache is full.
            for k in range(8):
                cached(f"label {calls[0]} {k}")
        return step

    @pytest.mark.membudget(heap=0, max_seconds=3)
    def test_bounded(membudget):
        membudget.run(stepper(bounded))

    @pytest.mark.membudget(heap=0, max_seconds=3)
    def test_unbounded(membudget):
        membudget.run(stepper(unbounded))

    @pytest.mark.membudget(heap=0, max_seconds=3)
    def test_plain(membudget):
        membudget.run(stepper(plain))
"""


def test_a_bounded_cache_filling_is_inconclusive_and_unbounded_growth_fails(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the verdict says, not how fast: a loaded machine must not cut the search short.
    monkeypatch.setitem(steps.SHARE, "paths_least", 2.5)
    pytester.makepyfile(test_caches=SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly",
                                "--membudget-json=report.json")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*test_caches.py::test_bounded: heap=0 B/iter inconclusive (measured *) after * "
        "iterations, *; settle it with a warm-up that lets the bounded cache holding the "
        "growth fill (test_caches.bounded (functools.lru_cache): * of 8192 entries, "
        "+8/call, full in about * calls): warmup=*, with max_seconds=* or more",
    ])
    report = json.loads((pytester.path / "report.json").read_text())
    tests = {name.rsplit("::", 1)[-1]: data for name, data in report["tests"].items()}
    bounded = tests["test_bounded"]
    assert bounded["evidence"]["held"] == ["heap"]
    [cache] = bounded["evidence"]["bounded"]
    assert cache["maxsize"] == 8192 and 0 < cache["currsize"] < 8192
    assert cache["per_call"] == 8
    assert cache["calls_to_full"] == -(-(8192 - cache["currsize"]) // 8)
    assert bounded["inconclusive"][0]["remedies"][0] == "cache_fills"
    for name in ("test_unbounded", "test_plain"):
        assert tests[name]["failures"], name
        assert not tests[name]["evidence"].get("bounded"), name
