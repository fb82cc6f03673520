"""PPO on shared links: every learned flow of an episode is an agent of one shared module.

The trainer `[algorithm] name = "ppo"` becomes when [links] competitors holds anything but
"none" (train/registry.py). Episodes are those of the multi-agent env (envs/multi_agent.py,
here FairShareEnv): flow_0 plus one agent per "self" of the drawn entry, among the entry's
classic competitors. RLlib does the rest as for one flow (train/ppo.py): each env runner
(train/ppo_multi_runner.py) steps the learned flows of its `num_envs` simulations together and
hands the learner one episode per flow; the policy mapping sends every agent to the one module
(MODULE_ID, the LSTM actor-critic of train/ppo_module.py), so each flow acts from its own
observations and its own recurrent state; the learner connectors cut each flow's episode into
max_seq_len chunks and compute its GAE from its own rewards, and the learner updates the
module on all of them.
The resulting module is the single-flow policy.pt `ccgym eval` takes, warm-started like it.

Per-flow reward: each agent's own step reward (envs/engine.py) times [ppo] reward_scale,
plus, with [ppo] fair_share_weight w > 0, a Gaussian around the fair share (after Sage):

    w * exp(-((rate - fair) / (sigma * fair))^2)

rate the flow's delivery rate in the step, fair the link's capacity over its active flows
(the env's info), sigma [ppo] fair_share_sigma; the bonus is scaled by reward_scale too.

Each flow maximizes its own return against the others' current policy: on a link the flows
fill, taking more of it pays the taker and costs the rest, and self-play can drift to worse
returns for all (measured: two learned flows on 6 Mbit/s, 40 ms, from random actions, five
to ten iterations lowered the mean return, with and without the bonus; on a link neither
fills, and beside a fixed competitor, it rises, tests/train/test_ppo_multi.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from ray.rllib.utils.typing import MultiAgentDict

from ccgym.envs.config import EnvConfig
from ccgym.envs.multi_agent import SharedLinkMultiAgentEnv
from ccgym.train.config import TrainConfig
from ccgym.train.ppo import Ppo, algorithm_config, module_config

# The one module's id: not RLlib's default, which would make RLlib take the run for a
# single-agent one (and its runners for single-agent env runners).
MODULE_ID = "flows"


def fair_share_bonus(rate_mbps: ArrayLike, fair_mbps: ArrayLike, weight: float,
                     sigma: float) -> np.ndarray:
    """weight x a Gaussian of the rate around the fair share, elementwise; 0 where no fair
    share is known."""
    rate, fair = np.asarray(rate_mbps, dtype=np.float64), np.asarray(fair_mbps, dtype=np.float64)
    known = fair > 0.0
    if weight == 0.0 or not known.any():
        return np.zeros(np.broadcast(rate, fair).shape)
    fair = np.where(known, fair, 1.0)
    return np.where(known, weight * np.exp(-(((rate - fair) / (sigma * fair)) ** 2)), 0.0)


@dataclass(frozen=True)
class FairShare:
    """The fair-share term of each flow's reward (the module docstring)."""

    weight: float = 0.0  # 0: no term
    sigma: float = 1.0

    @classmethod
    def of(cls, config: TrainConfig) -> FairShare:
        """The run's term, scaled as its reward is."""
        ppo = config.ppo
        return cls(ppo.fair_share_weight * ppo.reward_scale, ppo.fair_share_sigma)

    def bonus(self, rate_mbps: ArrayLike, fair_mbps: ArrayLike) -> np.ndarray:
        return fair_share_bonus(rate_mbps, fair_mbps, self.weight, self.sigma)


class FairShareEnv(SharedLinkMultiAgentEnv):
    """The multi-agent env whose rewards gain a FairShare term (weight 0: the env's own
    rewards, unchanged). Built by RLlib from the run's env config (multi_env_config: the
    EnvConfig under "config", the term under "fair_share")."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.fair: FairShare = config["fair_share"]
        super().__init__(config["config"])

    def step(self, action_dict: MultiAgentDict) -> tuple[  # type: ignore[override]  # as the env's
            MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        obs, rewards, terminated, truncated, infos = super().step(action_dict)
        agents = list(rewards)
        bonus = self.fair.bonus([infos[a]["delivered_mbps"] for a in agents],
                                [infos[a]["fair_share_mbps"] for a in agents])
        for agent, b in zip(agents, bonus.tolist()):
            rewards[agent] += b
        return obs, rewards, terminated, truncated, infos


def multi_env_config(config: TrainConfig, env: EnvConfig) -> dict[str, Any]:
    """FairShareEnv's config inside each env runner: env (train/config.py's env_config, its
    links resolved) and the run's FairShare term, each as it is."""
    return {"config": env, "fair_share": FairShare.of(config)}


def to_shared_module(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """RLlib's policy mapping: every learned flow to the one module."""
    return MODULE_ID


def multi_algorithm_config(config: TrainConfig, env: EnvConfig) -> Any:
    """ppo.py's PPOConfig, with the multi-agent env and one module for every agent."""
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ccgym.train.ppo_module import LstmActorCritic
    from ccgym.train.ppo_multi_runner import BatchedMultiAgentEnvRunner

    spec = RLModuleSpec(module_class=LstmActorCritic, model_config=module_config(config))
    algo = algorithm_config(config, env)
    algo.env_config = {}  # environment() merges into the single-flow env's keys otherwise
    return (
        algo.environment(FairShareEnv, env_config=multi_env_config(config, env))
        # The runner samples its simulations in one batch (train/ppo_multi_runner.py).
        .env_runners(env_runner_cls=BatchedMultiAgentEnvRunner)
        .multi_agent(policies={MODULE_ID}, policy_mapping_fn=to_shared_module)
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={MODULE_ID: spec}))
    )


class PpoMulti(Ppo):
    """Ppo on shared links (the module docstring); state, checkpoints and resuming are Ppo's."""

    @property
    def module_id(self) -> str:
        return MODULE_ID

    def algorithm_config(self, env: EnvConfig) -> Any:
        return multi_algorithm_config(self.config, env)
