"""Work done in other processes: DataLoader workers, a rollout pool, environment workers
(seed 003: a DRL trainer with ``worker_num`` worker processes whose memory grew to 20 GB).

Every workload here keeps its state in worker processes, where no probe of the test's own
process can see it:

* :class:`FrameLoader` feeds batches of decoded frames from a ``torch.utils.data.DataLoader``
  with persistent workers. :class:`CachingFrames` is the broken dataset: ``__getitem__``
  caches each decoded frame by index, so every worker keeps a private copy of everything it
  has decoded ("multiple copies are made for each worker", in the seed's words) and grows with
  every batch. :class:`DecodingFrames` decodes on each access from the compact frames the
  parent made before the workers forked (one numpy buffer: reading it copies no page), and
  stays flat.
* :class:`RolloutPool` scores rollouts in a ``multiprocessing.Pool``. With ``keep_history``
  each task appends its trajectory to a worker-global list that nothing clears (the replay
  history of the seed's workers); without, the tasks return their score only. A recycled pool
  (``maxtasksperchild``) bounds the same leak: each worker is replaced before it holds much.
* :class:`EnvRunner` runs each episode in an environment worker process
  (a ``SubprocVecEnv``-style loop over a pipe). :class:`LeakyEnvRunner` starts a fresh worker
  per episode and never closes it: the process blocks on its pipe forever, one more per
  episode. :class:`ReusedEnvRunner` keeps one worker for every episode.

Plain Python, numpy and torch; importable without pytest.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from torch.utils.data import DataLoader, Dataset

#: One observation as stored (uint8) and as decoded for the learner (float32: 4 KiB).
FRAME_SHAPE = (32, 32)
#: Indices of a stream that never ends within a test: every batch asks for new ones.
STREAM_LENGTH = 10_000_000


class Frames(Dataset[np.ndarray]):
    """A long stream of observations, decoded from a small pool of stored frames (the
    parent builds them before the workers fork, so the workers share their pages)."""

    def __init__(self, stored: int = 256, seed: int = 0, length: int = STREAM_LENGTH) -> None:
        rng = np.random.default_rng(seed)
        self.stored = rng.integers(0, 256, (stored, *FRAME_SHAPE), dtype=np.uint8)
        self.length = length

    def __len__(self) -> int:
        return self.length

    def decode(self, index: int) -> np.ndarray:
        frame = self.stored[index % len(self.stored)].astype(np.float32)
        frame *= 1.0 / 255.0
        return frame


class CachingFrames(Frames):
    """Broken: each worker caches every frame it decodes, by index, forever."""

    def __init__(self, stored: int = 256, seed: int = 0, length: int = STREAM_LENGTH) -> None:
        super().__init__(stored, seed, length)
        self.decoded: dict[int, np.ndarray] = {}

    def __getitem__(self, index: int) -> np.ndarray:
        frame = self.decoded.get(index)
        if frame is None:
            frame = self.decoded[index] = self.decode(index)
        return frame


class DecodingFrames(Frames):
    """Fixed: decode on every access; the stored frames are shared, read-only."""

    def __getitem__(self, index: int) -> np.ndarray:
        return self.decode(index)


def stack_frames(frames: list[np.ndarray]) -> np.ndarray:
    """Collate into one numpy batch, sent to the parent through the worker's pipe. (torch's
    default collate sends tensors through shared memory, whose handling keeps growing the
    workers' memory by ~1.5 KiB per batch for a thousand batches: see the README.)"""
    return np.stack(frames)


