"""Backward induction over a finite-horizon multi-agent gridworld DAG.

A small model of the workload in seed 000: a world model whose states form a DAG by timestep,
every joint action profile leads to one or two successor states, and a set of goals is checked
on every successor.  Phase 1 walks the DAG backwards and fills an *attainment cache*

    cache[state_index][action_profile_index][goal] -> np.int8 array, one entry per successor

so that phase 2 (the policy prior) can reuse the goal checks instead of calling
``goal.is_achieved`` again.

Two storage strategies share the same solver:

* :class:`InMemoryStore` keeps every timestep's transitions, cache and values for the whole
  run, and leaves the full cache on ``world._attainment_cache`` (the 25 GB case of the seed).
* :class:`DiskSliceStore` writes each timestep's transitions, cache slice, values and policy
  to ``.npz`` files (``np.savez``; loaded with ``allow_pickle=False``) and drops them, so only
  one timestep is in memory at a time.

Plain Python and numpy; importable without pytest.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# stay, right, down, left: four actions per agent as in the seed (4**3 = 64 profiles).
MOVES: tuple[tuple[int, int], ...] = ((0, 0), (1, 0), (0, 1), (-1, 0))
SLIP_PROBABILITY = 0.2
DISCOUNT = 0.9
BETA = 5.0

State = tuple[int, ...]  # (timestep, cell of agent 0, cell of agent 1, ...)


@dataclass(frozen=True)
class GridConfig:
    """Problem size.  States per timestep saturate at ``(width * height) ** n_agents``."""

    width: int = 3
    height: int = 3
    n_agents: int = 2
    horizon: int = 8
    goal_cells: int = 3  # goal cells per human agent

    @property
    def n_cells(self) -> int:
        return self.width * self.height

    @property
    def n_profiles(self) -> int:
        return len(MOVES) ** self.n_agents


@dataclass(frozen=True)
class ReachGoal:
    """Goal "human agent ``agent`` stands on ``cell``"; hashable, used as a cache key."""

    agent: int
    cell: int

    def is_achieved(self, state: State) -> int:
        return int(state[1 + self.agent] == self.cell)


class GridWorld:
    """Agents move on an open grid; agent 0 (the robot) slips and stays with some probability."""

    def __init__(self, config: GridConfig) -> None:
        self.config = config
        self.profiles: list[tuple[int, ...]] = list(
            itertools.product(range(len(MOVES)), repeat=config.n_agents)
        )
        human_agents = range(1, config.n_agents) if config.n_agents > 1 else range(1)
        last = config.n_cells - 1
        cells = np.linspace(0, last, config.goal_cells).round().astype(int)
        self.goals: list[ReachGoal] = [
            ReachGoal(agent, int(cell)) for agent in human_agents for cell in cells
        ]
        self._attainment_cache: dict[int, list[dict[ReachGoal, np.ndarray]]] | None = None

    def initial_state(self) -> State:
        return (0, *range(self.config.n_agents))

    def _move(self, cell: int, action: int) -> int:
        width, height = self.config.width, self.config.height
        x, y = cell % width, cell // width
        dx, dy = MOVES[action]
        nx, ny = min(max(x + dx, 0), width - 1), min(max(y + dy, 0), height - 1)
        return ny * width + nx

    def successors(self, state: State, profile: tuple[int, ...]) -> list[tuple[State, float]]:
        t, cells = state[0], state[1:]
        moved = tuple(self._move(c, a) for c, a in zip(cells, profile, strict=False))
        intended = (t + 1, *moved)
        slipped = (t + 1, cells[0], *moved[1:])
        if slipped == intended:
            return [(intended, 1.0)]
        return [(intended, 1.0 - SLIP_PROBABILITY), (slipped, SLIP_PROBABILITY)]


# ---------------------------------------------------------------------------------------------
# Per-timestep data in its compact (numpy) form.  The in-memory store keeps the per-entry
# Python form instead, exactly like the seed.


@dataclass
class Layer:
    """States of one timestep, in the order of their local indices."""

    states: np.ndarray  # (n_states, 1 + n_agents) int32

    def state_tuples(self) -> list[State]:
        return [tuple(int(v) for v in row) for row in self.states]


@dataclass
class Transitions:
    """Successors of every (state, profile) of a layer, flattened with offsets."""

    offsets: np.ndarray  # (n_states * n_profiles + 1,) int64
    successor: np.ndarray  # (n_entries,) int32, local index in the next layer
    probability: np.ndarray  # (n_entries,) float32


class Store:
    """Where the solver keeps its per-timestep artefacts."""

    def put_layer(self, t: int, layer: Layer) -> None:
        raise NotImplementedError

    def layer(self, t: int) -> Layer:
        raise NotImplementedError

    def put_transitions(self, t: int, transitions: Transitions) -> None:
        raise NotImplementedError

    def transitions(self, t: int) -> Transitions:
        raise NotImplementedError

    def put_cache_slice(self, t: int, cache_slice: list[list[dict[ReachGoal, np.ndarray]]]) -> None:
        raise NotImplementedError

    def cache_slice(self, t: int) -> np.ndarray:
        """Attainment of layer t, flat in (state, profile, goal, successor) order."""
        raise NotImplementedError

    def put_values(self, t: int, values: np.ndarray) -> None:
        raise NotImplementedError

    def values(self, t: int) -> np.ndarray:
        raise NotImplementedError

    def put_policy(self, t: int, policy: np.ndarray) -> None:
        raise NotImplementedError

    def peak_cache_bytes(self) -> int:
        """Most bytes of attainment cache (containers + arrays) held in memory at one time."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class InMemoryStore(Store):
    """Keeps everything; the attainment cache lives on ``world._attainment_cache``."""

    def __init__(self, world: GridWorld) -> None:
        self.world = world
        self.layers: dict[int, Layer] = {}
        self.all_transitions: dict[int, Transitions] = {}
        self.slice_starts: dict[int, int] = {}
        self.all_values: dict[int, np.ndarray] = {}
        self.policies: dict[int, np.ndarray] = {}
        world._attainment_cache = {}

    def put_layer(self, t: int, layer: Layer) -> None:
        self.layers[t] = layer

    def layer(self, t: int) -> Layer:
        return self.layers[t]

    def put_transitions(self, t: int, transitions: Transitions) -> None:
        self.all_transitions[t] = transitions

    def transitions(self, t: int) -> Transitions:
        return self.all_transitions[t]

    def put_cache_slice(self, t: int, cache_slice: list[list[dict[ReachGoal, np.ndarray]]]) -> None:
        cache = self.world._attainment_cache
        assert cache is not None
        start = sum(len(self.layers[u].states) for u in range(t))
        self.slice_starts[t] = start
        for local, per_profile in enumerate(cache_slice):
            cache[start + local] = per_profile

    def cache_slice(self, t: int) -> np.ndarray:
        cache = self.world._attainment_cache
        assert cache is not None
        start = self.slice_starts[t]
        n_states = len(self.layers[t].states)
        return flatten_cache_slice([cache[start + local] for local in range(n_states)])

    def put_values(self, t: int, values: np.ndarray) -> None:
        self.all_values[t] = values

    def values(self, t: int) -> np.ndarray:
        return self.all_values[t]

    def put_policy(self, t: int, policy: np.ndarray) -> None:
        self.policies[t] = policy

    def peak_cache_bytes(self) -> int:
        return _cache_bytes(self.world._attainment_cache or {})

    def slice_bytes(self) -> dict[int, int]:
        """Bytes of each timestep's slice of the cache, measured as the disk-sliced store
        measures the one slice it holds."""
        cache = self.world._attainment_cache or {}
        return {t: _cache_bytes([cache[start + local]
                                 for local in range(len(self.layers[t].states))])
                for t, start in self.slice_starts.items()}


