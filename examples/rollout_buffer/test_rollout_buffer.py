"""Footprint budgets for a rollout buffer of graph observations (seed 002).

One call collects one rollout (``N_STEPS`` steps of ``N_ENVS`` environments) into a freshly
reset buffer, which the collector keeps until the next rollout, as an on-policy algorithm
does. The budgets are ceilings on the footprint of one buffer, so the run is the collector's
first rollout, measured from before it (a warm-up rollout would leave its buffer in the start,
and the next one would replace it without rising):

* ``heap_rise``: numpy arrays are traced by tracemalloc, so the heap probe sees the buffer
  exactly;
* ``rss_rise``: how far the process's RSS rose above where the run started, what the machine
  sees.

The broken layout (float32 graph features plus the internal-only keys) exceeds both; the fixed
layout (float16 graph features, internal keys dropped) meets them.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_buffer import INTERNAL_KEYS, ObservationLayout, PPOCollector

import pytest_membudget

N_STEPS, N_ENVS = 64, 6
OBSERVATIONS = N_STEPS * N_ENVS
# The rise also covers the environment the collector steps (~4 MiB); the buffers are ~22 MiB
# (fixed) and ~60 MiB (broken).
BUDGET = pytest.mark.membudget(heap_rise="36 MiB", rss_rise="40 MiB", iterations=1)
xfail_caught = pytest.mark.xfail(strict=True, raises=pytest_membudget.BudgetExceeded)


def _report(label: str, collector: PPOCollector, result: pytest_membudget.MembudgetResult | None):
    buffer = collector.buffer
    per_obs = buffer.nbytes / buffer.observations_stored
    line = (f"\n{label}: {per_obs / 1024:.1f} KiB per observation in the buffer "
            f"({buffer.nbytes / 2**20:.2f} MiB for {buffer.observations_stored} observations)")
    if result is not None:
        heap, rss = result["heap"], result["rss"]
        line += (f"; heap rose {heap.rise / 2**20:.2f} MiB "
                 f"= {heap.rise / OBSERVATIONS / 1024:.1f} KiB per observation, "
                 f"rss rose {rss.rise / 2**20:.1f} MiB (budget {rss.budgets['rise'] / 2**20:.1f})")
    print(line)


@BUDGET
def test_float16_without_internal_keys_meets_footprint(membudget):
    collector = PPOCollector(ObservationLayout.fixed(), N_STEPS, N_ENVS)
    result = membudget.run(collector.collect_rollout)
    _report("fixed (float16, no internal keys)", collector, result)


@xfail_caught
@BUDGET
def test_float32_with_internal_keys_exceeds_footprint(membudget):
    collector = PPOCollector(ObservationLayout.broken(), N_STEPS, N_ENVS)
    try:
        membudget.run(collector.collect_rollout)
    finally:
        _report("broken (float32 + internal keys)", collector, membudget.result)


def test_fixed_layout_keeps_what_the_learner_reads():
    """float16 storage, float32 compute: the learner still gets float32 features."""
    broken = PPOCollector(ObservationLayout.broken(), 2, N_ENVS)
    fixed = PPOCollector(ObservationLayout.fixed(), 2, N_ENVS)
    broken.collect_rollout()
    fixed.collect_rollout()
    assert not set(INTERNAL_KEYS) & set(fixed.buffer.observations)
    for key, value in fixed.learner_batch().items():
        assert value.dtype == np.float32
        np.testing.assert_allclose(value, broken.learner_batch()[key], rtol=1e-3, atol=1e-2)
    ratio = 1 - fixed.buffer.nbytes / broken.buffer.nbytes
    print(f"\nbytes per observation: {ObservationLayout.broken().bytes_per_observation():,} -> "
          f"{ObservationLayout.fixed().bytes_per_observation():,} ({100 * ratio:.0f}% less)")
