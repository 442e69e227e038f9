"""iter_cpu_time through the marker: a loop whose own work grows fails it with the usual text;
a loop that only waits longer passes it, as wall time does not.

The workloads spin on the thread's own CPU clock, so the CPU time of each iteration is what
they ask for however busy the machine is (a busy machine stretches their wall time only)."""

from __future__ import annotations

import pytest

WORKLOADS = """
import time

import pytest


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Work:
    def __init__(self):
        self.calls = 0
        self.wall = []

    def growing(self):
        # 50 us of CPU, and 1 us more on every call.
        spin(50e-6 + 1e-6 * self.calls)
        self.calls += 1

    def waiting_longer(self):
        # The same 50 us of CPU, then a sleep 20 us longer on every call.
        begin = time.perf_counter()
        spin(50e-6)
        time.sleep(1e-4 + 2e-5 * self.calls)
        self.calls += 1
        self.wall.append(time.perf_counter() - begin)


@pytest.mark.membudget(iter_cpu_time="0.2 us/iter", warmup=5, iterations=200)
def test_growing_work(membudget):
    membudget.run(Work().growing)


@pytest.mark.membudget(iter_cpu_time="5 us/iter", warmup=5, iterations=200)
def test_waiting_longer(membudget):
    work = Work()
    result = membudget.run(work.waiting_longer)
    cpu = result["iter_cpu_time"]
    assert cpu.verdict == "pass" and cpu.unit == "s"
    assert len(cpu.samples) == len(cpu.sample_iterations) > 20
    assert min(cpu.samples[1:]) >= 50e-6  # the first sample precedes the first call
    # Each call's wall time grew by 20 us (a sleep never ends early): 3.6 ms over 180 calls.
    assert min(work.wall[-20:]) - min(work.wall[:20]) > 3e-3
    assert "iter_time" not in result.probes
"""


def test_cpu_time_sees_growing_work_and_not_waiting(pytester: pytest.Pytester,
                                                    recorded) -> None:
    pytester.makepyfile(WORKLOADS)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*BudgetExceeded: membudget: 1 budget(s) exceeded in "
        "test_cpu_time_sees_growing_work_and_not_waiting.py::test_growing_work*",
        "*iter_cpu_time still grows * at the end of the run*budget 200 ns/iter*",
    ])
    reports = recorded()
    growing = reports["test_growing_work"]["data"]["probes"]["iter_cpu_time"]
    assert growing["verdict"] == "fail"
    assert growing["slope"] == pytest.approx(1e-6, rel=0.3)
    # A slowdown has no allocation to show: no rerun is made for evidence.
    assert not reports["test_growing_work"]["data"].get("evidence")
    assert reports["test_waiting_longer"]["data"]["passed"] is True


def test_a_bad_cpu_time_budget_errors_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.membudget(iter_cpu_time="1 KiB/iter")
        def test_bad(membudget):
            membudget.run(lambda: None)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*test_bad*iter_cpu_time='1 KiB/iter' in the membudget marker*unknown unit 'KiB'; "
        "use s, ms, us, ns*"])
