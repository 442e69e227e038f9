"""A PPO rollout buffer of graph observations (seed 002).

The environment returns a dict observation: padded graph node/edge features and masks plus a
few small arrays the policy reads, and, in the broken version, internal-only keys that the
environment produced for itself (reward shaping, graph building) and that leaked into the
observation: ``_adjacency_graph``, ``_graph_data``, ``switch_states_dict`` and ``level_data``.

Like stable-baselines3's ``DictRolloutBuffer``, :meth:`RolloutBuffer.reset` allocates one
array per observation key, ``(n_steps, n_envs, *shape)``, at the start of every rollout, and
the buffer lives on the algorithm object until the next rollout replaces it.

* ``ObservationLayout.broken()``: float32 graph features and the internal-only keys stored.
* ``ObservationLayout.fixed()``: float16 graph features (the feature extractor calls
  ``.float()`` anyway) and the internal-only keys dropped before they reach the buffer.

Plain numpy; importable without pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INTERNAL_KEYS = ("_adjacency_graph", "_graph_data", "switch_states_dict", "level_data")


@dataclass(frozen=True)
class GraphSizes:
    max_nodes: int = 450
    max_edges: int = 1800
    node_dim: int = 16
    edge_dim: int = 8
    game_state_dim: int = 32
    reachability_dim: int = 8
    switches: int = 5
    level_cells: int = 23 * 42
    spatial_cells: int = 64


@dataclass(frozen=True)
class ObservationLayout:
    """Which keys are stored and at which dtype: the whole difference between the variants."""

    graph_dtype: type[np.floating]
    keep_internal: bool
    sizes: GraphSizes = field(default_factory=GraphSizes)

    @classmethod
    def broken(cls, sizes: GraphSizes | None = None) -> ObservationLayout:
        return cls(np.float32, True, sizes or GraphSizes())

    @classmethod
    def fixed(cls, sizes: GraphSizes | None = None) -> ObservationLayout:
        return cls(np.float16, False, sizes or GraphSizes())

    def spaces(self) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
        s = self.sizes
        g = np.dtype(self.graph_dtype)
        spaces: dict[str, tuple[tuple[int, ...], np.dtype]] = {
            "graph_node_feats": ((s.max_nodes, s.node_dim), g),
            "graph_edge_feats": ((s.max_edges, s.edge_dim), g),
            "graph_edge_index": ((2, s.max_edges), np.dtype(np.int32)),
            "graph_node_mask": ((s.max_nodes,), np.dtype(np.int8)),
            "graph_edge_mask": ((s.max_edges,), np.dtype(np.int8)),
            "game_state": ((s.game_state_dim,), np.dtype(np.float32)),
            "reachability_features": ((s.reachability_dim,), np.dtype(np.float32)),
            "switch_states": ((s.switches,), np.dtype(np.float32)),
        }
        if self.keep_internal:
            spaces.update({
                # dense adjacency of the first 100 nodes, used for PBRS reward shaping only
                "_adjacency_graph": ((100, 100), np.dtype(np.float32)),
                # spatial hash and build artefacts of the graph
                "_graph_data": ((s.spatial_cells, s.spatial_cells), np.dtype(np.int32)),
                "switch_states_dict": ((s.switches, 2), np.dtype(np.float32)),
                "level_data": ((s.level_cells,), np.dtype(np.int32)),
            })
        return spaces

    def bytes_per_observation(self) -> int:
        return sum(int(np.prod(shape)) * dtype.itemsize for shape, dtype in self.spaces().values())


class GraphEnv:
    """Vectorised env returning full observations (internal keys included, as the env does)."""

    def __init__(self, n_envs: int, sizes: GraphSizes, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        full = ObservationLayout.broken(sizes).spaces()
        # One fixed observation template per key, updated in place each step.
        self.obs = {
            key: (rng.standard_normal((n_envs, *shape)) * 3).astype(dtype)
            for key, (shape, dtype) in full.items()
        }
        self.t = 0

    def step(self) -> dict[str, np.ndarray]:
        self.t += 1
        self.obs["game_state"][:, 0] = self.t
        self.obs["graph_node_feats"][:, 0, 0] = self.t % 7
        return self.obs


class RolloutBuffer:
    """Per-key arrays (n_steps, n_envs, *shape), allocated by :meth:`reset` per rollout."""

    def __init__(self, n_steps: int, n_envs: int, layout: ObservationLayout) -> None:
        self.n_steps, self.n_envs, self.layout = n_steps, n_envs, layout
        self.spaces = layout.spaces()
        self.observations: dict[str, np.ndarray] = {}
        self.pos = 0

    def reset(self) -> None:
        # Drop the previous rollout first, so that only one buffer is alive at a time.
        self.observations = {}
        self.observations = {
            key: np.zeros((self.n_steps, self.n_envs, *shape), dtype=dtype)
            for key, (shape, dtype) in self.spaces.items()
        }
        self.pos = 0

    def add(self, obs: dict[str, np.ndarray]) -> None:
        for key, storage in self.observations.items():
            # np.copyto casts float32 -> float16 for the fixed layout; keys that the layout
            # does not store (the internal ones, in the fixed variant) are never copied.
            np.copyto(storage[self.pos], obs[key], casting="same_kind")
        self.pos += 1

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.observations.values())

    @property
    def observations_stored(self) -> int:
        return self.pos * self.n_envs


class PPOCollector:
    """Holds the env and the current rollout buffer, as an on-policy algorithm does."""

    def __init__(self, layout: ObservationLayout, n_steps: int = 32, n_envs: int = 4,
                 seed: int = 0) -> None:
        self.env = GraphEnv(n_envs, layout.sizes, seed)
        self.buffer = RolloutBuffer(n_steps, n_envs, layout)

    def collect_rollout(self) -> RolloutBuffer:
        self.buffer.reset()
        for _ in range(self.buffer.n_steps):
            self.buffer.add(self.env.step())
        return self.buffer

    def learner_batch(self) -> dict[str, np.ndarray]:
        """What the feature extractor sees: graph features cast back to float32."""
        obs = self.buffer.observations
        return {
            "graph_node_feats": obs["graph_node_feats"].astype(np.float32),
            "graph_edge_feats": obs["graph_edge_feats"].astype(np.float32),
        }
