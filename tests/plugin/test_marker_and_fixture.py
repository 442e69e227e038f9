"""Wiring: marker, fixture, results, reports, summary."""

from __future__ import annotations

import pytest

LEAK_AND_CLEAN = """
import pytest
KEEP = []

@pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
def test_leak(membudget):
    membudget.run(lambda: KEEP.append([]))

@pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
def test_clean(membudget):
    result = membudget.run(lambda: [{} for _ in range(10)])
    probe = result["gc_objects"]
    assert result.passed and result.iterations == 40 and result.warmup == 2
    assert probe.verdict == "pass" and probe.slope == 0
    assert probe.ci[0] <= probe.slope <= probe.ci[1]
    assert len(probe.samples) == len(probe.sample_iterations) > 20
    assert probe.peak >= probe.samples[-1]
"""


def test_leak_fails_and_clean_passes(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile(LEAK_AND_CLEAN)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*BudgetExceeded: membudget: 1 budget(s) exceeded in "
        "test_leak_fails_and_clean_passes.py::test_leak*",
        "*gc_objects still grows 1 objects/iter*budget 0 objects/iter*",
        "*top growing object types:*",
        "*list: +*",
    ])
    reports = recorded()
    assert reports["test_leak"]["data"]["probes"]["gc_objects"]["verdict"] == "fail"
    assert reports["test_clean"]["data"]["passed"] is True


def test_iterate_loop_form(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=1)
        def test_loop(membudget):
            seen = [i for i in membudget.iterate() if not KEEP.append([])]
            assert seen[:41] == list(range(41))

        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=1)
        def test_loop_clean(membudget):
            for i in membudget.iterate():
                [[] for _ in range(5)]
            assert membudget.result.iterations == 40
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*BudgetExceeded: membudget: 1 budget(s) exceeded in *::test_loop"])


def test_marker_without_fixture_repeats_the_body(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        CALLS = []
        SEEN = set()

        @pytest.fixture
        def state():
            return {"made": object()}

        @pytest.mark.membudget(gc_objects=0, iterations=12, warmup=3)
        def test_body(state):
            CALLS.append(1)
            SEEN.add(id(state["made"]))

        def test_check():
            assert len(CALLS) == 15
            assert len(SEEN) == 1
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_body_leak_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []

        @pytest.mark.membudget(gc_objects=0, iterations=30, warmup=2)
        def test_body():
            KEEP.append([])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*gc_objects still grows*"])


def test_marker_on_one_param(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile("""
        import pytest
        KEEP = []

        @pytest.mark.parametrize("n", [
            0,
            pytest.param(1, marks=pytest.mark.membudget(gc_objects=0, iterations=30, warmup=2)),
        ])
        def test_param(n):
            for _ in range(n):
                KEEP.append([])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_param[[]1[]]*"])


def test_module_marker_and_closest_wins(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile("""
        import pytest
        pytestmark = pytest.mark.membudget(gc_objects=0, iterations=20, warmup=2)

        def test_inherits():
            pass

        @pytest.mark.membudget(iterations=25)
        def test_overrides():
            pass
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=2)
    reports = recorded()
    assert reports["test_inherits"]["data"]["iterations"] == 20
    assert reports["test_overrides"]["data"]["iterations"] == 25
    assert reports["test_overrides"]["data"]["probes"]["gc_objects"]["budgets"]["slope"] == 0


def test_fixture_without_marker_uses_default_probes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_measure(membudget):
            result = membudget.run(lambda: None)
            assert set(result.probes) == {"rss", "gc_objects", "threads", "fds", "iter_time"}
            assert all(p.verdict == "unjudged" for p in result.probes.values())
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--membudget-iterations=20").assert_outcomes(
        passed=1)


def test_terminal_summary_and_verbosity(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(LEAK_AND_CLEAN)
    result = pytester.runpytest("-p", "no:cacheprovider")
    # The rows come in the order the tests ran (a reordering plugin may change it).
    for row in ("*::test_leak*gc_objects*fail*", "*::test_clean*gc_objects*0 objects/iter*pass*"):
        result.stdout.fnmatch_lines(
            ["*- membudget -*", "test*probe*slope*budget*peak*iters*verdict*", row])
    quiet = pytester.runpytest("-p", "no:cacheprovider", "-q")
    assert "::test_clean" not in "\n".join(
        line for line in quiet.outlines if "objects/iter" in line)
    assert "- membudget -" not in pytester.runpytest("-p", "no:cacheprovider", "-qq").stdout.str()


def test_results_travel_on_the_report_and_junit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(LEAK_AND_CLEAN)
    result = pytester.runpytest("-p", "no:cacheprovider", "--junitxml=out.xml")
    result.assert_outcomes(passed=1, failed=1)
    xml = (pytester.path / "out.xml").read_text()
    assert 'property name="membudget.verdict" value="fail"' in xml
    assert 'property name="membudget.gc_objects.slope" value="1 objects/iter [' in xml


def test_heap_probe_reads_the_plugins_own_loop_as_flat(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest, tracemalloc

        @pytest.mark.membudget(heap=0, heap_growth="4 KiB", iterations=300, warmup=5)
        def test_idle(membudget):
            result = membudget.run(lambda: None)
            heap = result["heap"]
            # Python's free lists settle within a few hundred bytes; nothing grows after.
            assert heap.verdict == "pass", heap.samples
            assert heap.ci[1] < 4 and 0 <= heap.growth < 1024, heap.samples
            assert not tracemalloc.is_tracing()
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_tracemalloc_left_as_found(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest, tracemalloc

        @pytest.mark.membudget(heap=0, iterations=20, warmup=2)
        def test_already_tracing(membudget):
            tracemalloc.start(3)
            try:
                membudget.run(lambda: None)
                assert tracemalloc.is_tracing() and tracemalloc.get_traceback_limit() == 3
            finally:
                tracemalloc.stop()
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_reset_allows_a_second_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.membudget(gc_objects=0, iterations=20, warmup=2)
        def test_twice(membudget):
            first = membudget.run(lambda: None)
            membudget.reset()
            second = membudget.run(lambda: None)
            assert first is not second and second.passed
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
