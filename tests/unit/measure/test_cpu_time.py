"""iter_cpu_time: the loop laps the thread's CPU clock at the end of every iteration, keeps the
cheapest iteration of each sample, leaves its own sampling and judging out, and reads the
clock only where the probe is budgeted.

The clock here is a counter that only the workload and a costly probe move, so each sample
is known exactly."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import pytest

from pytest_membudget.fixture import DEFAULT_PROBES
from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import capacity_for, measure, open_measurement
from pytest_membudget.measure.results import build_result
from pytest_membudget.measure.samples import Measurement
from pytest_membudget.probes import Probe
from pytest_membudget.probes.timing import IterCpuTimeProbe
from pytest_membudget.settings import default_run
from pytest_membudget.vocabulary import StopReason

#: CPU seconds a read of the costly probe takes: far more than any iteration, so that a lap
#: that took it in would be plain in every sample after it.
SAMPLE_CPU = 1.0


class FakeCpuClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


class CostlyProbe(Probe):
    """A gc_objects stand-in whose every read costs the thread SAMPLE_CPU: it is read in
    each sample and, as a probe of the process's own memory, again after each judgement."""

    name = "gc_objects"

    def __init__(self, clock: FakeCpuClock) -> None:
        super().__init__()
        self.clock = clock

    def read(self) -> float:
        self.clock.now += SAMPLE_CPU
        return 1.0


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeCpuClock:
    fake = FakeCpuClock()
    monkeypatch.setattr(IterCpuTimeProbe, "clock", staticmethod(fake))
    return fake


def run(clock: FakeCpuClock, budgets: dict[str, object],
        work: Callable[[int], float], capacity: int = 0) -> Measurement:
    spec = build_spec(default_run(), (), {"gc_objects": 0, **budgets}, "in test")
    probes: dict[str, Probe] = {"iter_cpu_time": IterCpuTimeProbe(), "gc_objects":
                                CostlyProbe(clock)}
    m = Measurement(spec, probes, capacity or capacity_for(spec))
    for iteration in measure(spec, probes, m):
        clock.now += work(iteration)
    return m


def expected_samples(m: Measurement, work: Callable[[int], float]) -> tuple[list, list]:
    """Each window sample after the first: the least work of the iterations since the one
    before (a sample at x follows the iterations numbered up to x - 1)."""
    x = m.x[m.window_row:m.rows]
    got = m.values[m.window_row + 1:m.rows, 0]
    want = [min(work(i) for i in range(int(a), int(b))) for a, b in pairwise(x)]
    return list(got), want


def slowing(i: int) -> float:
    return 1e-4 + 1e-6 * i


def test_samples_are_the_workload_s_cpu_time_per_iteration(clock: FakeCpuClock) -> None:
    m = run(clock, {"iter_cpu_time": "2 us/iter", "iterations": 200, "warmup": 3}, slowing)
    assert m.stride is not None and m.stride.every > 1
    got, want = expected_samples(m, slowing)
    assert len(got) > 10
    assert got == pytest.approx(want, rel=1e-9)
    # The warm-up is lapped iteration by iteration; the window's first row is its median.
    warmup = m.values[1:m.window_row, 0]
    assert list(warmup) == pytest.approx([slowing(i) for i in range(3)], rel=1e-9)
    assert m.values[m.window_row, 0] == pytest.approx(slowing(1))


@pytest.mark.parametrize("most", [None, 100])
def test_a_judgement_s_own_cpu_time_is_not_the_workload_s(clock: FakeCpuClock,
                                                           most: int | None) -> None:
    # Auto: judged at each checkpoint, and the costly probe read again after each judgement.
    # Capped at 100 calls, with room for every sample, each call is a sample of its own, so
    # the first lap after a judgement is a sample by itself.
    m = run(clock, {"iter_cpu_time": "2 us/iter", "warmup": 3, "max_iterations": most},
            lambda i: 1e-4, capacity=4000)
    got, want = expected_samples(m, lambda i: 1e-4)
    assert got == pytest.approx(want, rel=1e-9)
    assert m.stride is not None and (m.stride.every == 1) == (most is not None)
    result = build_result(m)
    assert result.passed and result["iter_cpu_time"].verdict == "pass"
    assert result.stopped is (StopReason.CLEAR if most is None else StopReason.CAP)


