"""What the clocks behind iter_time and iter_cpu_time cost, and what a run budgeted on each
costs per iteration against a bare loop.

    python bench/clock_cost.py [--repeats 5] [--iterations 20000]

One call of each clock (best of ``--repeats``), with the main thread alone and with eight more
threads alive (the process CPU clock sums over threads); then whole fixed runs of a workload
of about 1 us, budgeted on iter_time, on iter_cpu_time, and on both, each against the same
iterations of a bare loop (median of ``--repeats``).

Prints figures; asserts nothing (timing targets live here, never in tests).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import timeit
from collections.abc import Callable

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import measure, open_measurement
from pytest_membudget.settings import default_run

CLOCKS: dict[str, Callable[[], float | int]] = {
    "time.perf_counter (iter_time)": time.perf_counter,
    "time.thread_time (iter_cpu_time)": time.thread_time,
    "time.thread_time_ns": time.thread_time_ns,
    "time.process_time": time.process_time,
    "time.process_time_ns": time.process_time_ns,
}
CALLS = 200_000


def clock_costs(repeats: int) -> dict[str, float]:
    return {name: min(timeit.repeat(clock, number=CALLS, repeat=repeats)) / CALLS
            for name, clock in CLOCKS.items()}


def work() -> None:
    sum(range(20))  # about 1 us


def run_seconds(budgets: dict[str, object], iterations: int) -> float:
    spec = build_spec(default_run(), (), {**budgets, "iterations": iterations, "warmup": 5,
                                          "evidence": False}, "in bench")
    m = open_measurement(spec, spec.probes)
    begin = time.perf_counter()
    for _ in measure(spec, m.probes, m):
        work()
    return time.perf_counter() - begin


def bare_seconds(iterations: int) -> float:
    begin = time.perf_counter()
    for _ in range(iterations + 5):
        work()
    return time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20_000)
    args = parser.parse_args()

    print(f"One clock call (best of {args.repeats} x {CALLS:,} calls), ns")
    alone = clock_costs(args.repeats)
    release = threading.Event()
    threads = [threading.Thread(target=release.wait) for _ in range(8)]
    for thread in threads:
        thread.start()
    try:
        crowded = clock_costs(args.repeats)
    finally:
        release.set()
        for thread in threads:
            thread.join()
    print(f"  {'clock':<36}{'1 thread':>10}{'9 threads':>11}")
    for name in CLOCKS:
        print(f"  {name:<36}{alone[name] * 1e9:>10.0f}{crowded[name] * 1e9:>11.0f}")

    print(f"\nFixed runs of {args.iterations:,} iterations of a ~1 us workload "
          f"(median of {args.repeats}), us per iteration")
    print(f"  {'budgets':<36}{'bare':>8}{'run':>8}{'added':>8}")
    for label, budgets in {"iter_time": {"iter_time": "2 us/iter"},
                           "iter_cpu_time": {"iter_cpu_time": "2 us/iter"},
                           "iter_time and iter_cpu_time": {"iter_time": "2 us/iter",
                                                           "iter_cpu_time": "2 us/iter"},
                           }.items():
        pairs = [(bare_seconds(args.iterations), run_seconds(budgets, args.iterations))
                 for _ in range(args.repeats)]
        bare = statistics.median(b for b, _ in pairs) / args.iterations * 1e6
        run = statistics.median(r for _, r in pairs) / args.iterations * 1e6
        print(f"  {label:<36}{bare:>8.2f}{run:>8.2f}{run - bare:>8.2f}")


if __name__ == "__main__":
    main()