class FrameLoader:
    """Batches from a DataLoader; one step = one batch. Persistent workers (the default
    here) serve every batch; without, each pass over the dataset starts new workers.
    ``start``: how the workers are started (a ``multiprocessing`` start method; None: the
    platform's default, fork on Linux). Forked workers share their pages with the process
    that forked them, and each page that process writes to afterwards becomes the worker's
    alone (copy-on-write): the worker's unique memory rises with the parent's work, not its
    own. ``"spawn"`` starts workers that share nothing with it (about 3 s to the first
    batch, for torch's import in each)."""

    def __init__(self, dataset: Frames, workers: int = 2, batch_size: int = 4,
                 persistent: bool = True, start: str | None = None) -> None:
        self.loader = DataLoader(dataset, batch_size=batch_size, num_workers=workers,
                                 persistent_workers=persistent, prefetch_factor=2,
                                 collate_fn=stack_frames, multiprocessing_context=start)
        self.batches: Iterator[np.ndarray] | None = iter(self.loader) if persistent else None

    def step(self) -> float:
        assert self.batches is not None
        return float(next(self.batches).mean())

    def settle(self, batches: int) -> None:
        """Serve ``batches`` batches unmeasured: a new worker's memory grows for a few
        hundred batches (its allocators fill, it writes to pages it shares with its parent)
        before it levels off."""
        for _ in range(batches):
            self.step()

    def epoch(self) -> float:
        """One pass over the whole dataset (with non-persistent workers: started anew for it
        and joined at its end)."""
        return sum(float(batch.mean()) for batch in self.loader)

    def close(self) -> None:
        """Stop the workers and join them (what the iterator does when it is collected)."""
        shutdown = getattr(self.batches, "_shutdown_workers", None)
        if shutdown is not None:
            shutdown()
        self.batches = None


_HISTORY: list[np.ndarray] = []


def score_rollout(seed: int, keep_history: bool) -> float:
    """One rollout in a pool worker: a trajectory of 256 steps x 16 features (16 KiB)."""
    trajectory = np.random.default_rng(seed).standard_normal((256, 16), dtype=np.float32)
    if keep_history:
        _HISTORY.append(trajectory)  # the worker's global list: nothing ever clears it
    return float(trajectory.sum())


class RolloutPool:
    """Scores ``rollouts_per_step`` rollouts per step in a pool of ``workers`` processes."""

    def __init__(self, keep_history: bool, workers: int = 2, rollouts_per_step: int = 4,
                 maxtasksperchild: int | None = None) -> None:
        self.keep_history = keep_history
        self.rollouts_per_step = rollouts_per_step
        self.pool = multiprocessing.Pool(workers, maxtasksperchild=maxtasksperchild)
        self.seed = 0

    def step(self) -> float:
        seeds = range(self.seed, self.seed + self.rollouts_per_step)
        self.seed += self.rollouts_per_step
        scores = self.pool.starmap(score_rollout, [(s, self.keep_history) for s in seeds],
                                   chunksize=1)
        return sum(scores)

    def close(self) -> None:
        self.pool.terminate()
        self.pool.join()


def env_worker(remote: Connection, seed: int) -> None:
    """An environment in its own process: answers reset/step requests until told to close."""
    rng = np.random.default_rng(seed)
    state = np.zeros(71, np.float32)
    while True:
        command, action = remote.recv()
        if command == "close":
            remote.close()
            return
        if command == "reset":
            state[:] = rng.standard_normal(71, dtype=np.float32)
        else:
            state += 0.01 * float(action)
        remote.send(float(state.sum()))


class EnvRunner:
    """Runs episodes of ``steps`` steps against an environment worker process."""

    def __init__(self, steps: int = 8) -> None:
        self.steps = steps
        self.episodes = 0
        self.started: list[tuple[Any, Connection]] = []

    def _start_env(self) -> Connection:
        remote, worker_end = multiprocessing.Pipe()
        process = multiprocessing.Process(target=env_worker, args=(worker_end, self.episodes),
                                          daemon=True, name=f"env-worker-{self.episodes}")
        process.start()
        worker_end.close()
        self.started.append((process, remote))
        return remote

    def _episode(self, remote: Connection) -> float:
        remote.send(("reset", None))
        total = remote.recv()
        for step in range(self.steps):
            remote.send(("step", step % 3 - 1))
            total += remote.recv()
        self.episodes += 1
        return float(total)

    def run_episode(self) -> float:
        raise NotImplementedError

    def close(self) -> None:
        """Not part of the workloads' behaviour: leaves no process to the next test."""
        for process, remote in self.started:
            with contextlib.suppress(OSError):
                remote.send(("close", None))
            remote.close()
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()
        self.started.clear()


class LeakyEnvRunner(EnvRunner):
    """Broken: a new environment worker per episode, never closed nor joined."""

    def run_episode(self) -> float:
        return self._episode(self._start_env())


class ReusedEnvRunner(EnvRunner):
    """Fixed: one environment worker for every episode, closed with the runner."""

    def run_episode(self) -> float:
        if not self.started:
            self._start_env()
        return self._episode(self.started[0][1])
