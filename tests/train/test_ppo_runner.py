"""PPO's batched env runners: the single-flow runner's episodes are the vector env's steps
under the module's own actions; the multi-agent runner's, one per learned flow, are
FairShareEnv's agents' episodes, flows that start late or stop early included, each acted on
from its own initial LSTM state; both are deterministic under a seed, and the sampler draws
from the module's distribution."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

from ccgym.envs.vector import VecLinkEnv
from ccgym.train import ppo
from ccgym.emulators.link_names import link_from_spec
from ccgym.train.config import env_config, parse_config
from ccgym.train.pool import RolloutPool
from ccgym.train.ppo_multi import MODULE_ID, FairShareEnv, multi_algorithm_config, \
    multi_env_config
from ccgym.train.ppo_multi_runner import BatchedMultiAgentEnvRunner
from ccgym.train.ppo_runner import BatchedEnvRunner, WholeEpisodeRunner, sample_actions

TINY_LINK = "rate_mbps=3,delay_ms=20,queue=droptail:packets=10"
NUM_ENVS = 3
STEPS = 40  # episode_ms 400
SHARED_LINK = "rate_mbps=6,delay_ms=20,queue=droptail:packets=40"
MULTI_NUM_ENVS = 4
MULTI_STEPS = 60


@contextlib.contextmanager
def local_algo(build: Callable[..., Any], num_envs: int, steps: int, seed: int,
               **sections: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    """(config, RLlib's algorithm) of a tiny PPO run sampling in the driver's env runner."""
    doc: dict[str, dict[str, Any]] = {
        "run": {"name": "runner", "seed": seed, "workers": 0, "iterations": 1,
                "num_envs": num_envs, "episode_ms": steps * 10.0},
        "model": {"hidden_size": 8}, "algorithm": {"name": "ppo"}, "ppo": {"minibatch_size": 40}}
    for name, values in sections.items():
        doc.setdefault(name, {}).update(values)
    config = parse_config(doc, "runner")
    with RolloutPool(1):
        links = [link_from_spec(spec) for spec in doc["links"]["train"]]
        built = build(config, env_config(config, links)).build_algo()
        try:
            yield config, built
        finally:
            built.stop()


@pytest.fixture(scope="module")
def algo():
    with local_algo(ppo.algorithm_config, NUM_ENVS, STEPS, 5,
                    links={"train": [TINY_LINK], "validation": [TINY_LINK]}) as built:
        yield built


@pytest.fixture(scope="module")
def multi_algo():
    # Self flows start before, with or after flow_0, and half of them stop early.
    links = {"train": [SHARED_LINK], "validation": [SHARED_LINK], "competitors": ["self:2"],
             "competitor_starts": ["before", "with", "after"], "competitor_stagger_ms": 300.0,
             "competitor_stop": 0.5}
    with local_algo(multi_algorithm_config, MULTI_NUM_ENVS, MULTI_STEPS, 3, links=links,
                    ppo={"fair_share_weight": 0.5}) as built:
        yield built


def sample(algo, iteration: int):
    config, built = algo
    runner = built.env_runner_group.local_env_runner
    assert isinstance(runner, WholeEpisodeRunner)
    episodes, steps, _ = ppo.sample_episodes(runner, config.run.seed, iteration)
    return runner, episodes, steps


def test_episodes_replay_in_the_env_and_the_module(algo) -> None:
    config, _ = algo
    runner, episodes, steps = sample(algo, 1)
    assert isinstance(runner, BatchedEnvRunner)
    assert len(episodes) == NUM_ENVS and steps == NUM_ENVS * STEPS
    assert all(e.is_truncated and not e.is_terminated and len(e) == STEPS for e in episodes)
    # The same env, reset with the runner's seed and stepped with the episodes' actions.
    env = VecLinkEnv(NUM_ENVS, env_config(config, [link_from_spec(TINY_LINK)]), threads=1,
                     autoreset_mode=AutoresetMode.NEXT_STEP)
    obs, _ = env.reset(seed=ppo.stream_seed(config.run.seed, 1, ppo.SAMPLE_STREAM, 0))
    actions = np.stack([e.get_actions() for e in episodes])
    observations, rewards = [obs], []
    for t in range(STEPS):
        obs, reward, _, _, _ = env.step(actions[:, t])
        observations.append(obs)
        rewards.append(reward)
    for i, episode in enumerate(episodes):
        np.testing.assert_array_equal(episode.get_observations(), np.stack(observations)[:, i])
        np.testing.assert_array_equal(episode.get_rewards(), np.stack(rewards)[:, i])
    # The module over each whole episode from its initial state: the same logits and states.
    module = runner.module
    assert module.get_exploration_action_dist_cls() is TorchCategorical  # the fast sampler's
    obs_seq = torch.from_numpy(np.stack([e.get_observations()[:-1] for e in episodes]))
    zeros = torch.zeros(NUM_ENVS, module.policy.hidden_size)
    with torch.no_grad():
        out, _ = module.lstm_outputs({Columns.OBS: obs_seq, Columns.STATE_IN: {"h": zeros, "c": zeros}})
        logits = module.action_logits(out, {Columns.OBS: obs_seq})
    for i, episode in enumerate(episodes):
        dist_inputs = episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
        torch.testing.assert_close(torch.from_numpy(dist_inputs), logits[i])
        states = episode.get_extra_model_outputs(Columns.STATE_OUT)
        torch.testing.assert_close(torch.from_numpy(states["h"]), out[i])
        log_probs = torch.log_softmax(torch.from_numpy(dist_inputs), -1)
        expected = log_probs.gather(-1, torch.from_numpy(actions[i])[:, None]).squeeze(-1)
        torch.testing.assert_close(
            torch.from_numpy(episode.get_extra_model_outputs(Columns.ACTION_LOGP)), expected)


@pytest.mark.parametrize("fixture", ["algo", "multi_algo"])
def test_the_same_seed_samples_the_same_episodes(request: pytest.FixtureRequest,
                                                 fixture: str) -> None:
    built = request.getfixturevalue(fixture)
    _, first, _ = sample(built, 2)
    _, again, _ = sample(built, 2)
    _, other, _ = sample(built, 3)
    assert [len(e) for e in first] == [len(e) for e in again]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a.get_actions(), b.get_actions())
        np.testing.assert_array_equal(a.get_observations(), b.get_observations())
    assert any(not np.array_equal(a.get_actions(), c.get_actions())
               for a, c in zip(first, other))


def test_the_sampler_draws_from_the_categorical_of_the_logits() -> None:
    torch.manual_seed(0)
    logits = torch.tensor([[2.0, 0.5, -1.0, 0.0, -30.0, 1.0, 0.2]]).repeat(200_000, 1)
    actions, logp = sample_actions(TorchCategorical, logits, explore=True)
    probs = torch.softmax(logits[0], -1)
    frequencies = torch.bincount(actions, minlength=7).double() / len(actions)
    # 200k draws: a frequency's standard error is at most 0.0011.
    torch.testing.assert_close(frequencies, probs.double(), atol=0.006, rtol=0)
    torch.testing.assert_close(logp, TorchCategorical.from_logits(logits).logp(actions))
    greedy, _ = sample_actions(TorchCategorical, logits[:3], explore=False)
    assert greedy.tolist() == [0, 0, 0]


# ---------------------------------------------------------------- shared links

def by_simulation(episodes: list[Any]) -> list[dict[str, Any]]:
    """Each simulation's episodes by agent, the simulations in the runner's order."""
    simulations: dict[str, dict[str, Any]] = {}
    for e in episodes:
        simulations.setdefault(e.multi_agent_episode_id, {})[e.agent_id] = e
    return list(simulations.values())


def replay(env: FairShareEnv, seed: int, episodes: dict[str, Any]) -> dict[str, Any]:
    """FairShareEnv's episode under the episodes' actions: per agent its observations, its
    rewards and whether it ended terminated."""
    obs, _ = env.reset(seed=seed)
    seen: dict[str, list[np.ndarray]] = defaultdict(list)
    rewards: dict[str, list[float]] = defaultdict(list)
    terminated: dict[str, bool] = {}
    acting = list(obs)
    for a in acting:
        seen[a].append(obs[a])
    while True:
        actions = {a: int(episodes[a].get_actions()[len(rewards[a])]) for a in acting}
        obs, reward, term, trunc, _ = env.step(actions)
        for a, r in reward.items():
            rewards[a].append(r)
        for a in obs:
            seen[a].append(obs[a])
            if term[a] or trunc[a]:
                terminated[a] = term[a]
        acting = [a for a in obs if not (term[a] or trunc[a])]
        if trunc["__all__"]:
            return {a: (np.stack(seen[a]), rewards[a], terminated[a]) for a in rewards}


def test_flow_episodes_replay_in_fair_share_env(multi_algo) -> None:
    config, _ = multi_algo
    runner, episodes, steps = sample(multi_algo, 1)
    assert isinstance(runner, BatchedMultiAgentEnvRunner)
    assert steps == MULTI_NUM_ENVS * MULTI_STEPS
    simulations = by_simulation(episodes)
    assert len(simulations) == MULTI_NUM_ENVS
    env = FairShareEnv(multi_env_config(config, env_config(config, [link_from_spec(SHARED_LINK)])))
    seed = ppo.stream_seed(config.run.seed, 1, ppo.SAMPLE_STREAM, 0)
    for i, flows in enumerate(simulations):
        replayed = replay(env, seed + i, flows)
        assert sorted(replayed) == sorted(flows)
        for agent, (obs, rewards, terminated) in replayed.items():
            episode = flows[agent]
            assert episode.module_id == MODULE_ID
            np.testing.assert_array_equal(episode.get_observations(), obs)
            np.testing.assert_array_equal(episode.get_rewards(), rewards)
            assert episode.is_terminated == terminated and episode.is_truncated != terminated
    # The scenarios hold what the test is about: flows that join late and flows that stop.
    assert any(e.is_terminated for e in episodes)
    assert any(len(e) < MULTI_STEPS and not e.is_terminated for e in episodes)


def test_every_flow_acts_from_its_own_initial_state(multi_algo) -> None:
    runner, episodes, _ = sample(multi_algo, 2)
    module = runner.module[MODULE_ID]
    zeros = torch.zeros(1, module.policy.hidden_size)
    for episode in episodes:
        obs = torch.from_numpy(episode.get_observations()[:-1][None])
        with torch.no_grad():
            out, _ = module.lstm_outputs({Columns.OBS: obs, Columns.STATE_IN: {"h": zeros, "c": zeros}})
            logits = module.action_logits(out, {Columns.OBS: obs})[0]
        torch.testing.assert_close(
            torch.from_numpy(episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)), logits)
        torch.testing.assert_close(
            torch.from_numpy(episode.get_extra_model_outputs(Columns.STATE_OUT)["h"]), out[0])