class DiskSliceStore(Store):
    """One ``.npz`` file per timestep and artefact; nothing but the current slice stays in RAM."""

    def __init__(self, directory: str | Path | None = None) -> None:
        self._owned = directory is None
        self.directory = Path(directory or tempfile.mkdtemp(prefix="bi-slices-"))
        self.directory.mkdir(parents=True, exist_ok=True)
        self.largest_slice_bytes = 0

    def _path(self, kind: str, t: int) -> Path:
        return self.directory / f"{kind}_{t:05d}.npz"

    def _load(self, kind: str, t: int) -> dict[str, np.ndarray]:
        with np.load(self._path(kind, t), allow_pickle=False) as data:
            return {name: data[name] for name in data.files}

    def put_layer(self, t: int, layer: Layer) -> None:
        np.savez(self._path("layer", t), states=layer.states)

    def layer(self, t: int) -> Layer:
        return Layer(**self._load("layer", t))

    def put_transitions(self, t: int, transitions: Transitions) -> None:
        np.savez(
            self._path("transitions", t),
            offsets=transitions.offsets,
            successor=transitions.successor,
            probability=transitions.probability,
        )

    def transitions(self, t: int) -> Transitions:
        return Transitions(**self._load("transitions", t))

    def put_cache_slice(self, t: int, cache_slice: list[list[dict[ReachGoal, np.ndarray]]]) -> None:
        self.largest_slice_bytes = max(self.largest_slice_bytes, _cache_bytes(cache_slice))
        np.savez(self._path("cache", t), attainment=flatten_cache_slice(cache_slice))

    def cache_slice(self, t: int) -> np.ndarray:
        return self._load("cache", t)["attainment"]

    def put_values(self, t: int, values: np.ndarray) -> None:
        np.savez(self._path("values", t), values=values)

    def values(self, t: int) -> np.ndarray:
        return self._load("values", t)["values"]

    def put_policy(self, t: int, policy: np.ndarray) -> None:
        np.savez(self._path("policy", t), policy=policy)

    def peak_cache_bytes(self) -> int:
        return self.largest_slice_bytes

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self.directory, ignore_errors=True)


