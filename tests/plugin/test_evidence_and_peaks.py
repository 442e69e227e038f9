"""Evidence reruns and peaks that happen inside an iteration."""

from __future__ import annotations

import pytest


def test_peak_inside_an_iteration_is_seen(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile("""
        import pytest

        def spike():
            block = bytearray(40 * 2**20)  # 40 MiB, gone before the sample
            return len(block)

        @pytest.mark.membudget(heap_peak="10 MiB", iterations=3, warmup=1)
        def test_heap_spike(membudget):
            membudget.run(spike)

        @pytest.mark.membudget(rss_peak="1 TiB", iterations=3, warmup=1)
        def test_rss_spike(membudget):
            membudget.run(spike)
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*heap peaked at 4*MiB, budget 10 MiB*"])
    rss = recorded()["test_rss_spike"]["data"]["probes"]["rss"]
    assert rss["peak"] >= max(rss["samples"]) + 30 * 2**20


def test_workload_that_cannot_run_longer_still_fails_on_the_budget(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []
        DATA = iter(range(45))

        def step():
            KEEP.append([next(DATA)])

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_finite(membudget):
            membudget.run(step)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*BudgetExceeded: membudget: 1 budget(s) exceeded in *test_finite*",
        "*No evidence: the workload raised StopIteration*during the evidence rerun*",
    ])


def test_evidence_rerun_stops_on_time(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile("""
        import time, pytest
        import pytest_membudget.evidence.steps as steps
        KEEP = []

        @pytest.fixture(autouse=True)
        def _short_evidence(monkeypatch):
            monkeypatch.setitem(steps.EVIDENCE_SECONDS, "growth", 0.2)

        def step():
            KEEP.append([])
            time.sleep(0.05)

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=1)
        def test_slow(membudget):
            membudget.run(step)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(failed=1)
    evidence = recorded()["test_slow"]["data"]["evidence"]
    assert 2 <= evidence["iterations"] < 8


def test_library_allocation_names_the_calling_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import json, pytest
        KEEP = []

        def step():
            KEEP.append(json.loads('{"a": [1, 2, 3]}'))

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_lib(membudget):
            membudget.run(step)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*top growing allocation sites*",
        "*json*decoder.py:*",
        "*called from test_library_allocation_names_the_calling_line.py:5: KEEP.append(json.loads*",
    ])


def test_heap_peak_counts_the_workload_not_the_other_probes(pytester: pytest.Pytester,
                                                            recorded) -> None:
    # gc_objects lists every object (a list of tens of thousands of pointers) at each sample;
    # that list is the plugin's, and must not read as the workload's heap peak.
    pytester.makepyfile("""
        import pytest

        @pytest.mark.membudget(heap_peak="200 KiB", gc_objects=0, iterations=30, warmup=2)
        def test_idle(membudget):
            membudget.run(lambda: None)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert recorded()["test_idle"]["data"]["probes"]["heap"]["peak"] < 64 * 1024
