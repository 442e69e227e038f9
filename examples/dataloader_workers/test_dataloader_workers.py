"""Budgets for work done in worker processes (seed 003).

The probes of the test's own process (rss, heap, ...) cannot see memory that grows in a
DataLoader worker or a pool worker. The process-tree probes can: ``children_uss`` is the
unique memory of the test's live descendant processes, ``children`` their number.

* A Dataset that caches every decoded frame in its worker grows every batch: caught by
  ``children_uss=0``; the decoding Dataset passes.
* Workers started anew every epoch (non-persistent) are not growth: the live set is judged
  at each sample.
* A pool whose tasks keep their trajectories in a worker-global list: caught; the same tasks
  without the list pass.
* An environment worker process per episode, never closed: caught by ``children=0``; one
  worker reused for every episode passes.
"""

from __future__ import annotations

import pytest
from workers import (
    CachingFrames,
    DecodingFrames,
    FrameLoader,
    LeakyEnvRunner,
    ReusedEnvRunner,
    RolloutPool,
)

import pytest_membudget

xfail_caught = pytest.mark.xfail(strict=True, raises=pytest_membudget.BudgetExceeded)
# The pool workers' first steps allocate (pipes, the task machinery): a longer warm-up than
# the default.
WORKER_BUDGET = pytest.mark.membudget(children_uss=0, children=0, warmup=20)
# DataLoader workers grow for a few hundred batches before they level off (their allocators
# fill), and then still creep by a few bytes per batch on a busy machine: auto runs without
# settling passed, but one went on for 7,383 batches before its verdict was clear. So the
# loader is settled unmeasured first and judged over a fixed 600 batches, whose resolution
# is 32 KiB over the 300 judged (~110 B per batch). The caching Dataset grows 17 KiB per
# batch.
LOADER_BUDGET = pytest.mark.membudget(children_uss=0, children=0, warmup=20, iterations=600)
SETTLE_BATCHES = 400
# Forked workers' unique memory also rises when the test's process writes to pages it still
# shares with them (copy-on-write makes each such page the worker's alone): 20 to 356 KiB
# over 2,400 batches in four runs, in steps, as this process runs pytest and the plugin; the fixed
# Dataset failed at 228 B per batch twice in a row so. Spawned workers share no page with
# it: 8 to 20 KiB over the same 2,400 batches.
START = "spawn"
# A leaked process per episode is plain after a few dozen episodes: a fixed count keeps the
# number of leaked processes (each a forked copy of the test process) small.
ENV_BUDGET = pytest.mark.membudget(children=0, warmup=2, iterations=40)


@pytest.fixture
def closing():
    """Closes every workload the test made, whatever the verdict: no worker survives it."""
    made = []

    def keep(workload):
        made.append(workload)
        return workload

    yield keep
    for workload in made:
        workload.close()


def _report(label: str, result: pytest_membudget.MembudgetResult) -> None:
    uss = result["children_uss"]
    print(f"\n{label}: children_uss {uss.slope / 1024:+.1f} KiB/iter "
          f"(bounds {uss.ci[0] / 1024:+.1f} to {uss.ci[1] / 1024:+.1f}), "
          f"{result.iterations} iterations")


@xfail_caught
@LOADER_BUDGET
def test_dataset_caching_in_workers_is_caught(membudget, closing):
    loader = closing(FrameLoader(CachingFrames(), start=START))
    loader.settle(SETTLE_BATCHES)
    membudget.run(loader.step)


@LOADER_BUDGET
def test_decoding_dataset_keeps_workers_flat(membudget, closing):
    loader = closing(FrameLoader(DecodingFrames(), start=START))
    loader.settle(SETTLE_BATCHES)
    _report("decoding dataset", membudget.run(loader.step))


@xfail_caught
@WORKER_BUDGET
def test_pool_tasks_keeping_history_are_caught(membudget, closing):
    pool = closing(RolloutPool(keep_history=True))
    membudget.run(pool.step)


@WORKER_BUDGET
def test_pool_tasks_without_history_pass(membudget, closing):
    pool = closing(RolloutPool(keep_history=False))
    _report("pool without history", membudget.run(pool.step))


@pytest.mark.membudget(children_uss=0, children=0, warmup=2, iterations=24)
def test_workers_restarted_every_epoch_are_not_growth(membudget, closing):
    # Non-persistent workers: each pass over the (short) dataset starts two new workers and
    # joins them at its end. The live set is judged at each sample: they leave nothing.
    loader = closing(FrameLoader(DecodingFrames(length=64), persistent=False))
    _report("workers restarted every epoch", membudget.run(loader.epoch))


@xfail_caught
@ENV_BUDGET
def test_env_worker_per_episode_never_joined_is_caught(membudget, closing):
    runner = closing(LeakyEnvRunner())
    membudget.run(runner.run_episode)


@ENV_BUDGET
def test_reused_env_worker_passes(membudget, closing):
    runner = closing(ReusedEnvRunner())
    membudget.run(runner.run_episode)
