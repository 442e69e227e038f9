"""Budgets on JAX's own books for a Q-learning loop with a replay buffer (examples/README.md).

One iteration is one training step: collect one transition, update on the buffer. The buffer
starts with 1,100 transitions (training starts once it holds some, as in DQN's
``learning_starts``), so a step's batch of every transition stored grows from 1,101 on:

* trained on the whole buffer, the jitted update compiles again on every step;
  ``jax_compiles=0`` fails and names ``jit(update)`` and the batch's changing shape;
* padded to power-of-two buckets, the batch is 2,048 rows until the buffer passes 2,048
  transitions, 948 steps on: the update compiles once, in warm-up, and a run of the default
  length passes;
* metrics kept as device arrays (the loss, the gradient's norm, the batch's TD errors) grow
  ``jax_array_bytes`` by the TD errors' bytes per step; the failure names the line that
  created them; host floats pass.
"""

from __future__ import annotations

import pytest

import pytest_membudget

pytest.importorskip("jax", reason="the JAX example needs JAX (pip install 'pytest-membudget[jax]')")

from replay import Trainer  # noqa: E402

PREFILL = 1100
xfail_caught = pytest.mark.xfail(strict=True, raises=pytest_membudget.BudgetExceeded)


def caught(membudget: pytest_membudget.MemBudget, trainer: Trainer, *expected: str) -> None:
    """Run the broken step, and check that its failure names what it must before it is
    reported as caught."""
    try:
        membudget.run(trainer.step)
    except pytest_membudget.BudgetExceeded as failure:
        text = str(failure)
        missing = [part for part in expected if part not in text]
        assert not missing, f"the failure does not name {missing}:\n{text}"
        raise


@pytest.mark.membudget(jax_compiles=0)
def test_bucketed_batch_compiles_once(membudget):
    trainer = Trainer(bucketed=True, prefill=PREFILL)
    membudget.run(trainer.step)
    print(f"\nbucketed: update compiled for {trainer.compiled_shapes()} shapes in this process")


@xfail_caught
@pytest.mark.membudget(jax_compiles=0)
def test_whole_buffer_batch_recompiles_every_step(membudget):
    trainer = Trainer(bucketed=False, prefill=PREFILL)
    caught(membudget, trainer, "jax_compiles still grows", "jit(update)",
           "shape of batch['obs'] changed", "remedy: pad or bucket the shapes")


@pytest.mark.membudget(jax_array_bytes=0, jax_arrays=0)
def test_host_float_metrics_keep_nothing(membudget):
    trainer = Trainer(prefill=PREFILL)
    membudget.run(trainer.step)


@xfail_caught
@pytest.mark.membudget(jax_array_bytes=0)
def test_device_array_metrics_grow(membudget):
    trainer = Trainer(host_metrics=False, prefill=PREFILL)
    caught(membudget, trainer, "jax_array_bytes still grows", "replay.py:", "in Trainer.step",
           "float32[2048]", "self.weights, loss, grad_norm, errors = update(")
