"""Budgets for a vectorised rollout with teacher inference (seed 004).

One iteration is one rollout (``steps_per_rollout`` environment steps over all environments).

* heap: the broken rollout keeps every per-env action array in a list that outlives the
  rollout, plus an ever longer stacked copy; tracemalloc sees each of them.
* rss: the same growth as the process sees it, budgeted as total growth over the run.
* iter_cpu_time: the broken rollout stacks the whole accumulated list every rollout, so each
  rollout takes more CPU time than the one before (the falling SPS of the seed), whatever
  else the machine runs; budgeted as total slowdown over the run.

The fixed rollout reuses preallocated buffers and passes all three.
"""

from __future__ import annotations

import pytest
from rollout import FixedTeacherRollout, LeakyTeacherRollout, RolloutConfig

import pytest_membudget

CONFIG = RolloutConfig()
# Many single-agent envs for the rss budget: ~140 KiB per rollout, so that RSS, which grows in
# page and arena steps, rises in every stretch of the run. The rss budget is on total growth
# over the run, not on the rate: the broken rollout's RSS rises every rollout, but not at a
# steady pace. The ever longer stacked array leaves holes in the heap that the leaked small
# arrays fill later, so the per-rollout rise slows from ~250 KiB to ~70 KiB within 100
# rollouts. A rate budget reads that as growth that may be settling and, on a fixed window,
# ends "inconclusive" (it did in 2 of 5 runs of the whole example suite); an auto run catches
# it at 640 rollouts, but the quadratic stack makes that ~50 s. The total says it plainly: the
# broken rollout grows 15-17 MiB in 100 rollouts, the fixed one 0.
RSS_CONFIG = RolloutConfig(num_envs=64, num_agents=1)
xfail_caught = pytest.mark.xfail(strict=True, raises=pytest_membudget.BudgetExceeded)

# ~37 KiB per rollout of Python-visible arrays in the broken version.
HEAP_BUDGET = pytest.mark.membudget(heap="1 KiB/iter", warmup=5, iterations=24)
RSS_BUDGET = pytest.mark.membudget(rss_growth="4 MiB", warmup=5, iterations=100)
# The slowdown is judged on CPU time (iter_cpu_time): the time the test's thread spent running
# the rollout, the cheapest rollout between two samples. Wall time (iter_time) also counts the
# time slices other processes take, and on a shared machine read as the loop slowing down or
# speeding up. The broken rollout's stack over the accumulated list adds 3.5-6 us of CPU time
# per rollout (from ~0.13 ms); the fixed one stays within +-0.05 us. What still moves CPU time
# on a busy machine is the cache: once the broken rollout's history outgrows the core's L2, a
# neighbour makes whole stretches of rollouts 30-70 % slower. A rate budget
# (iter_cpu_time="1 us/iter", auto, capped at 3,000) asks the slowdown to show in the later
# half of the judged tail too, where a linear slowdown adds only a third, and such a stretch
# hid it: inconclusive at the cap in 1 of 10 and 1 of 6 suite runs beside a busy core. The
# budget is therefore on the total: the last rollouts may be at most 1 ms slower than the
# first, floor to floor, over a fixed 1,000. Beside a busy core the broken rollout grew
# 3.4-4.4 ms (5 of 5 caught, 2.6-3 s each), the fixed one -0.003 to +0.005 ms (5 of 5 passed,
# 0.15-0.25 s). One agent per environment keeps the stacked history small (4 bytes per
# env-step): with larger arrays the stack crosses glibc's mmap threshold, which moves by
# itself as big blocks are freed, and the time per rollout then jumps down by a third in
# mid-run. Separate from the heap budget: tracing would slow both loops. A slowdown has no
# allocation to show, so a failing time budget runs no more rollouts for evidence.
TIME_CONFIG = RolloutConfig(num_envs=8, num_agents=1, steps_per_rollout=4)
TIME_BUDGET = pytest.mark.membudget(iter_cpu_time_growth="1 ms", warmup=5, iterations=1000)


def _report(label: str, rollout, result) -> None:
    rate = rollout.steps * rollout.cfg.num_envs / max(result.seconds, 1e-9)
    parts = [f"{name} {probe.slope:+.3g} {probe.unit}/iter" for name, probe in
             result.probes.items()]
    print(f"\n{label}: {', '.join(parts)}; {rate:,.0f} env-steps/s overall")


@HEAP_BUDGET
def test_preallocated_rollout_heap_is_flat(membudget):
    rollout = FixedTeacherRollout(CONFIG)
    _report("fixed", rollout, membudget.run(rollout.run_rollout))


@xfail_caught
@HEAP_BUDGET
def test_accumulating_rollout_heap_grows(membudget):
    rollout = LeakyTeacherRollout(CONFIG)
    membudget.run(rollout.run_rollout)


@RSS_BUDGET
def test_preallocated_rollout_rss_is_flat(membudget):
    rollout = FixedTeacherRollout(RSS_CONFIG)
    _report("fixed", rollout, membudget.run(rollout.run_rollout))


@xfail_caught
@RSS_BUDGET
def test_accumulating_rollout_rss_grows(membudget):
    rollout = LeakyTeacherRollout(RSS_CONFIG)
    membudget.run(rollout.run_rollout)


@TIME_BUDGET
def test_preallocated_rollout_keeps_its_pace(membudget):
    rollout = FixedTeacherRollout(TIME_CONFIG)
    _report("fixed", rollout, membudget.run(rollout.run_rollout))


@xfail_caught
@TIME_BUDGET
def test_accumulating_rollout_slows_down(membudget):
    rollout = LeakyTeacherRollout(TIME_CONFIG)
    membudget.run(rollout.run_rollout)
