"""Several learned flows on one shared link: a multi-agent env in RLlib's form.

    from ray.rllib.algorithms.ppo import PPOConfig
    config = PPOConfig().environment(SharedLinkMultiAgentEnv, env_config={
        "competitors": ["self", "self:2", "cubic+self"], "competitor_starts": ["with", "after"]})

Agents are the episode's learned flows: "flow_0" (the flow every episode has) and one more
per "self" of the drawn competitors entry (envs/competitors.py), "flow_1", ... in the
entry's order; classic competitors are part of the link. possible_agents holds as many as
the largest entry needs. All agents share spaces (ccgym/Link-v0's): one module can serve
them all (RLlib's policy mapping), and each observes only its own flow, as its sender would.

An agent enters the episode when its flow starts: reset returns the agents that start
with the episode; a later one appears in a step's observations (with no reward) at the
first step's end after its start, and must act from then on. A flow that stops leaves with
terminated[agent] = True and its last reward, and acts no more; at the episode's length
every agent still present is truncated and "__all__" is set. `agents` lists those in the
last reset's or step's observations; the next step takes an action from each of them not
terminated. Per agent: the reward is its own step reward,
as in Link-v0; info as in ccgym/SharedLink-v0 (fair_share_mbps for rewards to come).
expert_actions() labels each acting agent with the DAgger expert's action (oracle/shared.py).

Seeding: reset(seed=s) seeds the env's np_random (a first reset without a seed uses the
config's seed); the same seed gives the same episodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.typing import AgentID, MultiAgentDict

from ccgym.emulators import _core
from ccgym.envs.competitors import SELF
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import Engine, RowStep, action_space, observation_space
from ccgym.envs.shared_link import row_info

ALL = "__all__"


def agent_id(k: int) -> str:
    return f"flow_{k}"


class SharedLinkMultiAgentEnv(MultiAgentEnv):
    """Learned flows sharing a link with each other and classic competitors; see the module
    docstring."""

    def __init__(self, config: Mapping[str, Any] | EnvConfig | None = None,
                 **kwargs: Any) -> None:
        super().__init__()
        # RLlib passes its EnvContext, a dict with worker attributes: only the dict's items.
        self.config = EnvConfig.build(dict(config) if isinstance(config, Mapping) else config,
                                      **kwargs)
        self.engine = Engine(1, self.config)
        most = 1 + max(flows.count(SELF) for flows in self.engine.entries)
        self.possible_agents = [agent_id(k) for k in range(most)]
        self.agents = []
        self.observation_spaces = {a: observation_space() for a in self.possible_agents}
        self.action_spaces = {a: action_space() for a in self.possible_agents}
        self._rng: np.random.Generator | None = None
        self._left: set[AgentID] = set()    # agents whose flow stopped this episode
        self._acting: set[AgentID] = set()  # agents expected to act in the next step

    # reset and step: RLlib's MultiAgentEnv gives gym.Env's per-agent dicts (it ignores the
    # same error in its own definitions)
    def reset(self, *, seed: int | None = None,  # type: ignore[override]  # RLlib's dicts
              options: dict[str, Any] | None = None) -> tuple[MultiAgentDict, MultiAgentDict]:
        if seed is None and self._rng is None:
            seed = self.config.seed
        if seed is not None or self._rng is None:
            self._rng, _ = seeding.np_random(seed)
        self.engine.reset_sim(0, self._rng)
        self._left = set()
        rows = self.engine.first_step()
        self.agents = [agent_id(r) for r in range(self.engine.num_rows) if rows.active[r]]
        self._acting = set(self.agents)
        return ({a: rows.obs[self._row(a)] for a in self.agents},
                {a: self._info(rows, self._row(a)) for a in self.agents})

    def step(self, action_dict: MultiAgentDict) -> tuple[  # type: ignore[override]  # as reset
            MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        actions = np.full(self.engine.num_rows, -1, dtype=np.int32)  # absent: keep the window
        for agent, action in action_dict.items():
            if agent not in self._acting:
                raise ValueError(f"action for {agent!r}, which is not acting in the episode "
                                 f"now (acting: {sorted(self._acting, key=str)})")
            a = int(action)
            if not 0 <= a < _core.NUM_ACTIONS:
                raise ValueError(f"{agent}: action must be in [0, {_core.NUM_ACTIONS}), "
                                 f"got {action!r}")
            actions[self._row(agent)] = a
        rows = self.engine.step(actions)
        return self._outcome(rows)

    def _outcome(self, rows: RowStep) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict,
                                               MultiAgentDict, MultiAgentDict]:
        done = bool(rows.done[0])
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminated: MultiAgentDict = {}
        truncated: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        acting: set[AgentID] = set()
        for r in range(self.engine.num_rows):
            agent = agent_id(r)
            if agent in self._left or (agent not in self._acting and not rows.active[r]):
                continue  # gone, or not started yet
            obs[agent], infos[agent] = rows.obs[r], self._info(rows, r)
            if agent in self._acting:
                rewards[agent] = float(rows.reward[r])
            stopped = not rows.active[r]
            terminated[agent], truncated[agent] = stopped, done and not stopped
            if stopped:
                self._left.add(agent)
            else:
                acting.add(agent)
        # Those in this step's dicts, the ones leaving included (RLlib's checker asks so).
        self.agents = list(obs)
        self._acting = set() if done else acting
        terminated[ALL], truncated[ALL] = False, done
        return obs, rewards, terminated, truncated, infos

    def expert_actions(self) -> dict[AgentID, int]:
        """The DAgger expert's action of each agent that acts in the next step, computed for
        all of them in one call (oracle/shared.py)."""
        actions = self.engine.expert_actions()
        return {a: int(actions[self._row(a)]) for a in self.agents if a in self._acting}

    def _row(self, agent: AgentID) -> int:
        return int(str(agent).removeprefix("flow_"))

    def _info(self, rows: RowStep, r: int) -> dict[str, Any]:
        profile, scenario = self.engine.episode(0)
        return row_info(rows, r, profile.name, scenario.entry)
