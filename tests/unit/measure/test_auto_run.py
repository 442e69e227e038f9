"""How long an auto run goes on, against scripted probe readings: when it may pass, how a
failure is confirmed, and when a fast leak is confirmed early."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from pytest_membudget.judge.policy import MIN_VERDICT_ITERATIONS
from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import capacity_for, measure
from pytest_membudget.measure.results import build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import Probe
from pytest_membudget.settings import default_run

AUTO = default_run(max_seconds=600.0, gc="off", evidence=False)


class Scripted(Probe):
    """Reads ``curve(iteration)``; the run loop below advances the iteration."""

    def __init__(self, name: str, curve: Callable[[int], float]) -> None:
        super().__init__()
        self.name = name
        self.curve = curve
        self.iteration = 0

    def read(self) -> float:
        return self.curve(self.iteration)


def run_auto(probe: str, curve: Callable[[int], float], **marker: object):
    spec = build_spec(AUTO, (), {probe: 0, **marker}, "in test")
    scripted = Scripted(probe, curve)
    m = Measurement(spec, {probe: scripted}, capacity_for(spec))
    for iteration in measure(spec, {probe: scripted}, m):
        scripted.iteration = iteration + 1
        # A workload worth sampling after every iteration (the stride keeps sampling near
        # 5 % of the workload's time; an empty loop would be sampled every 31st).
        until = time.perf_counter() + 0.0002
        while time.perf_counter() < until:
            pass
    return build_result(m)


PAGE = 4096


def pages(nbytes: float) -> float:
    """RSS moves in whole pages."""
    return 50e6 + PAGE * (nbytes // PAGE)


def test_a_flat_rss_runs_until_a_256_byte_leak_would_show() -> None:
    result = run_auto("rss", lambda i: 50e6)
    assert result.passed and result["rss"].verdict == "pass"
    assert result.iterations >= 256  # a 128-iteration tail: 32 KiB at 256 B/iter


def test_a_256_byte_per_iteration_leak_in_pages_is_caught() -> None:
    result = run_auto("rss", lambda i: pages(256 * i))
    assert result["rss"].verdict == "fail"


def test_a_flat_thread_count_passes_at_the_shortest_verdict_length() -> None:
    result = run_auto("threads", lambda i: 12.0)
    assert result["threads"].verdict == "pass"
    assert result.iterations == MIN_VERDICT_ITERATIONS


def test_a_lower_max_iterations_caps_the_shortest_verdict_length() -> None:
    result = run_auto("threads", lambda i: 12.0, max_iterations=200)
    assert result["threads"].verdict == "pass" and result.iterations == 200


@pytest.mark.parametrize("probe, curve", [
    ("rss", lambda i: pages(4096 * max(0, i - 400))),
    ("threads", lambda i: 12.0 + max(0, i - 400) // 10),
])
def test_a_leak_that_sets_in_after_400_flat_iterations_is_caught(probe, curve) -> None:
    result = run_auto(probe, curve)
    assert result[probe].verdict == "fail", result[probe].ci


@pytest.mark.parametrize("fill", [100, 300])
def test_a_buffer_that_fills_for_hundreds_of_iterations_is_not_a_leak(fill: int) -> None:
    # 8 KiB per iteration until `fill` (counted from the start of warm-up), then flat.
    result = run_auto("rss", lambda i: pages(8192 * min(i, fill)))
    assert result["rss"].verdict == "pass", result["rss"].ci


def test_a_leak_is_confirmed_past_the_minimum_confirmation_length() -> None:
    result = run_auto("rss", lambda i: pages(8192 * i))
    assert result["rss"].verdict == "fail"
    assert result.iterations >= MIN_VERDICT_ITERATIONS


def test_a_fast_leak_is_confirmed_at_twice_its_first_failure() -> None:
    # 4 MiB per iteration: 64 MiB of growth is reached long before the minimum length.
    result = run_auto("rss", lambda i: pages(4 * 1024**2 * i))
    assert result["rss"].verdict == "fail"
    assert result.iterations == 128


def test_a_thread_leak_stops_once_it_has_grown_by_64() -> None:
    result = run_auto("threads", lambda i: 10.0 + i)
    assert result["threads"].verdict == "fail"
    assert result.iterations == 128


def test_a_slow_leak_is_followed_past_the_reference_length_in_the_same_storage() -> None:
    # 8 objects every 160 iterations: 0.05/iter, plain only over thousands of iterations.
    spec = build_spec(AUTO, (), {"gc_objects": 0}, "in test")
    scripted = Scripted("gc_objects", lambda i: 1000.0 + 8 * (i // 160))
    m = Measurement(spec, {"gc_objects": scripted}, capacity_for(spec))
    capacity, x = m.capacity, m.x
    for iteration in measure(spec, {"gc_objects": scripted}, m):
        scripted.iteration = iteration + 1
        assert m.rows <= capacity
    result = build_result(m)
    assert result["gc_objects"].verdict == "fail", result["gc_objects"].ci
    assert result.iterations > 2000 and m.x is x
    window = result["gc_objects"].sample_iterations[result.window_start:]
    assert np.all(np.diff(window) > 0)


def run_scripted(curves: dict[str, Callable[[int], float]], **marker: object):
    """An auto run of several scripted probes, each budgeted at 0 per iteration."""
    spec = build_spec(AUTO, (), {**{name: 0 for name in curves}, **marker}, "in test")
    probes = {name: Scripted(name, curve) for name, curve in curves.items()}
    m = Measurement(spec, dict(probes), capacity_for(spec))
    for iteration in measure(spec, dict(probes), m):
        for scripted in probes.values():
            scripted.iteration = iteration + 1
        until = time.perf_counter() + 0.0002
        while time.perf_counter() < until:
            pass
    return build_result(m)


def test_a_budget_that_passed_keeps_its_pass_while_the_run_goes_on_for_another() -> None:
    """``fds`` is flat until the shortest verdict, where it would have stood alone, and one
    descriptor opens later; ``rss`` wanders by hundreds of pages to the cap, never settled.
    The run goes on for ``rss``; ``fds`` keeps its pass (a late step, which does not keep
    growing, would read ambiguous in the final tail and leave it inconclusive)."""
    noise = np.random.default_rng(0).integers(0, 400, size=4000)
    result = run_scripted({"fds": lambda i: 10.0 + (i > 1200),
                           "rss": lambda i: 50e6 + PAGE * float(noise[i % 4000])},
                          max_iterations=2000)
    assert result.iterations == 2000, result.iterations
    assert result["rss"].verdict == "inconclusive"
    assert result["fds"].verdict == "pass", result["fds"]
    # Its figures are those of the checkpoint where it settled, and the JSON says which.
    settled = result["fds"].settled_at
    assert settled is not None and MIN_VERDICT_ITERATIONS <= settled <= 1200, settled
    assert result["fds"].to_dict(samples=False)["settled_at"] == settled
    assert result["rss"].settled_at is None


def test_a_budget_that_passed_still_fails_when_it_leaks_later() -> None:
    """A pass kept while the run goes on for another budget gives way to a failure: a
    descriptor leaked on every call from the shortest verdict on is caught."""
    noise = np.random.default_rng(1).integers(0, 400, size=4000)
    result = run_scripted({"fds": lambda i: 10.0 + max(0, i - MIN_VERDICT_ITERATIONS),
                           "rss": lambda i: 50e6 + PAGE * float(noise[i % 4000])},
                          max_iterations=3000)
    assert result["fds"].verdict == "fail", result["fds"]
