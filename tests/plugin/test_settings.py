"""Every ini key and flag is read, and the precedence is marker > command line > ini."""

from __future__ import annotations

import pytest

from pytest_membudget.catalog import PROBES
from pytest_membudget.settings import OPTIONS

# Leaks two list objects per iteration against a 1.5/iter budget: above the budget by too
# little to resolve in a short window, so an auto run goes on until its cap.
AMBIGUOUS = """
import pytest, time
KEEP = []

@pytest.mark.membudget(gc_objects="1.5/iter")
def test_capped(membudget):
    membudget.run(lambda: KEEP.extend(([], [])))
"""

SETTINGS_PROBE = """
import pytest

def test_settings(membudget):
    membudget.run(lambda: None)
"""


def ini(pytester: pytest.Pytester, **keys: str) -> None:
    lines = "\n".join(f"membudget_{k} = {v}" for k, v in keys.items())
    pytester.makeini(f"[pytest]\n{lines}\n")


def run_settings(pytester: pytest.Pytester, recorded, *args: str) -> dict:
    pytester.makepyfile(SETTINGS_PROBE)
    pytester.runpytest("-p", "no:cacheprovider", *args).assert_outcomes(passed=1)
    return recorded()["test_settings"]["data"]


def test_every_option_is_covered_here() -> None:
    tested = {"iterations", "warmup", "min_iterations", "max_iterations", "max_seconds", "gc",
              "evidence", "confidence", "budget", "disable", "cuda_history", "require_cuda",
              "device"}
    # Gating keys are read in their own test modules: test_gating_json.py (json,
    # json_samples), test_gating_baseline.py (storage, save, save_overwrite, autosave,
    # compare, compare_fail), test_gating_plot.py (plot).
    tested |= {"json", "json_samples", "storage", "save", "save_overwrite", "autosave",
               "compare", "compare_fail", "plot"}
    # test_inconclusive.py reads strict from the flag, the ini key and the marker;
    # test_footprint.py reads ceiling from the ini key, the flag and the marker.
    tested |= {"strict", "ceiling"}
    # The sweep's keys: test_sweep_repeats.py (sweep, its ini key and bad values;
    # sweep_screen), test_sweep_neighbours.py (sweep_seconds).
    tested |= {"sweep", "sweep_seconds", "sweep_screen"}
    assert {o.key for o in OPTIONS} <= tested


def test_every_run_key_is_an_option_and_reads_its_default() -> None:
    from pytest_membudget.judge.spec import RUN_KEYS, RunSettings
    from pytest_membudget.settings import default_run

    assert set(RUN_KEYS) == set(RunSettings.__dataclass_fields__)
    assert set(RUN_KEYS) <= {o.key for o in OPTIONS}
    run = default_run()
    assert run.iterations is None and run.max_iterations is None and run.strict is False


def test_ini_iterations_and_warmup(pytester: pytest.Pytester, recorded) -> None:
    ini(pytester, iterations="17", warmup="3")
    data = run_settings(pytester, recorded)
    assert data["iterations"] == 17 and data["warmup"] == 3 and data["stopped"] == "fixed"


def test_cli_overrides_ini(pytester: pytest.Pytester, recorded) -> None:
    ini(pytester, iterations="17", warmup="3")
    data = run_settings(pytester, recorded, "--membudget-iterations=21", "--membudget-warmup=2")
    assert data["iterations"] == 21 and data["warmup"] == 2


