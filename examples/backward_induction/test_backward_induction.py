"""Budgets for backward induction with an attainment cache (seed 000).

* Footprint: the whole solve (DAG, phase 1, phase 2) may rise at most so far above the RSS it
  started from (``rss_rise``). The in-memory variant keeps the full attainment cache and
  exceeds it, and the failure says what held the memory at the peak; the disk-sliced
  variant holds one timestep at a time and meets it.
* Phases: the same solve, phase by phase (``membudget.phase``): how high each went, what it
  left, and what the memory was made of, the breakdown the seed wrote by hand.
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
PEAK_RISE = {"ci": "20 MiB", "large": "768 MiB"}[SCALE]

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


# -- footprint of the whole solve --------------------------------------------------------------


@pytest.mark.membudget(rss_rise=PEAK_RISE)
def test_disk_sliced_solve_meets_peak_rss(membudget, tmp_path):
    solver = Solver(PEAK_CONFIG, sliced=True, directory=tmp_path)
    result = membudget.run(solver.solve)
    _cache_report("disk-sliced", solver)
    print(f"rss rose {result['rss'].rise / 2**20:.1f} MiB "
          f"(budget {result['rss'].budgets['rise'] / 2**20:.1f} MiB)")


@xfail_caught
@pytest.mark.membudget(rss_rise=PEAK_RISE)
def test_in_memory_solve_exceeds_peak_rss(membudget, tmp_path):
    solver = Solver(PEAK_CONFIG, sliced=False, directory=tmp_path)
    try:
        membudget.run(solver.solve)
    finally:
        _cache_report("in-memory", solver)


# Phase 1 of the sliced solve holds one timestep's cache slice at a time; the in-memory store
# keeps every slice. Twice the goals of PEAK_CONFIG, so that the whole cache stands well above
# what earlier tests left free in the allocators (a rise counts new pages only, and memory an
# earlier test freed is reused first: the in-memory phase 1 of PEAK_CONFIG rose 11-13 MiB
# after the whole-solve tests, 28 MiB of cache).
PHASE_CONFIG = {
    "ci": GridConfig(width=4, height=4, n_agents=2, horizon=16, goal_cells=6),
    "large": PEAK_CONFIG,
}[SCALE]
# At large scale it is the whole-solve test's solve, whose peak is in phase 1: the same rise
# (the disk-sliced phase 1 rose 507 MiB there: its largest slice, 261 MiB of Python objects,
# and the q-values' temporaries over it; in memory, 1.37 GiB).
PHASE1_RISE = {"ci": "16 MiB", "large": PEAK_RISE}[SCALE]


def _solve_in_phases(membudget, config: GridConfig, sliced: bool, directory: Path) -> None:
    world = GridWorld(config)
    store: Store = DiskSliceStore(directory) if sliced else InMemoryStore(world)
    solver = BackwardInduction(world, store)
    with membudget.phase("build DAG"):
        solver.build_dag()
    with membudget.phase("phase 1", rss_rise=PHASE1_RISE):
        solver.phase1()
    with membudget.phase("phase 2"):
        solver.phase2()


def test_disk_sliced_solve_by_phase(membudget, tmp_path):
    _solve_in_phases(membudget, PHASE_CONFIG, sliced=True, directory=tmp_path)
    for phase in membudget.phases.to_list():
        print(f"\n{phase['name']}: rose {phase['rise'] / 2**20:.1f} MiB, "
              f"left {phase['left'] / 2**20:.1f} MiB")


@xfail_caught
def test_in_memory_solve_by_phase(membudget, tmp_path):
    _solve_in_phases(membudget, PHASE_CONFIG, sliced=False, directory=tmp_path)


def test_reduction_ratio_of_cache_held_in_memory(tmp_path, memory_tools):
    """Not a budget: the measured cache bytes and RSS growth of both variants, and the ratio.

    What slicing promises is one timestep's slice of the cache in memory at a time instead of
    all of them: the disk-sliced store holds the largest slice, the in-memory store the sum.
    The ratio is therefore how many of the largest slice the whole cache makes, a property of
    the problem (the horizon, and how soon the states per timestep saturate), not of the
    store: 12.5x at CI scale (16 timesteps, the last ten at all 256 states), 4.1x at large
    (8 timesteps whose states grow 1, 48, 384, 1440, 2925, 3840, 4096, 4096)."""
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
        if not sliced:
            assert isinstance(solver.store, InMemoryStore)
            slices = solver.store.slice_bytes()
        del solver
    ratio = held[False] / held[True]
    print(f"\ncache held in memory at once: in-memory {held[False] / 2**20:.2f} MiB, "
          f"disk-sliced {held[True] / 2**20:.2f} MiB -> {ratio:.1f}x less "
          f"({100 * (1 - 1 / ratio):.0f}% reduction); RSS growth of the solve: "
          f"{rss[False] / 2**20:.1f} MiB vs {rss[True] / 2**20:.1f} MiB; "
          f"{len(slices)} timesteps, largest slice {max(slices.values()) / 2**20:.2f} MiB")
    assert len(slices) == PEAK_CONFIG.horizon
    # The sliced store held the largest timestep's slice, no more; the in-memory store all.
    assert held[True] == pytest.approx(max(slices.values()), rel=1e-3)
    assert held[False] >= sum(slices.values())
    # The ratio is the cache in units of its largest slice (the in-memory store's dict of
    # states adds under 1 % to the sum).
    assert ratio == pytest.approx(sum(slices.values()) / max(slices.values()), rel=1e-2)


# -- growth per timestep of phase 1 ------------------------------------------------------------


def _phase1_solver(sliced: bool, directory: Path) -> BackwardInduction:
    world = GridWorld(GROWTH_CONFIG)
    store: Store = DiskSliceStore(directory) if sliced else InMemoryStore(world)
    solver = BackwardInduction(world, store)
    solver.build_dag()
    return solver


PER_TIMESTEP = pytest.mark.membudget(
    rss="64 KiB/iter", heap="64 KiB/iter", warmup=GROWTH_WARMUP, iterations=GROWTH_ITERATIONS,
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
