"""Overhead of pytest-membudget: cost of one sample per probe, and whole runs against a bare
loop of the same iterations.

    python bench/overhead.py [--repeats 3]

Prints figures; asserts nothing (timing targets live here, never in tests).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

from pytest_membudget.probes import create
from pytest_membudget.results import build_result
from pytest_membudget.runner import capacity_for, measure
from pytest_membudget.sampling import Measurement
from pytest_membudget.settings import default_run
from pytest_membudget.spec import build_spec

PROBES = ("rss", "uss", "heap", "malloc", "py_blocks", "gc_objects", "threads", "fds",
          "iter_time")


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def sample_costs(reads: int = 2000) -> list[tuple[str, float]]:
    rows = []
    for name in PROBES:
        probe = create(name)
        probe.start()
        try:
            count = reads if name != "uss" else 200
            begin = time.perf_counter()
            for _ in range(count):
                probe.read()
            rows.append((name, (time.perf_counter() - begin) / count))
        finally:
            probe.stop()
    gc.collect()
    gc.freeze()
    begin = time.perf_counter()
    for _ in range(reads):
        gc.collect()
    rows.append(("gc.collect (frozen heap)", (time.perf_counter() - begin) / reads))
    gc.unfreeze()
    return rows


def py_blocks_on_a_large_heap(objects: int = 2_000_000, reads: int = 200) -> float:
    """One py_blocks read with ``objects`` more small objects alive (its cost grows with the
    interpreter's arenas)."""
    keep = [str(i) for i in range(objects)]
    probe = create("py_blocks")
    probe.start()
    begin = time.perf_counter()
    for _ in range(reads):
        probe.read()
    seconds = (time.perf_counter() - begin) / reads
    probe.stop()
    del keep
    return seconds


def run_once(per_iteration: float, budgets: dict[str, object],
             iterations: int | str) -> tuple[float, float, int, int]:
    spec = build_spec(default_run(), (), {**budgets, "iterations": iterations}, "in bench")
    probes = {name: create(name) for name in spec.probes}
    m = Measurement(spec, probes, capacity_for(spec))
    begin = time.perf_counter()
    for _ in measure(spec, probes, m):
        spin(per_iteration)
    result = build_result(m)
    plugin = time.perf_counter() - begin
    total = result.iterations + result.warmup
    begin = time.perf_counter()
    for _ in range(total):
        spin(per_iteration)
    bare = time.perf_counter() - begin
    return plugin, bare, total, m.stride.every if m.stride is not None else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print("Cost of one sample")
    print(f"  {'probe':<26}{'µs':>10}")
    for name, seconds in sample_costs():
        print(f"  {name:<26}{seconds * 1e6:>10.1f}")
    print(f"  {'py_blocks, 2M more objects':<26}{py_blocks_on_a_large_heap() * 1e6:>10.1f}")

    print("\nWhole run against a bare loop of the same iterations "
          f"(median of {args.repeats}; workload = busy loop)")
    header = f"  {'budgets':<30}{'per iter':>9}{'iters':>10}{'stride':>7}{'bare s':>9}" \
             f"{'plugin s':>10}{'ratio':>8}"
    print(header)
    budget_sets = {
        "rss, threads, fds": {"rss": 0, "threads": 0, "fds": 0},
        "rss, heap, gc_objects": {"rss": 0, "heap": 0, "gc_objects": 0},
    }
    for label, budgets in budget_sets.items():
        for per_iteration, iterations in ((1e-4, 2000), (1e-3, 1000), (1e-2, 200), (1e-3, "auto")):
            runs = [run_once(per_iteration, budgets, iterations) for _ in range(args.repeats)]
            plugin = statistics.median(r[0] for r in runs)
            bare = statistics.median(r[1] for r in runs)
            # An auto run's length differs between repeats: the ratio is taken per run.
            ratio = statistics.median(r[0] / r[1] for r in runs)
            counts = sorted({r[2] for r in runs})
            iters = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
            name = label + (" (auto)" if iterations == "auto" else "")
            print(f"  {name:<30}{per_iteration * 1e3:>7.1f}ms{iters:>10}{runs[0][3]:>7}"
                  f"{bare:>9.3f}{plugin:>10.3f}{ratio:>8.3f}")


if __name__ == "__main__":
    main()
