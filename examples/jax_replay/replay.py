"""A small JAX value-learning loop with a replay buffer: each step collects transitions from a
toy environment into the buffer and runs one jitted update of a linear value function on a batch
from it. Plain JAX (no Flax or Optax), so that it runs anywhere JAX's CPU build does.

Two leaks from the field, each with its fix:

* ``Trainer(bucketed=False)`` trains on the whole buffer, whose length grows every step, so
  the jitted ``update`` sees a new shape and compiles again on every call (the compile cache
  has no bound, and every step pays a compilation). ``bucketed=True`` pads the batch to the
  next of a few bucket sizes (powers of two) and masks the padding: the update compiles once
  per bucket.
* ``Trainer(host_metrics=False)`` keeps each step's metrics (the loss, the gradient's norm
  and the batch's TD errors) as device arrays in a history list that nothing clears: device
  memory held per step. ``host_metrics=True`` keeps host floats (``float(loss)``), and the
  TD errors' mean only, computed on the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

OBS = 8
GAMMA = 0.9
LEARNING_RATE = 0.01
#: The smallest bucket a padded batch takes; each bucket is twice the one before.
FIRST_BUCKET = 256


def bucket(size: int) -> int:
    """The padded length of a batch of ``size`` transitions: the next power of two from
    FIRST_BUCKET on."""
    padded = FIRST_BUCKET
    while padded < size:
        padded *= 2
    return padded


@jax.jit
def update(weights: jax.Array, batch: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
    """One semi-gradient TD(0) step of a linear value function on the batch's unmasked rows:
    the new weights, the loss, the gradient's norm and each row's TD error."""
    mask = batch["mask"]
    target = batch["reward"] + GAMMA * (batch["next_obs"] @ weights)
    errors = (batch["obs"] @ weights - target) * mask
    count = jnp.maximum(jnp.sum(mask), 1.0)
    grad = batch["obs"].T @ errors / count
    return (weights - LEARNING_RATE * grad, jnp.sum(errors**2) / count,
            jnp.linalg.norm(grad), errors)


@dataclass
class ReplayBuffer:
    """Transitions on the host, appended each step (numpy arrays, grown by doubling)."""

    capacity: int
    size: int = 0
    columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.columns = {"obs": np.zeros((self.capacity, OBS), np.float32),
                        "reward": np.zeros(self.capacity, np.float32),
                        "next_obs": np.zeros((self.capacity, OBS), np.float32)}

    def add(self, transitions: dict[str, np.ndarray]) -> None:
        n = len(transitions["reward"])
        end = min(self.size + n, self.capacity)
        for key, column in self.columns.items():
            column[self.size:end] = transitions[key][: end - self.size]
        self.size = end

    def batch(self, padded: int | None = None) -> dict[str, np.ndarray]:
        """Every transition stored, padded with masked rows to ``padded`` where given."""
        length = padded or self.size
        out = {key: column[:length] for key, column in self.columns.items()}
        mask = np.zeros(length, np.float32)
        mask[: self.size] = 1.0
        out["mask"] = mask
        return out


class ToyEnv:
    """Random observations; the reward is the observation's first coordinate."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def collect(self, n: int) -> dict[str, np.ndarray]:
        obs = self.rng.normal(size=(n, OBS)).astype(np.float32)
        return {"obs": obs, "reward": obs[:, 0].copy(),
                "next_obs": self.rng.normal(size=(n, OBS)).astype(np.float32)}


class Trainer:
    """One ``step()``: collect ``per_step`` transitions, then one update on the buffer."""

    def __init__(self, *, bucketed: bool = True, host_metrics: bool = True,
                 prefill: int = 0, per_step: int = 1, capacity: int = 65536,
                 seed: int = 0) -> None:
        self.bucketed = bucketed
        self.host_metrics = host_metrics
        self.per_step = per_step
        self.env = ToyEnv(seed)
        self.buffer = ReplayBuffer(capacity)
        self.weights = jnp.zeros(OBS, jnp.float32)
        self.history: list[Any] = []
        if prefill:
            self.buffer.add(self.env.collect(prefill))

    def step(self) -> None:
        self.buffer.add(self.env.collect(self.per_step))
        padded = bucket(self.buffer.size) if self.bucketed else None
        self.weights, loss, grad_norm, errors = update(self.weights,
                                                       self.buffer.batch(padded))
        if self.host_metrics:
            self.history.append({"loss": float(loss), "grad_norm": float(grad_norm),
                                 "td_mean": float(np.mean(np.abs(errors)))})
        else:
            self.history.append({"loss": loss, "grad_norm": grad_norm, "td": errors})  # KEPT

    def compiled_shapes(self) -> int:
        """How many shapes ``update`` has compiled for so far, in this process."""
        return int(update._cache_size())
