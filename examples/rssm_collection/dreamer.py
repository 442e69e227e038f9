"""A minimal Dreamer-style online collection step in torch.

Model of seed 001: every environment step runs encoder -> RSSM.observe -> actor and critic on
a small batch of environments, and the RSSM keeps its latest posterior as online state for the
next step.

* :class:`LeakyCollector` is the broken version: collection runs with autograd enabled and the
  RSSM caches its posterior *without* detaching it, so each step's state hangs on the previous
  step's graph. Nothing is ever backpropagated, so the whole chain of activations (the saved
  tensors of every GRU cell, linear layer and sampling op since the start) stays alive and
  grows by a fixed amount per step: the linear small-pool growth of the seed.
* :class:`FixedCollector` runs the same step under ``torch.no_grad()`` and caches detached
  state (``detach_posteriors=True`` really detaches), so memory is flat after warm-up.

Plain torch; importable without pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class DreamerConfig:
    num_envs: int = 16
    obs_dim: int = 64
    embed_dim: int = 256
    deter_dim: int = 256
    stoch_dim: int = 32
    hidden_dim: int = 256
    action_dim: int = 6


class RSSM(nn.Module):
    """Recurrent state-space model: deterministic GRU state + Gaussian stochastic state."""

    def __init__(self, cfg: DreamerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.pre_gru = nn.Linear(cfg.stoch_dim + cfg.action_dim, cfg.hidden_dim)
        self.gru = nn.GRUCell(cfg.hidden_dim, cfg.deter_dim)
        self.prior_head = nn.Linear(cfg.deter_dim, 2 * cfg.stoch_dim)
        self.posterior_head = nn.Linear(cfg.deter_dim + cfg.embed_dim, 2 * cfg.stoch_dim)
        # Online state between environment steps: the anchor of the leak when not detached.
        self._state: dict[str, torch.Tensor] | None = None
        self._prior_state: dict[str, torch.Tensor] | None = None

    def initial(self, batch: int, device: torch.device) -> dict[str, torch.Tensor]:
        return {
            "deter": torch.zeros(batch, self.cfg.deter_dim, device=device),
            "stoch": torch.zeros(batch, self.cfg.stoch_dim, device=device),
        }

    @staticmethod
    def _sample(stats: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        mean, raw_std = stats.chunk(2, dim=-1)
        std = nn.functional.softplus(raw_std) + 0.1
        noise = torch.randn(mean.shape, generator=generator, device=mean.device)
        return mean + std * noise

    def observe(
        self,
        embed: torch.Tensor,
        prev_action: torch.Tensor,
        *,
        detach_posteriors: bool,
        generator: torch.Generator | None = None,
    ) -> dict[str, torch.Tensor]:
        state = self._state or self.initial(embed.shape[0], embed.device)
        x = torch.relu(self.pre_gru(torch.cat([state["stoch"], prev_action], dim=-1)))
        deter = self.gru(x, state["deter"])
        prior = {"deter": deter, "stoch": self._sample(self.prior_head(deter), generator)}
        post_stats = self.posterior_head(torch.cat([deter, embed], dim=-1))
        posterior = {"deter": deter, "stoch": self._sample(post_stats, generator)}
        if detach_posteriors:
            self._state = {k: v.detach() for k, v in posterior.items()}
            self._prior_state = {k: v.detach() for k, v in prior.items()}
        else:
            self._state = posterior
            self._prior_state = prior
        return posterior

    def reset(self) -> None:
        self._state = None
        self._prior_state = None


class WorldModelAgent(nn.Module):
    def __init__(self, cfg: DreamerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = nn.Sequential(
            nn.Linear(cfg.obs_dim, cfg.embed_dim), nn.ELU(), nn.Linear(cfg.embed_dim, cfg.embed_dim)
        )
        self.rssm = RSSM(cfg)
        feat = cfg.deter_dim + cfg.stoch_dim
        self.actor = nn.Sequential(
            nn.Linear(feat, cfg.hidden_dim), nn.ELU(), nn.Linear(cfg.hidden_dim, cfg.action_dim)
        )
        self.critic = nn.Sequential(
            nn.Linear(feat, cfg.hidden_dim), nn.ELU(), nn.Linear(cfg.hidden_dim, 1)
        )


class ToyEnv:
    """Vectorised environment with preallocated observation buffers (no growth of its own)."""

    def __init__(self, cfg: DreamerConfig, device: torch.device, seed: int = 0) -> None:
        self.generator = torch.Generator(device=device).manual_seed(seed)
        self.obs = torch.zeros(cfg.num_envs, cfg.obs_dim, device=device)
        self.reward = torch.zeros(cfg.num_envs, device=device)

    def step(self, action: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            self.obs.mul_(0.9).add_(torch.rand(self.obs.shape, generator=self.generator,
                                               device=self.obs.device))
            self.obs[:, : action.shape[1]].add_(action)
        return self.obs


class Collector:
    """Runs ``collect_step`` once per environment step; subclasses decide about autograd."""

    detach_posteriors = False

    def __init__(self, cfg: DreamerConfig | None = None, device: str | torch.device = "cpu",
                 seed: int = 0) -> None:
        self.cfg = cfg or DreamerConfig()
        self.device = torch.device(device)
        torch.manual_seed(seed)
        self.agent = WorldModelAgent(self.cfg).to(self.device)
        self.env = ToyEnv(self.cfg, self.device, seed)
        self.generator = torch.Generator(device=self.device).manual_seed(seed + 1)
        self.prev_action = torch.zeros(self.cfg.num_envs, self.cfg.action_dim, device=self.device)
        self.steps = 0
        self.last_value: torch.Tensor | None = None

    def _forward(self, obs: torch.Tensor) -> torch.Tensor:
        agent = self.agent
        embed = agent.encoder(obs)
        post = agent.rssm.observe(
            embed, self.prev_action, detach_posteriors=self.detach_posteriors,
            generator=self.generator,
        )
        feat = torch.cat([post["deter"], post["stoch"]], dim=-1)
        logits = agent.actor(feat)
        self.last_value = agent.critic(feat)
        index = torch.distributions.Categorical(logits=logits).sample()
        return nn.functional.one_hot(index, self.cfg.action_dim).to(obs.dtype)

    def collect_step(self) -> None:
        raise NotImplementedError

    def _advance(self, action: torch.Tensor) -> None:
        with torch.no_grad():
            self.prev_action.copy_(action)
        self.env.step(self.prev_action)
        self.steps += 1


class LeakyCollector(Collector):
    """Autograd on during collection and a non-detached cached state: the graph grows."""

    detach_posteriors = False

    def collect_step(self) -> None:
        action = self._forward(self.env.obs)
        self._advance(action)


class FixedCollector(Collector):
    """``torch.no_grad()`` collection and a detached cached state: flat."""

    detach_posteriors = True

    def collect_step(self) -> None:
        with torch.no_grad():
            action = self._forward(self.env.obs)
        self._advance(action)


def graph_depth(collector: Collector) -> int:
    """Nodes reachable from the cached RSSM state's grad_fn (0 when it carries no graph)."""
    state = collector.agent.rssm._state
    if state is None or state["deter"].grad_fn is None:
        return 0
    seen: set[int] = set()
    stack = [state["deter"].grad_fn, state["stoch"].grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        stack.extend(parent for parent, _ in fn.next_functions)
    return len(seen)
