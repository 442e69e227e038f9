"""Rise budgets (``<probe>_rise``): how far a probe went above the run's start, and the one-call
run of a test budgeted only on its footprint."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_membudget.judge.spec import SpecError, build_spec, split_budget_key
from pytest_membudget.judge.verdict import judge
from pytest_membudget.settings import default_run
from pytest_membudget.vocabulary import BudgetKind, Status

W = "in test"
MIB = 1024.0**2


def judged(budget: str, peak: float, start: float) -> tuple[Status, float]:
    spec = build_spec(default_run(), (), {"rss_rise": budget}, W)
    x = np.arange(1.0, 3.0)
    verdict = judge(spec, x, {"rss": np.array([start, start])}, {"rss": peak},
                    starts={"rss": start})
    outcome = verdict.probes["rss"].outcomes[0]
    return outcome.status, outcome.measured


def test_a_rise_is_the_peak_less_the_start() -> None:
    status, measured = judged("20 MiB", peak=500 * MIB, start=470 * MIB)
    assert status is Status.FAIL and measured == 30 * MIB


def test_the_same_peak_passes_from_a_higher_start() -> None:
    # An absolute ceiling depends on where the process started; a rise does not.
    status, measured = judged("20 MiB", peak=500 * MIB, start=490 * MIB)
    assert status is Status.PASS and measured == 10 * MIB


def test_a_rise_without_a_start_is_not_a_pass() -> None:
    assert judged("20 MiB", peak=500 * MIB, start=math.nan)[0] is Status.AMBIGUOUS


def test_rise_keys_name_every_byte_and_count_probe() -> None:
    assert split_budget_key("rss_rise") == ("rss", BudgetKind.RISE)
    assert split_budget_key("cuda_allocated_rise") == ("cuda_allocated", BudgetKind.RISE)
    assert split_budget_key("threads_rise") == ("threads", BudgetKind.RISE)
    with pytest.raises(SpecError, match="iter_time is a time"):
        split_budget_key("iter_time_rise")


def test_a_footprint_only_test_runs_one_call_without_warm_up() -> None:
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "heap_peak": "2 GiB"}, W)
    assert spec.run.iterations == 1 and spec.run.warmup == 0


def test_what_the_marker_sets_stays() -> None:
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "warmup": 2}, W)
    assert (spec.run.iterations, spec.run.warmup) == (1, 2)
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "iterations": "auto"}, W)
    assert spec.run.iterations is None and spec.run.warmup == 0
    spec = build_spec(default_run(iterations=30), (), {"rss_rise": "1 GiB"}, W)
    assert spec.run.iterations == 30


def test_a_footprint_only_test_warms_up_only_as_its_marker_says() -> None:
    # iterations=1 alone is one call: the default warm-up is a loop's, not a phase's.
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "iterations": 1}, W)
    assert (spec.run.iterations, spec.run.warmup) == (1, 0)
    spec = build_spec(default_run(warmup=3), (), {"rss_rise": "1 GiB", "iterations": 4}, W)
    assert (spec.run.iterations, spec.run.warmup) == (4, 0)
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "iterations": 1, "warmup": 1},
                      W)
    assert (spec.run.iterations, spec.run.warmup) == (1, 1)


def test_a_slope_beside_a_rise_keeps_the_auto_run() -> None:
    spec = build_spec(default_run(), (), {"rss_rise": "1 GiB", "rss": 0}, W)
    assert spec.run.iterations is None and spec.run.warmup == default_run().warmup