def test_cpu_time_that_grows_fails_its_budget(clock: FakeCpuClock) -> None:
    # A fixed count: an auto run's checkpoints also follow the wall clock (its seconds of
    # work), so on a busy machine it runs longer, its samples' stride doubles within the
    # window, and the slope of each sample's cheapest iteration (its first, here), read at
    # the sample's end, comes out a few percent low (0.98 us/iter, measured under -n 2
    # beside a busy core).
    result = build_result(run(clock, {"iter_cpu_time": "0.5 us/iter", "warmup": 3,
                                      "iterations": 640}, slowing))
    probe = result["iter_cpu_time"]
    assert probe.verdict == "fail" and not result.passed
    assert probe.slope == pytest.approx(1e-6, rel=0.01)


def a_neighbour_every_fifth_call(i: int) -> float:
    # A context switch's cache refill, say: it only ever adds.
    return 1e-4 + 1e-6 * i + (5e-4 if i % 5 == 0 else 0.0)


def test_time_a_neighbour_adds_is_left_out(clock: FakeCpuClock) -> None:
    m = run(clock, {"iter_cpu_time": "2 us/iter", "iterations": 200, "warmup": 3},
            a_neighbour_every_fifth_call)
    assert m.stride is not None and m.stride.every >= 5
    got, want = expected_samples(m, a_neighbour_every_fifth_call)
    assert got == pytest.approx(want, rel=1e-9)
    # No sample holds a spike: each is the undisturbed cost of its first or second iteration.
    unspiked, _ = expected_samples(m, slowing)
    assert all(0 <= g - u <= 1e-6 + 1e-12 for g, u in zip(got, unspiked, strict=True))


def test_the_clock_is_read_once_an_iteration_and_once_a_sample(clock: FakeCpuClock) -> None:
    m = run(clock, {"iter_cpu_time": "2 us/iter", "iterations": 600, "warmup": 3},
            lambda i: 1e-4)
    samples = m.rows - m.window_row - 1
    # Around each warm-up iteration; then at the end of each window iteration, and when the
    # workload resumes after the window's first sample and after each later one.
    assert clock.reads == 2 * 3 + m.measured + 1 + samples


@pytest.mark.parametrize("budgets", [{"iter_time": "2 us/iter"}, {"rss": 0}, {}])
def test_the_clock_is_not_read_unless_the_probe_is_budgeted(
        clock: FakeCpuClock, budgets: dict[str, object]) -> None:
    spec = build_spec(default_run(), (), {**budgets, "iterations": 40, "warmup": 2}, "in test")
    m = open_measurement(spec, spec.probes or DEFAULT_PROBES)
    for _ in measure(spec, m.probes, m):
        pass
    assert "iter_cpu_time" not in m.probes
    assert clock.reads == 0


def test_a_slow_iteration_s_sample_is_the_cheapest_of_several(clock: FakeCpuClock) -> None:
    # Iterations of a millisecond: sampling after each would cost under 5 % of the work, so
    # every other probe is sampled after each one; CPU time is sampled over at least four,
    # so that a neighbour's context switch in one of them is left out.
    import time

    def slow(i: int) -> float:
        time.sleep(0.001)
        return a_neighbour_every_fifth_call(i)

    m = run(clock, {"iter_cpu_time": "2 us/iter", "iterations": 200, "warmup": 3}, slow)
    assert m.stride is not None and m.stride.every >= 4
    got, want = expected_samples(m, a_neighbour_every_fifth_call)
    assert got == pytest.approx(want, rel=1e-9)
