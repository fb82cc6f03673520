"""PPO's env runner on shared links: every learned flow of all its simulations in one batch.

RLlib's MultiAgentEnvRunner steps its `num_envs` multi-agent envs one after another, each step
through its connector pipelines, walking per-agent dicts in Python: on the quick config's links
with ["self"] (two learned flows), 2 workers of 16 simulations, it sampled 1.8k simulation
steps/s where DAgger's rollouts took 63k on the same two busy cores; this runner samples 42-44k
where DAgger took 31-38k (benchmarks/bench_train_speed.py, same invocations).
BatchedMultiAgentEnvRunner is, like ppo_runner.py's BatchedEnvRunner, a WholeEpisodeRunner on
RLlib's public EnvRunner base: its env is one Engine (envs/engine.py) of `num_envs`
simulations, the engine FairShareEnv runs one simulation of, and its module the algorithm's
inference-only MultiRLModule, of which it runs the one shared module. A round resets every
simulation, then per step runs the module once on every learned flow (row) of every
simulation, each row with its own LSTM state, and steps all simulations in one call, the rows
that do not act keeping their window.

The rows follow FairShareEnv's agents (envs/multi_agent.py): a row acts from the step after
its flow starts (the flows that start with the episode from the first), its LSTM state
initial then, with a reward per step (the env's step reward plus the FairShare term, computed
as FairShareEnv computes it); a flow that stops ends its episode terminated with the step
that stopped it, and at the episode's length every flow still acting is truncated. Simulation
i draws its episodes from np_random(seed + i), as the vector of FairShareEnvs reset with the
seed does, so a sampled episode replays in FairShareEnv step by step
(tests/train/test_ppo_runner.py).

Episodes: one SingleAgentEpisode per learned flow, not a MultiAgentEpisode per simulation.
A MultiAgentEpisode is a container of per-agent SingleAgentEpisodes (its agent_episodes, each
tagged with its agent_id, module_id and multi_agent_episode_id), and RLlib's learner
connectors take it apart into those (ConnectorV2.single_agent_episode_iterator): each batch
item is keyed by (multi_agent_episode_id, agent_id, module_id), AgentToModuleMapping groups
the items by module, and GAE runs per single-agent episode on its own rewards. With one shared
module and no centralized critic nothing reads the container, so SingleAgentEpisodes with the
same three tags (the simulation's id shared by its flows) give the learner the same batch,
without the per-step bookkeeping of env steps to agent steps that building a MultiAgentEpisode
takes. ccgym's PPO counts the sample's environment steps (simulation steps, as RLlib's
MultiAgentEpisode lengths) from the runner's env_steps_sampled; the learner's own metric of
env steps trained, which ccgym does not read, counts every flow's steps.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

import numpy as np
import torch
from gymnasium.utils import seeding
from ray.rllib.env.single_agent_episode import SingleAgentEpisode

from ccgym.envs.engine import Engine, action_space, observation_space
from ccgym.envs.multi_agent import agent_id
from ccgym.train.ppo_module import LstmActorCritic
from ccgym.train.ppo_multi import MODULE_ID, FairShare
from ccgym.train.ppo_runner import BatchActor, Rollout, WholeEpisodeRunner

KEEP_WINDOW = -1  # the engine's action of a row that does not act (FairShareEnv's too)


class BatchedMultiAgentEnvRunner(WholeEpisodeRunner):
    """The shared-links runner: all learned flows of its simulations in one batch (the module
    docstring)."""

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        self.fair = FairShare()  # the env config's, once make_env has read it
        self.rngs: list[np.random.Generator] = []  # each simulation's episode draws
        super().__init__(config=config, **kwargs)

    def make_env(self) -> None:
        """The runner's simulations, from the env's arguments (FairShareEnv's config)."""
        self.fair = self.env_arguments["fair_share"]
        self.env = Engine(self.num_envs, self.env_arguments["config"])
        self.rngs = []

    def make_module(self) -> None:
        """The algorithm's multi-module (the one shared module) in its inference-only form."""
        self.module = self.config.get_multi_rl_module_spec(
            spaces=self.get_spaces(), inference_only=True).build()

    def get_spaces(self) -> dict[str, Any]:
        # Every learned flow's spaces are ccgym/Link-v0's (FairShareEnv's agents').
        return {MODULE_ID: (observation_space(), action_space())}

    def stop(self) -> None:
        pass  # the simulations hold nothing to release

    def reset(self, links: Engine, seed: int | None) -> None:
        """Every simulation's next episode: after a seed from np_random(seed + i), else from
        each simulation's generator going on (the env config's seed at first)."""
        if seed is not None or not self.rngs:
            seed = seed if seed is not None else links.config.seed
            self.rngs = [seeding.np_random(None if seed is None else seed + i)[0]
                         for i in range(links.num_sims)]
        for i, rng in enumerate(self.rngs):
            links.reset_sim(i, rng)

    @torch.inference_mode()
    def sample_round(self, explore: bool, seed: int | None) -> tuple[
            list[SingleAgentEpisode], int]:
        """One episode in every simulation, all their learned flows stepped together."""
        links = self.env
        assert isinstance(links, Engine)
        self.reset(links, seed)
        rows = links.first_step()
        obs = np.array(rows.obs, dtype=np.float32)
        module = self.module[MODULE_ID]
        assert isinstance(module, LstmActorCritic)  # the PPO config's module
        actor = BatchActor(module, explore, links.num_rows)
        rollout = Rollout(obs=[obs])
        acting = rows.active.copy()  # the rows that act in the next step
        starts = np.where(acting, 0, -1)  # each row's first observation; -1: not yet
        while True:
            step = actor.act(obs)
            rows = links.step(np.where(acting, step.actions, KEEP_WINDOW).astype(np.int32))
            obs = np.array(rows.obs, dtype=np.float32)  # kept: the core reuses its buffer
            done = bool(rows.done.all())  # the simulations reset together, so end together
            stopped = acting & ~rows.active
            rewards = rows.reward + self.fair.bonus(rows.delivered_mbps, rows.fair_share_mbps)
            rollout.add(step, obs, rewards, stopped | (acting & done), stopped)
            if done:
                break
            joining = rows.active & ~acting & (starts < 0)
            starts[joining] = len(rollout.actions)
            actor.restart(joining)
            acting = (acting & rows.active) | joining
        rollout.starts = np.where(starts >= 0, starts, len(rollout.actions))
        episodes = rollout.episodes(self.get_spaces()[MODULE_ID], self.weights_seq_no,
                                    self.tags(links))
        return episodes, links.num_sims * len(rollout.actions)

    def tags(self, links: Engine) -> list[dict[str, Any]]:
        """Each row's agent, the one module, and its simulation's episode id."""
        tags = []
        for i in range(links.num_sims):
            simulation = uuid.uuid4().hex
            tags += [{"agent_id": agent_id(k), "module_id": MODULE_ID,
                      "multi_agent_episode_id": simulation}
                     for k in range(links.row_begin(i + 1) - links.row_begin(i))]
        return tags

    def episode_returns(self, episodes: list[SingleAgentEpisode]) -> list[tuple[int, float]]:
        """Per simulation its length and its flows' summed return (a MultiAgentEpisode's)."""
        returns: defaultdict[Any, float] = defaultdict(float)
        for episode in episodes:
            returns[episode.multi_agent_episode_id] += episode.get_return()
        length = self.env_steps_sampled // max(len(returns), 1)
        return [(length, value) for value in returns.values()]
