"""A hyper-parameter trial runner with rollout worker threads (seed 003).

Each trial trains a small agent with ``worker_num`` rollout workers. The workers fill a
per-worker replay buffer and then wait on a ``threading.Event`` for the next round of work.

* :class:`LeakyTrialRunner` is the broken version: every trial starts fresh worker threads and
  never stops or joins them. They block on their event forever, so each trial leaves
  ``worker_num`` live OS threads behind, each with its stack and its replay buffer: the
  53-thread, 20 GB process of the seed.
* :class:`PooledTrialRunner` keeps one pool of workers for the process and hands each trial to
  the same threads; :meth:`PooledTrialRunner.close` stops and joins them.
  :class:`JoiningTrialRunner` is the other fix: it starts workers per trial but stops and
  joins them before the trial returns.

Plain Python and numpy; importable without pytest.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TrialConfig:
    worker_num: int = 3
    state_dim: int = 71
    action_dim: int = 7
    max_memo: int = 256  # transitions per worker buffer
    net_dim: int = 64


class RolloutWorker(threading.Thread):
    """Fills its replay buffer when asked, then blocks until the next request or stop."""

    def __init__(self, cfg: TrialConfig, index: int) -> None:
        super().__init__(name=f"rollout-worker-{index}", daemon=True)
        self.cfg = cfg
        self.buffer = np.zeros((cfg.max_memo, cfg.state_dim + cfg.action_dim + 2), np.float32)
        self.weights = np.zeros((cfg.state_dim, cfg.action_dim), np.float32)
        self.request = threading.Event()
        self.done = threading.Event()
        self.stopping = False
        self.rng = np.random.default_rng(index)

    def run(self) -> None:
        while True:
            self.request.wait()
            self.request.clear()
            if self.stopping:
                return
            self._explore()
            self.done.set()

    def _explore(self) -> None:
        cfg = self.cfg
        states = self.buffer[:, : cfg.state_dim]
        states[:] = self.rng.standard_normal(states.shape, dtype=np.float32)
        self.buffer[:, cfg.state_dim : cfg.state_dim + cfg.action_dim] = states @ self.weights

    def explore(self, weights: np.ndarray) -> None:
        """Run one round of exploration with the learner's current weights and wait for it."""
        np.copyto(self.weights, weights)
        self.done.clear()
        self.request.set()
        if not self.done.wait(timeout=10):
            raise TimeoutError(f"{self.name} did not finish its rollout")

    def stop(self) -> None:
        self.stopping = True
        self.request.set()


class Learner:
    """The PPO learner of one trial (a tiny linear policy; the work is not the point here)."""

    def __init__(self, cfg: TrialConfig, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.weights = rng.standard_normal((cfg.state_dim, cfg.action_dim)).astype(np.float32)

    def update(self, buffers: list[np.ndarray]) -> float:
        batch = np.concatenate(buffers)
        self.weights *= 0.99
        return float(batch[:, -1].mean())


def _start_workers(cfg: TrialConfig) -> list[RolloutWorker]:
    workers = [RolloutWorker(cfg, i) for i in range(cfg.worker_num)]
    for worker in workers:
        worker.start()
    return workers


def _stop_and_join(workers: list[RolloutWorker]) -> None:
    for worker in workers:
        worker.stop()
    for worker in workers:
        worker.join(timeout=5)


class TrialRunner:
    def __init__(self, cfg: TrialConfig | None = None, rounds: int = 2) -> None:
        self.cfg = cfg or TrialConfig()
        self.rounds = rounds
        self.trials = 0

    def _train(self, workers: list[RolloutWorker]) -> float:
        learner = Learner(self.cfg, self.trials)
        score = 0.0
        for _ in range(self.rounds):
            for worker in workers:
                worker.explore(learner.weights)
            score = learner.update([w.buffer for w in workers])
        self.trials += 1
        return score

    def run_trial(self) -> float:
        raise NotImplementedError

    def close(self) -> None:
        pass


class LeakyTrialRunner(TrialRunner):
    """New workers every trial, never stopped: each trial leaves ``worker_num`` threads."""

    def __init__(self, cfg: TrialConfig | None = None, rounds: int = 2) -> None:
        super().__init__(cfg, rounds)
        self._abandoned: list[RolloutWorker] = []  # only so that close() can clean up

    def run_trial(self) -> float:
        workers = _start_workers(self.cfg)
        self._abandoned.extend(workers)
        return self._train(workers)

    def close(self) -> None:
        """Not part of the broken runner's behaviour: lets a test leave no threads behind."""
        _stop_and_join(self._abandoned)
        self._abandoned.clear()


class JoiningTrialRunner(TrialRunner):
    """Fresh workers per trial, stopped and joined before the trial returns."""

    def run_trial(self) -> float:
        workers = _start_workers(self.cfg)
        try:
            return self._train(workers)
        finally:
            _stop_and_join(workers)


class PooledTrialRunner(TrialRunner):
    """One pool of workers for the whole process; every trial reuses it."""

    def __init__(self, cfg: TrialConfig | None = None, rounds: int = 2) -> None:
        super().__init__(cfg, rounds)
        self.workers: list[RolloutWorker] = []

    def run_trial(self) -> float:
        if not self.workers:
            self.workers = _start_workers(self.cfg)
        return self._train(self.workers)

    def close(self) -> None:
        _stop_and_join(self.workers)
        self.workers = []
