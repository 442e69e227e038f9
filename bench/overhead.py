"""Overhead of pytest-membudget: cost of one sample per probe, and whole runs against a bare
loop of the same iterations; the process-tree probes with 4 worker processes alive.

    python bench/overhead.py [--repeats 3] [--torch] [--tree-only] [--jax]

``--torch`` imports torch first, so that the workers are forked from a process the size of
a training job's (their page tables, which smaps_rollup walks, are that size too).
``--tree-only`` measures only the process-tree probes. ``--jax`` measures only the JAX
probes (JAX's CPU build): one sample with 100 and 10,000 live arrays, and whole runs with
100 arrays alive.

Prints figures; asserts nothing (timing targets live here, never in tests).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import multiprocessing
import statistics
import time
from collections.abc import Iterator

from pytest_membudget.judge.spec import build_spec
from pytest_membudget.measure.loop import measure, open_measurement
from pytest_membudget.measure.results import build_result
from pytest_membudget.probes import create
from pytest_membudget.settings import default_run

PROBES = ("rss", "uss", "heap", "malloc", "py_blocks", "gc_objects", "threads", "fds",
          "iter_time")
TREE_PROBES = ("children", "children_uss", "tree_pss")
WORKERS = 4
#: Memory each worker writes when it starts, so that its smaps_rollup has pages to walk.
WORKER_BYTES = 16 * 1024**2
_held: list[bytearray] = []


def _hold_memory() -> None:
    _held.append(bytearray(b"x") * WORKER_BYTES)


@contextlib.contextmanager
def workers(count: int = WORKERS) -> Iterator[None]:
    """``count`` live worker processes (a fork pool, each holding WORKER_BYTES)."""
    pool = multiprocessing.get_context("fork").Pool(count, initializer=_hold_memory)
    pool.map(abs, range(count * 4))  # every worker has started and run its initializer
    try:
        yield
    finally:
        pool.terminate()
        pool.join()


def psutil_children_uss() -> float:
    """children_uss the way psutil reads it: every process's parent, then its USS
    (memory_full_info, or memory_footprint from psutil 8.0 on)."""
    import psutil

    from pytest_membudget.probes.psutil_compat import uss_reader

    total = 0
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess, psutil.ZombieProcess):
            total += uss_reader(child)()
    return float(total)


def tree_sample_costs(reads: int = 300) -> list[tuple[str, float]]:
    """One sample of each process-tree probe (the listing, each worker's stat and
    smaps_rollup), with WORKERS workers alive; and psutil's reading of the same figure."""
    rows = []
    with workers():
        for name in TREE_PROBES:
            probe = create(name)
            probe.start()
            try:
                begin = time.perf_counter()
                for _ in range(reads):
                    probe.sync()
                    probe.read()
                rows.append((f"{name} ({WORKERS} workers)", (time.perf_counter() - begin) / reads))
            finally:
                probe.stop()
        begin = time.perf_counter()
        for _ in range(reads):
            psutil_children_uss()
        rows.append((f"children_uss by psutil ({WORKERS})", (time.perf_counter() - begin) / reads))
    return rows


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
    # As the fixture opens it: with the witness an rss budget has sampled beside it.
    m = open_measurement(spec, spec.probes)
    begin = time.perf_counter()
    for _ in measure(spec, m.probes, m):
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
    parser.add_argument("--torch", action="store_true",
                        help="import torch first (workers forked from a training-size process)")
    parser.add_argument("--tree-only", action="store_true",
                        help="only the process-tree probes (children, children_uss, tree_pss)")
    parser.add_argument("--jax", action="store_true",
                        help="only the JAX probes (jax_arrays, jax_array_bytes, jax_compiles)")
    parser.add_argument("--watch-only", action="store_true",
                        help="only what the RSS watched beside budgets blind to native memory "
                             "costs (py_blocks and heap budgets, with and without it)")
    args = parser.parse_args()
    if args.watch_only:
        watch_rows(args.repeats)
        return
    if args.jax:
        jax_rows(args.repeats)
        return
    if args.torch:
        import torch  # noqa: F401

    print("Cost of one sample")
    print(f"  {'probe':<32}{'µs':>10}")
    costs = tree_sample_costs() if args.tree_only else [*sample_costs(), *tree_sample_costs()]
    for name, seconds in costs:
        print(f"  {name:<32}{seconds * 1e6:>10.1f}")
    if not args.tree_only:
        print(f"  {'py_blocks, 2M more objects':<32}"
              f"{py_blocks_on_a_large_heap() * 1e6:>10.1f}")

    print("\nWhole run against a bare loop of the same iterations "
          f"(median of {args.repeats}; workload = busy loop)")
    header = f"  {'budgets':<34}{'per iter':>7}{'iters':>10}{'stride':>7}{'bare s':>9}" \
             f"{'plugin s':>10}{'ratio':>8}"
    print(header)
    budget_sets: dict[str, dict[str, object]] = {
        "rss, threads, fds": {"rss": 0, "threads": 0, "fds": 0},
        "rss, heap, gc_objects": {"rss": 0, "heap": 0, "gc_objects": 0},
        f"tree probes, {WORKERS} workers": {"children": 0, "children_uss": 0, "tree_pss": 0},
        f"children_uss, {WORKERS} workers": {"children_uss": 0},
    }
    for label, budgets in budget_sets.items():
        tree = any(name in TREE_PROBES for name in budgets)
        if args.tree_only and not tree:
            continue
        with workers() if tree else contextlib.nullcontext():
            # A sample of the tree costs milliseconds: longer iterations show where the
            # stride brings it down to the sampling share.
            lengths = TREE_LENGTHS if tree else LENGTHS
            run_set(label, budgets, args.repeats, lengths)