def test_marker_overrides_cli(pytester: pytest.Pytester, recorded) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.membudget(iterations=11)
        def test_settings(membudget):
            membudget.run(lambda: None)
    """)
    pytester.runpytest("-p", "no:cacheprovider", "--membudget-iterations=21").assert_outcomes(
        passed=1)
    assert recorded()["test_settings"]["data"]["iterations"] == 11


def test_ini_min_iterations_is_the_first_judgement(pytester: pytest.Pytester, recorded) -> None:
    # Above the shortest verdict (640): a run with nothing ambiguous stops at the first
    # judgement, neither at 640 nor at a later checkpoint.
    ini(pytester, min_iterations="700")
    data = run_settings(pytester, recorded)
    assert data["iterations"] == 700 and data["stopped"] == "clear"


def test_ini_max_iterations_caps_auto(pytester: pytest.Pytester, recorded) -> None:
    ini(pytester, min_iterations="20", max_iterations="45")
    pytester.makepyfile(AMBIGUOUS)
    pytester.runpytest("-p", "no:cacheprovider")
    data = recorded()["test_capped"]["data"]
    assert data["iterations"] == 45 and data["stopped"] == "cap"


def test_ini_max_seconds_caps_auto(pytester: pytest.Pytester, recorded) -> None:
    ini(pytester, min_iterations="20", max_seconds="0.5")
    pytester.makepyfile(AMBIGUOUS.replace("KEEP.extend(([], []))",
                                          "(KEEP.extend(([], [])), time.sleep(0.01))"))
    pytester.runpytest("-p", "no:cacheprovider")
    data = recorded()["test_capped"]["data"]
    assert 1 <= data["iterations"] < 100 and data["stopped"] == "cap"


def test_ini_gc_policy(pytester: pytest.Pytester, recorded) -> None:
    # Cycles left to the collector: flat when collected before each sample, growing (until
    # the collector's own schedule runs) when not.
    pytester.makepyfile("""
        import pytest
        def make_cycle():
            a = []
            a.append(a)

        @pytest.mark.membudget(gc_objects=0, iterations=60, warmup=2)
        def test_cycles(membudget):
            membudget.run(make_cycle)
    """)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert recorded()["test_cycles"]["data"]["settings"]["gc"] == "collect"
    ini(pytester, gc="off")
    (pytester.path / "results.jsonl").unlink()
    pytester.runpytest("-p", "no:cacheprovider")
    data = recorded()["test_cycles"]["data"]
    assert data["settings"]["gc"] == "off"
    assert data["probes"]["gc_objects"]["peak"] > min(data["probes"]["gc_objects"]["samples"])


def test_ini_evidence_off(pytester: pytest.Pytester) -> None:
    ini(pytester, evidence="false")
    pytester.makepyfile("""
        import pytest
        KEEP = []
        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_leak(membudget):
            membudget.run(lambda: KEEP.append([]))
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "Evidence from" not in result.stdout.str()
    with_evidence = pytester.runpytest("-p", "no:cacheprovider", "--membudget-evidence")
    assert "Evidence from" in with_evidence.stdout.str()


def test_the_command_line_turns_off_what_the_ini_turns_on(pytester: pytest.Pytester) -> None:
    ini(pytester, evidence="true", disable="true")
    pytester.makepyfile("""
        import pytest
        KEEP = []
        @pytest.mark.membudget(gc_objects=0, iterations=40, warmup=2)
        def test_leak(membudget):
            membudget.run(lambda: KEEP.append([]))
    """)
    # The ini disables measuring: the leak runs once and passes.
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:cacheprovider", "--no-membudget-disable",
                                "--no-membudget-evidence")
    result.assert_outcomes(failed=1)
    assert "Evidence from" not in result.stdout.str()
    # The last of the pair on the command line wins, as with any flag.
    result = pytester.runpytest("-p", "no:cacheprovider", "--no-membudget-disable",
                                "--no-membudget-evidence", "--membudget-evidence")
    assert "Evidence from" in result.stdout.str()


def test_every_bool_the_ini_can_set_has_a_negative_flag() -> None:
    for option in OPTIONS:
        if option.kind == "bool" and not option.flag_only:
            assert option.negative_flag == "--no-" + option.flag[2:]
        else:
            assert option.negative_flag is None


@pytest.mark.parametrize("how", ["ini", "flag", "marker"])
def test_device_from_ini_flag_or_marker(pytester: pytest.Pytester, recorded, how: str) -> None:
    if how == "ini":
        ini(pytester, device="cuda:1")
    args = ["--membudget-device=cuda:1"] if how == "flag" else []
    if how == "marker":
        pytester.makepyfile("""
            import pytest
            @pytest.mark.membudget(device="cuda:1")
            def test_settings(membudget):
                membudget.run(lambda: None)
        """)
        pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
        data = recorded()["test_settings"]["data"]
    else:
        data = run_settings(pytester, recorded, *args)
    assert data["settings"]["device"] == "cuda:1"


