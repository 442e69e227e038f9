"""A vectorised rollout loop with teacher inference (seed 004).

Every environment step, a frozen teacher policy labels the observations of all environments
with actions for supervised training of the student.

* :class:`LeakyTeacherRollout` is the broken version: per step and per environment it copies
  the observation (``astype``), allocates a fresh action array and appends it to
  ``all_teacher_actions``, a list that lives on the object and is never cleared, and at the end
  of each rollout it ``np.stack``-s the whole accumulated list. Memory grows every rollout and,
  because the stack walks the ever longer list, so does the time per rollout: the falling SPS
  of the seed.
* :class:`FixedTeacherRollout` preallocates the observation and action buffers once and reuses
  them (views, ``np.copyto``, ``out=`` arguments): no list, no stack, constant memory and time.

Plain numpy; importable without pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RolloutConfig:
    num_envs: int = 16
    num_agents: int = 4
    num_tokens: int = 8
    token_dim: int = 3
    num_actions: int = 5
    steps_per_rollout: int = 16


class VecEnv:
    """Token observations for every agent of every environment, updated in place."""

    def __init__(self, cfg: RolloutConfig, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        shape = (cfg.num_envs, cfg.num_agents, cfg.num_tokens, cfg.token_dim)
        self.obs = rng.integers(0, 256, size=shape, dtype=np.uint8)
        self._mix = rng.integers(1, 7, size=shape, dtype=np.uint8)

    def step(self, actions: np.ndarray) -> np.ndarray:
        # In-place arithmetic on uint8 wraps around: a cheap, allocation-free "dynamics".
        np.multiply(self.obs, self._mix, out=self.obs)
        self.obs += actions.astype(np.uint8, copy=False).reshape(
            actions.shape[0], actions.shape[1], 1, 1
        )
        return self.obs


class TeacherPolicy:
    """A frozen linear teacher: argmax over a linear map of the flattened tokens."""

    def __init__(self, cfg: RolloutConfig, seed: int = 1) -> None:
        rng = np.random.default_rng(seed)
        features = cfg.num_tokens * cfg.token_dim
        self.weights = rng.standard_normal((features, cfg.num_actions)).astype(np.float32)
        self._features = np.zeros((cfg.num_agents, features), dtype=np.float32)
        self._logits = np.zeros((cfg.num_agents, cfg.num_actions), dtype=np.float32)

    def step_batch(self, obs: np.ndarray, actions_out: np.ndarray) -> None:
        """Write the actions of one environment's agents into ``actions_out`` (num_agents,)."""
        np.copyto(self._features, obs.reshape(self._features.shape), casting="unsafe")
        np.matmul(self._features, self.weights, out=self._logits)
        np.argmax(self._logits, axis=1, out=actions_out)


class TeacherRollout:
    def __init__(self, cfg: RolloutConfig | None = None, seed: int = 0) -> None:
        self.cfg = cfg or RolloutConfig()
        self.env = VecEnv(self.cfg, seed)
        self.teacher_policy = TeacherPolicy(self.cfg, seed + 1)
        self.rollouts = 0
        self.steps = 0

    def run_rollout(self) -> None:
        raise NotImplementedError


class LeakyTeacherRollout(TeacherRollout):
    """New arrays every step, and a list of them that outlives the rollout."""

    def __init__(self, cfg: RolloutConfig | None = None, seed: int = 0) -> None:
        super().__init__(cfg, seed)
        self.all_teacher_actions: list[np.ndarray] = []
        self.actions_stacked: np.ndarray | None = None

    def run_rollout(self) -> None:
        cfg = self.cfg
        for _ in range(cfg.steps_per_rollout):
            env_obs_np = self.env.obs.copy()  # the CPU copy of the device observations
            step_actions = []
            for env_idx in range(cfg.num_envs):
                obs_for_env = env_obs_np[env_idx].astype(np.uint8, copy=True)  # new array
                actions_np = np.zeros(cfg.num_agents, dtype=np.int32)  # new array
                self.teacher_policy.step_batch(obs_for_env, actions_np)
                self.all_teacher_actions.append(actions_np)  # list grows, never cleared
                step_actions.append(actions_np)
            self.env.step(np.stack(step_actions, axis=0))
            self.steps += 1
        # Supervision target for the whole history: a new, ever longer array each rollout.
        self.actions_stacked = np.array(self.all_teacher_actions)
        self.rollouts += 1


class FixedTeacherRollout(TeacherRollout):
    """Buffers allocated once, on first use, and reused every step of every rollout."""

    def __init__(self, cfg: RolloutConfig | None = None, seed: int = 0) -> None:
        super().__init__(cfg, seed)
        self._teacher_obs_buffer: np.ndarray | None = None
        self._teacher_actions_buffer: np.ndarray | None = None

    def run_rollout(self) -> None:
        cfg = self.cfg
        expected_shape = (cfg.num_envs, cfg.num_agents, cfg.num_tokens, cfg.token_dim)
        if self._teacher_obs_buffer is None or self._teacher_obs_buffer.shape != expected_shape:
            self._teacher_obs_buffer = np.zeros(expected_shape, dtype=np.uint8)
            self._teacher_actions_buffer = np.zeros((cfg.num_envs, cfg.num_agents), np.int32)
        obs_buffer, actions_buffer = self._teacher_obs_buffer, self._teacher_actions_buffer
        assert actions_buffer is not None
        for _ in range(cfg.steps_per_rollout):
            np.copyto(obs_buffer, self.env.obs, casting="unsafe")
            for env_idx in range(cfg.num_envs):
                # Views into the preallocated buffers: no copy, no new array.
                self.teacher_policy.step_batch(obs_buffer[env_idx], actions_buffer[env_idx])
            self.env.step(actions_buffer)
            self.steps += 1
        self.rollouts += 1