#: (seconds per iteration, iterations) of the whole-run rows.
LENGTHS: tuple[tuple[float, int | str], ...] = (
    (1e-4, 2000), (1e-3, 1000), (1e-2, 200), (1e-3, "auto"))
TREE_LENGTHS: tuple[tuple[float, int | str], ...] = (
    (1e-3, 1000), (1e-2, 200), (1e-3, "auto"), (1e-2, "auto"))


JAX_PROBES = ("jax_arrays", "jax_array_bytes", "jax_compiles")


def jax_sample_cost(arrays: int, samples: int = 200) -> float:
    """One sample of the JAX probes (the live arrays listed and tallied once, the compile
    count read) with ``arrays`` live arrays."""
    import jax.numpy as jnp

    keep = [jnp.full((16,), float(i)) for i in range(arrays)]
    probes = [create(name) for name in JAX_PROBES]
    for probe in probes:
        probe.start()
    try:
        begin = time.perf_counter()
        for _ in range(samples):
            probes[0].sync()  # one refresh serves the three (ProbeSet keeps one per kind)
            for probe in probes:
                probe.read()
        return (time.perf_counter() - begin) / samples
    finally:
        for probe in probes:
            probe.stop()
        del keep


def jax_rows(repeats: int) -> None:
    import jax.numpy as jnp

    print("Cost of one sample of the JAX probes (jax_arrays, jax_array_bytes, jax_compiles)")
    print(f"  {'live arrays':<32}{'µs':>10}")
    for arrays in (100, 10_000):
        print(f"  {arrays:<32,}{jax_sample_cost(arrays) * 1e6:>10.1f}")
    keep = [jnp.full((16,), float(i)) for i in range(100)]
    print("\nWhole run against a bare loop of the same iterations, 100 live arrays "
          f"(median of {repeats}; workload = busy loop)")
    print(f"  {'budgets':<34}{'per iter':>7}{'iters':>10}{'stride':>7}{'bare s':>9}"
          f"{'plugin s':>10}{'ratio':>8}")
    run_set("jax_arrays, jax_array_bytes, jax_compiles",
            dict.fromkeys(JAX_PROBES, 0), repeats, LENGTHS)
    del keep


def watch_rows(repeats: int) -> None:
    """Budgets blind to native memory have RSS sampled beside them for the note
    (verdict.native_watch): the same runs with the watch and with it switched off,
    interleaved, as ratios to the bare loop."""
    from pytest_membudget.measure import loop

    watched = loop.native_watch
    print(f"What watching RSS beside budgets blind to native memory costs (median of "
          f"{repeats}; workload = busy loop)")
    print(f"  {'budgets':<34}{'per iter':>7}{'iters':>10}{'stride':>7}{'bare s':>9}"
          f"{'plugin s':>10}{'ratio':>8}")
    for budgets in ({"py_blocks": 0}, {"heap": 0}):
        for per_iteration, iterations in LENGTHS:
            for label, watch in (("watched", watched), ("not watched", lambda spec: "")):
                loop.native_watch = watch  # type: ignore[assignment]
                try:
                    name = ", ".join(budgets) + f" (rss {label})"
                    run_set(name, budgets, repeats, ((per_iteration, iterations),))
                finally:
                    loop.native_watch = watched  # type: ignore[assignment]


def run_set(label: str, budgets: dict[str, object], repeats: int,
            lengths: tuple[tuple[float, int | str], ...]) -> None:
    """One line per workload length: the plugin's time against the bare loop's."""
    for per_iteration, iterations in lengths:
        runs = [run_once(per_iteration, budgets, iterations) for _ in range(repeats)]
        plugin = statistics.median(r[0] for r in runs)
        bare = statistics.median(r[1] for r in runs)
        # An auto run's length differs between repeats: the ratio is taken per run.
        ratio = statistics.median(r[0] / r[1] for r in runs)
        counts = sorted({r[2] for r in runs})
        iters = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        name = label + (" (auto)" if iterations == "auto" else "")
        print(f"  {name:<34}{per_iteration * 1e3:>5.1f}ms{iters:>10}{runs[0][3]:>7}"
              f"{bare:>9.3f}{plugin:>10.3f}{ratio:>8.3f}")

if __name__ == "__main__":
    main()
