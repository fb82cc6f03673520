"""PPO's batched env runner: its episodes are the vector env's steps under the module's own
actions, deterministic under a seed, and its sampler draws from the module's distribution."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical

from ccgym.envs.vector import VecLinkEnv
from ccgym.train import ppo
from ccgym.train.config import parse_config
from ccgym.train.pool import RolloutPool
from ccgym.train.ppo_runner import BatchedEnvRunner, sample_actions

TINY_LINK = "rate_mbps=3,delay_ms=20,queue=droptail:packets=10"
NUM_ENVS = 3
STEPS = 40  # episode_ms 400


@pytest.fixture(scope="module")
def algo():
    doc = {"run": {"name": "runner", "seed": 5, "workers": 0, "iterations": 1,
                   "num_envs": NUM_ENVS, "episode_ms": STEPS * 10.0},
           "links": {"train": [TINY_LINK], "validation": [TINY_LINK]},
           "model": {"hidden_size": 8}, "algorithm": {"name": "ppo"},
           "ppo": {"minibatch_size": 40}}
    config = parse_config(doc, "runner")
    with RolloutPool(1):
        built = ppo.algorithm_config(config, [TINY_LINK]).build_algo()
        yield config, built
        built.stop()


def sample(algo, iteration: int):
    config, built = algo
    runner = built.env_runner_group.local_env_runner
    assert isinstance(runner, BatchedEnvRunner)
    episodes, steps, _ = ppo.sample_episodes(runner, config.run.seed, iteration)
    return runner, episodes, steps


def test_episodes_replay_in_the_env_and_the_module(algo) -> None:
    config, _ = algo
    runner, episodes, steps = sample(algo, 1)
    assert len(episodes) == NUM_ENVS and steps == NUM_ENVS * STEPS
    assert all(e.is_truncated and not e.is_terminated and len(e) == STEPS for e in episodes)
    # The same env, reset with the runner's seed and stepped with the episodes' actions.
    env = VecLinkEnv(NUM_ENVS, ppo.env_config(config, [TINY_LINK])["config"], threads=1,
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
        out, _ = module._lstm({Columns.OBS: obs_seq, Columns.STATE_IN: {"h": zeros, "c": zeros}})
        logits = module._logits(out, {Columns.OBS: obs_seq})
    for i, episode in enumerate(episodes):
        dist_inputs = episode.get_extra_model_outputs(Columns.ACTION_DIST_INPUTS)
        torch.testing.assert_close(torch.from_numpy(dist_inputs), logits[i])
        states = episode.get_extra_model_outputs(Columns.STATE_OUT)
        torch.testing.assert_close(torch.from_numpy(states["h"]), out[i])
        log_probs = torch.log_softmax(torch.from_numpy(dist_inputs), -1)
        expected = log_probs.gather(-1, torch.from_numpy(actions[i])[:, None]).squeeze(-1)
        torch.testing.assert_close(
            torch.from_numpy(episode.get_extra_model_outputs(Columns.ACTION_LOGP)), expected)


def test_the_same_seed_samples_the_same_episodes(algo) -> None:
    _, first, _ = sample(algo, 2)
    _, again, _ = sample(algo, 2)
    _, other, _ = sample(algo, 3)
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