def flatten_cache_slice(per_state: list[list[dict[ReachGoal, np.ndarray]]]) -> np.ndarray:
    """All attainment arrays of a layer, concatenated in (state, profile, goal, successor)
    order: one int8 array, the compact form that goes to disk."""
    arrays = [
        array
        for per_profile in per_state
        for per_goal in per_profile
        for array in per_goal.values()
    ]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int8)


def q_values(
    attainment: np.ndarray, transitions: Transitions, next_values: np.ndarray, n_goals: int
) -> np.ndarray:
    """Q[block, goal] for every (state, profile) block of a layer, from the flat attainment.

    Vectorised over the layer: the expected value of "goal reached now, or later with
    discount" over the successors of each block.
    """
    counts = np.diff(transitions.offsets)  # successors per block
    per_flat_block = np.repeat(np.arange(len(counts)), counts * n_goals)
    block_start = np.repeat(transitions.offsets[:-1] * n_goals, counts * n_goals)
    within = np.arange(len(per_flat_block)) - block_start
    k = counts[per_flat_block]
    goal = within // k
    entry = transitions.offsets[:-1][per_flat_block] + within % k
    reached = attainment.astype(np.float32)
    later = (1.0 - reached) * DISCOUNT * next_values[transitions.successor[entry], goal]
    contribution = transitions.probability[entry] * (reached + later)
    segment_starts = np.concatenate(([0], np.cumsum(np.repeat(counts, n_goals))[:-1]))
    return np.add.reduceat(contribution, segment_starts).reshape(len(counts), n_goals)


def _cache_bytes(cache: object) -> int:
    """Deep size of a cache built of dicts/lists of small int8 arrays (containers + arrays)."""
    import sys

    total = 0
    stack = [cache]
    while stack:
        node = stack.pop()
        total += sys.getsizeof(node)
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return total


# ---------------------------------------------------------------------------------------------


