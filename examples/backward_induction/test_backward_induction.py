"""Budgets for backward induction with an attainment cache (seed 000).

* Peak: the whole solve (DAG, phase 1, phase 2) must stay under an RSS ceiling. The in-memory
  variant keeps the full attainment cache and exceeds it; the disk-sliced variant holds one
  timestep at a time and meets it.
* Growth per timestep: phase 1 iterated once per timestep. The in-memory cache grows by one
  slice per timestep; the sliced store writes the slice to disk and stays flat.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from induction import BackwardInduction, DiskSliceStore, GridConfig, GridWorld, InMemoryStore, Store

import pytest_membudget

SCALE = os.environ.get("MEMBUDGET_EXAMPLES_SCALE", "ci").strip().lower() or "ci"

# Peak test: the whole problem. "large" is the order of the seed (gigabytes, minutes).
PEAK_CONFIG = {
    "ci": GridConfig(width=4, height=4, n_agents=2, horizon=16, goal_cells=3),
    "large": GridConfig(width=4, height=4, n_agents=3, horizon=8, goal_cells=3),
}[SCALE]
PEAK_HEADROOM = {"ci": "20 MiB", "large": "768 MiB"}[SCALE]

# Growth test: one measured iteration per timestep. The DAG saturates after a few steps, so
# the last few timesteps (near t=0, small) are left out of the run. (With evidence on, a
# failing run reruns a few more iterations; leave room for them in the horizon then.)
GROWTH_WARMUP, GROWTH_ITERATIONS, SMALL_EARLY_STEPS = 3, 16, 5
GROWTH_CONFIG = GridConfig(
    width=3, height=2, n_agents=2, goal_cells=2,
    horizon=GROWTH_WARMUP + GROWTH_ITERATIONS + SMALL_EARLY_STEPS,
)

xfail_caught = pytest.mark.xfail(strict=True, raises=pytest_membudget.BudgetExceeded)


class Solver:
    """Runs the whole computation and keeps the result, as the world model keeps its cache."""

    def __init__(self, config: GridConfig, sliced: bool, directory: Path) -> None:
        self.config, self.sliced, self.directory = config, sliced, directory
        self.world: GridWorld | None = None
        self.store: Store | None = None

    def solve(self) -> None:
        self.world = None
        self.store = None  # the previous result goes before the next is built
        world = GridWorld(self.config)
        store: Store = DiskSliceStore(self.directory) if self.sliced else InMemoryStore(world)
        BackwardInduction(world, store).solve()
        self.world, self.store = world, store


def _cache_report(label: str, solver: Solver) -> int:
    assert solver.store is not None
    held = solver.store.peak_cache_bytes()
    print(f"\n{label}: attainment cache held in memory at once: {held / 2**20:.2f} MiB")
    return held


# -- peak RSS of the whole solve ---------------------------------------------------------------


@pytest.mark.rss_headroom(PEAK_HEADROOM)
@pytest.mark.membudget(iterations=1, warmup=1, evidence=False)
def test_disk_sliced_solve_meets_peak_rss(membudget, tmp_path):
    solver = Solver(PEAK_CONFIG, sliced=True, directory=tmp_path)
    result = membudget.run(solver.solve)
    _cache_report("disk-sliced", solver)
    print(f"rss peak {result['rss'].peak / 2**20:.1f} MiB "
          f"(budget {result['rss'].budgets['peak'] / 2**20:.1f} MiB)")


@xfail_caught
@pytest.mark.rss_headroom(PEAK_HEADROOM)
@pytest.mark.membudget(iterations=1, warmup=1, evidence=False)
def test_in_memory_solve_exceeds_peak_rss(membudget, tmp_path):
    solver = Solver(PEAK_CONFIG, sliced=False, directory=tmp_path)
    try:
        membudget.run(solver.solve)
    finally:
        _cache_report("in-memory", solver)


def test_reduction_ratio_of_cache_held_in_memory(tmp_path, memory_tools):
    """Not a budget: the measured cache bytes and RSS growth of both variants, and the ratio."""
    current_rss, release_free_memory = memory_tools.current_rss, memory_tools.release_free_memory
    held, rss = {}, {}
    for sliced in (False, True):
        release_free_memory()
        before = current_rss()
        solver = Solver(PEAK_CONFIG, sliced=sliced, directory=tmp_path / str(sliced))
        solver.solve()
        rss[sliced] = current_rss() - before
        assert solver.store is not None
        held[sliced] = solver.store.peak_cache_bytes()
        del solver
    ratio = held[False] / held[True]
    print(f"\ncache held in memory at once: in-memory {held[False] / 2**20:.2f} MiB, "
          f"disk-sliced {held[True] / 2**20:.2f} MiB -> {ratio:.1f}x less "
          f"({100 * (1 - 1 / ratio):.0f}% reduction); RSS growth of the solve: "
          f"{rss[False] / 2**20:.1f} MiB vs {rss[True] / 2**20:.1f} MiB")
    assert ratio > 5


# -- growth per timestep of phase 1 ------------------------------------------------------------


def _phase1_solver(sliced: bool, directory: Path) -> BackwardInduction:
    world = GridWorld(GROWTH_CONFIG)
    store: Store = DiskSliceStore(directory) if sliced else InMemoryStore(world)
    solver = BackwardInduction(world, store)
    solver.build_dag()
    return solver


# evidence=False: the evidence rerun traces 16 frames per allocation, which slows this
# allocation-heavy loop about tenfold; the slopes alone make the case here.
PER_TIMESTEP = pytest.mark.membudget(
    rss="64 KiB/iter", heap="64 KiB/iter",
    warmup=GROWTH_WARMUP, iterations=GROWTH_ITERATIONS, evidence=False,
)


@PER_TIMESTEP
def test_disk_sliced_phase1_is_flat_per_timestep(membudget, tmp_path):
    solver = _phase1_solver(sliced=True, directory=tmp_path)
    result = membudget.run(solver.phase1_step)
    print(f"\nper timestep: heap {result['heap'].slope:+.0f} B/iter, "
          f"rss {result['rss'].slope:+.0f} B/iter")


@xfail_caught
@PER_TIMESTEP
def test_in_memory_phase1_grows_per_timestep(membudget, tmp_path):
    solver = _phase1_solver(sliced=False, directory=tmp_path)
    membudget.run(solver.phase1_step)