def test_ini_confidence(pytester: pytest.Pytester, recorded) -> None:
    ini(pytester, confidence="0.95")
    assert run_settings(pytester, recorded)["settings"]["confidence"] == 0.95
    assert run_settings(pytester, recorded, "--membudget-confidence=0.9")["settings"][
        "confidence"] == 0.9


def test_ini_default_budget_applies_to_fixture_and_marker(pytester: pytest.Pytester,
                                                          recorded) -> None:
    pytester.makeini("[pytest]\nmembudget_budget =\n    gc_objects=0\n    threads_peak=1000\n"
                     "membudget_iterations = 30\n")
    pytester.makepyfile("""
        import pytest
        KEEP = []
        def test_fixture_only(membudget):
            membudget.run(lambda: KEEP.append([]))

        @pytest.mark.membudget(warmup=2)
        def test_marker_only():
            KEEP.append([])

        @pytest.mark.membudget(gc_objects=None)
        def test_opted_out():
            KEEP.append([])

        def test_untouched():
            KEEP.append([])
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    reports = recorded()
    assert reports["test_fixture_only"]["outcome"] == "failed"
    assert reports["test_marker_only"]["outcome"] == "failed"
    assert "gc_objects" not in reports["test_opted_out"]["data"]["probes"]
    assert reports["test_opted_out"]["data"]["probes"]["threads"]["budgets"]["peak"] == 1000
    assert "test_untouched" not in reports


def test_cli_budget_may_repeat(pytester: pytest.Pytester, recorded) -> None:
    data = run_settings(pytester, recorded, "--membudget-iterations=20",
                        "--membudget-budget=gc_objects=0", "--membudget-budget=rss_peak=64 GiB")
    assert data["probes"]["gc_objects"]["budgets"]["slope"] == 0
    assert data["probes"]["rss"]["budgets"]["peak"] == 64 * 1024**3


@pytest.mark.parametrize("how", ["ini", "flag"])
def test_disable_runs_once_without_measuring(pytester: pytest.Pytester, how: str) -> None:
    if how == "ini":
        ini(pytester, disable="true")
    pytester.makepyfile("""
        import pytest
        CALLS = []
        KEEP = []
        @pytest.mark.membudget(gc_objects=0)
        def test_body():
            CALLS.append(1)
            KEEP.append([])

        def test_fixture(membudget):
            result = membudget.run(lambda: CALLS.append(2))
            assert result.stopped == "disabled" and result.probes == {}

        def test_count():
            assert CALLS == [1, 2]
    """)
    args = ["--membudget-disable"] if how == "flag" else []
    pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", *args).assert_outcomes(
        passed=3)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("iterations", "zero", "iterations='zero' from ini key membudget_iterations"),
    ("warmup", "-1", "warmup='-1' from ini key membudget_warmup"),
    ("ceiling", "half", "ceiling='half' from ini key membudget_ceiling*'4x'*'8 GiB'*'off'"),
    ("ceiling", "0.5x", "ceiling='0.5x' from ini key membudget_ceiling*at least 1x"),
    ("max_seconds", "-1", "max_seconds='-1' from ini key membudget_max_seconds"),
    ("gc", "always", "gc='always' from ini key membudget_gc"),
    ("budget", "rss=10 XB/iter", "rss='10 XB/iter' from ini key membudget_budget"),
    ("budget", "rsz=0", "unknown budget 'rsz'"),
])
def test_bad_ini_values_are_usage_errors(pytester: pytest.Pytester, key: str, value: str,
                                         message: str) -> None:
    ini(pytester, **{key: value})
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*pytest-membudget: *{message}*"])
    assert "INTERNALERROR" not in result.stderr.str() + result.stdout.str()


def test_bad_flag_value_names_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider", "--membudget-iterations=-4")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*iterations='-4' from --membudget-iterations*"])


def test_help_lists_every_flag_and_ini_key(pytester: pytest.Pytester) -> None:
    # argparse %-formats flag help: a literal "10%" in it once made `pytest --help` crash.
    result = pytester.runpytest("--help")
    assert result.ret == 0, result.stderr.str()
    text = result.stdout.str()
    for option in OPTIONS:
        assert option.flag in text
        assert option.flag_only or option.ini in text
        assert option.negative_flag is None or option.negative_flag in text
    assert "all:10%" in text
    # The budget help names every probe of the catalog.
    assert all(name in text for name in PROBES)