class BackwardInduction:
    """Builds the DAG forward, then phase 1 (values + attainment cache) and phase 2 (policy)."""

    def __init__(self, world: GridWorld, store: Store) -> None:
        self.world = world
        self.store = store
        self.horizon = world.config.horizon
        self._next_t = self.horizon - 1  # phase 1 walks t = horizon-1 ... 0

    # -- DAG ------------------------------------------------------------------------------
    def build_dag(self) -> None:
        world = self.world
        n_profiles = len(world.profiles)
        current = [world.initial_state()]
        for t in range(self.horizon):
            next_index: dict[State, int] = {}
            offsets = np.zeros(len(current) * n_profiles + 1, dtype=np.int64)
            successor: list[int] = []
            probability: list[float] = []
            entry = 0
            for state in current:
                for profile in world.profiles:
                    for nxt, p in world.successors(state, profile):
                        successor.append(next_index.setdefault(nxt, len(next_index)))
                        probability.append(p)
                    entry += 1
                    offsets[entry] = len(successor)
            self.store.put_layer(t, Layer(np.asarray(current, dtype=np.int32)))
            self.store.put_transitions(
                t,
                Transitions(
                    offsets,
                    np.asarray(successor, dtype=np.int32),
                    np.asarray(probability, dtype=np.float32),
                ),
            )
            current = list(next_index)
        terminal = Layer(np.asarray(current, dtype=np.int32))
        self.store.put_layer(self.horizon, terminal)
        self.store.put_values(self.horizon, self._terminal_values(terminal))

    def _terminal_values(self, layer: Layer) -> np.ndarray:
        states = layer.state_tuples()
        return np.array(
            [[g.is_achieved(s) for g in self.world.goals] for s in states], dtype=np.float32
        ).reshape(len(states), len(self.world.goals))

    # -- phase 1 --------------------------------------------------------------------------
    @property
    def phase1_done(self) -> bool:
        return self._next_t < 0

    def phase1_step(self) -> int:
        """Process one timestep (the next one, walking backwards); returns it."""
        t = self._next_t
        if t < 0:
            raise RuntimeError("phase 1 is complete; build a new solver to run again")
        goals = self.world.goals
        n_profiles = len(self.world.profiles)
        transitions = self.store.transitions(t)
        n_states = len(transitions.offsets) // n_profiles
        next_states = self.store.layer(t + 1).state_tuples()
        next_values = self.store.values(t + 1)
        cache_slice: list[list[dict[ReachGoal, np.ndarray]]] = []
        offsets, successor = transitions.offsets, transitions.successor
        for i in range(n_states):
            this_state_cache: list[dict[ReachGoal, np.ndarray]] = []
            for a in range(n_profiles):
                lo, hi = offsets[i * n_profiles + a], offsets[i * n_profiles + a + 1]
                next_state_indices = successor[lo:hi]
                per_goal: dict[ReachGoal, np.ndarray] = {}
                for possible_goal in goals:
                    attainment_values_array = np.fromiter(
                        (possible_goal.is_achieved(next_states[j]) for j in next_state_indices),
                        dtype=np.int8,
                        count=len(next_state_indices),
                    )
                    per_goal[possible_goal] = attainment_values_array
                this_state_cache.append(per_goal)
            cache_slice.append(this_state_cache)
        q = q_values(flatten_cache_slice(cache_slice), transitions, next_values, len(goals))
        values = q.reshape(n_states, n_profiles, len(goals)).max(axis=1)
        self.store.put_cache_slice(t, cache_slice)
        self.store.put_values(t, values)
        self._next_t -= 1
        return t

    def phase1(self) -> None:
        while not self.phase1_done:
            self.phase1_step()

    # -- phase 2 --------------------------------------------------------------------------
    def phase2(self) -> None:
        """Policy prior (softmax over profiles), reusing the cached attainment of phase 1."""
        goals = self.world.goals
        n_profiles = len(self.world.profiles)
        for t in range(self.horizon):
            transitions = self.store.transitions(t)
            attainment = self.store.cache_slice(t)  # reused, not recomputed
            next_values = self.store.values(t + 1)
            q = q_values(attainment, transitions, next_values, len(goals))
            q = q.reshape(-1, n_profiles, len(goals)).transpose(0, 2, 1)  # (S, G, P)
            logits = BETA * (q - q.max(axis=2, keepdims=True))
            policy = np.exp(logits)
            policy /= policy.sum(axis=2, keepdims=True)
            self.store.put_policy(t, policy.astype(np.float32))

    def solve(self) -> None:
        self.build_dag()
        self.phase1()
        self.phase2()


def solve(config: GridConfig, *, sliced: bool, directory: str | Path | None = None) -> Store:
    """Run the whole computation; returns the store (the in-memory one keeps everything)."""
    world = GridWorld(config)
    store: Store = DiskSliceStore(directory) if sliced else InMemoryStore(world)
    BackwardInduction(world, store).solve()
    return store
