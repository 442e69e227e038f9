"""Bad input: a clear error naming the test and the value; never INTERNALERROR or a pass."""

from __future__ import annotations

import pytest


def run(pytester: pytest.Pytester, source: str) -> pytest.RunResult:
    pytester.makepyfile(source)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    return result


@pytest.mark.parametrize(("marker", "message"), [
    ("rsss=0", "unknown budget 'rsss'"),
    ("rss='10 XB/iter'", "rss='10 XB/iter' * unknown unit 'XB'"),
    ("iterations=0", "iterations=0 *"),
    ("iterations=-5", "iterations=-5 *"),
    ("warmup=-1", "warmup=-1 * must be >= 0"),
    ("rss_rise='4 KiB/iter'", "rss_rise='4 KiB/iter' * this is a slope*"),
    ("rss_rise=-1", "rss_rise=-1 * a budget must be a finite number >= 0"),
    ("heap_rise='lots'", "heap_rise='lots' * cannot read this as a quantity*'4 KiB'*"),
    ("threads_rise='1 MiB'", "threads_rise='1 MiB' * unknown unit 'MiB'*"),
    ("iter_time_rise='1 ms'", "'iter_time_rise': a rise budget limits how far*iter_time is a "
                              "time*"),
    ("rss_raise='1 MiB'", "unknown budget 'rss_raise' (did you mean 'rss_rise'?)*"),
    ("rss='4 KiB'", "rss='4 KiB' * this is a size, but rss is a slope budget*"),
    ("rss_peak='4 KiB/iter'", "rss_peak='4 KiB/iter' * this is a slope*"),
    ("rss=[1]", "rss=[[]1[]] * expected a number or a string*got list"),
    ("iterations=2.5", "iterations=2.5 * expected 'auto' or a whole number*"),
    ("max_seconds='soon'", "max_seconds='soon' *"),
    ("children_uss='64 MiB'", "children_uss='64 MiB' in the membudget marker: this is a size, "
                              "but children_uss is a slope budget*'64 MiB/iter'*"
                              "children_uss_rise= / children_uss_peak= / "
                              "children_uss_growth=*"),
    ("child_uss=0", "unknown budget 'child_uss' (did you mean 'children_uss'?)*children_uss*"),
    ("children='1 MiB/iter'", "children='1 MiB/iter' * unknown unit 'MiB'*processes*"),
])
def test_bad_marker_values_error_the_test(pytester: pytest.Pytester, marker: str,
                                          message: str) -> None:
    result = run(pytester, f"""
        import pytest

        @pytest.mark.membudget({marker})
        def test_bad(membudget):
            membudget.run(lambda: None)

        def test_neighbour():
            pass
    """)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*test_bad_marker_values_error_the_test.py::test_bad*{message}*"])


def test_positional_marker_arguments(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget("rss")
        def test_bad():
            pass
    """)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*test_bad*keyword arguments only*('rss',)*"])


def test_fixture_used_twice_without_reset(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget(gc_objects=0, iterations=20, warmup=1)
        def test_twice(membudget):
            membudget.run(lambda: None)
            membudget.run(lambda: None)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_twice: the membudget fixture was already used*reset()*"])


def test_marker_and_fixture_but_no_run(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget(rss=0)
        def test_forgot(membudget):
            pass
    """)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_forgot*never called membudget.run()*nothing was measured*"])


def test_leaving_the_loop_early_is_not_a_pass(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget(gc_objects=0, iterations=50, warmup=1)
        def test_break(membudget):
            for i in membudget.iterate():
                if i == 10:
                    break
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_break*loop was left before the run finished*"])


def test_run_needs_a_callable(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        def test_not_callable(membudget):
            membudget.run(42)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_not_callable*takes the workload*callable*got int 42*"])


def test_workload_error_keeps_its_own_error_and_the_samples(pytester: pytest.Pytester,
                                                            recorded) -> None:
    result = run(pytester, """
        import pytest
        CALLS = []
        def step():
            CALLS.append(1)
            if len(CALLS) == 25:
                raise ValueError("bad batch at step 25")

        @pytest.mark.membudget(gc_objects=0, iterations=100, warmup=2)
        def test_raises(membudget):
            membudget.run(step)
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*ValueError: bad batch at step 25*",
        "*membudget: samples before the run stopped*",
        "*22 measured iterations before the workload raised*",
        "*gc_objects*",
    ])
    data = recorded()["test_raises"]["data"]
    assert data["complete"] is False and data["iterations"] == 22
    assert len(data["probes"]["gc_objects"]["samples"]) > 1


def test_workload_error_restores_the_collector(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import gc, pytest, tracemalloc
        def boom():
            raise RuntimeError("boom")

        @pytest.mark.membudget(heap=0, iterations=10, warmup=1)
        def test_raises(membudget):
            membudget.run(boom)

        def test_after():
            from pytest_membudget import interpreter
            assert not interpreter.session_froze()  # nothing of the plugin's left frozen
            assert not tracemalloc.is_tracing()
    """)
    result.assert_outcomes(failed=1, passed=1)


def test_an_async_body_no_async_plugin_runs_is_an_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget(rss=0)
        async def test_async():
            pass
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_async is an async test that uses membudget, and no "
                                 "async plugin ran it, so nothing was measured*"])


def test_a_marked_test_with_a_bad_workload_reports_one_error(pytester: pytest.Pytester) -> None:
    result = run(pytester, """
        import pytest
        @pytest.mark.membudget(rss=0)
        def test_not_callable(membudget):
            membudget.run(42)
    """)
    result.assert_outcomes(failed=1, errors=0)
    assert "never called membudget.run()" not in result.stdout.str()


def test_a_workload_that_raises_on_its_first_call_fails_with_its_error(
        pytester: pytest.Pytester) -> None:
    # The run stops before every probe was read: the samples shown under the failure hold
    # unread values, which must not break the report.
    pytester.makepyfile(test_first_call="""
        def test_wrong_arguments(membudget):
            membudget.run(lambda: None, heap=0)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*TypeError*unexpected keyword argument 'heap'*"])
    assert "INTERNALERROR" not in result.stdout.str()
