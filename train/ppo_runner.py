"""PPO's env runner: RLlib's single-agent env runner with one batched step for all its envs.

RLlib's SingleAgentEnvRunner runs, on every step of its vector env, its env-to-module and
module-to-env connector pipelines, each of which walks every env's item in Python (tree maps,
batching and unbatching, a time rank added and removed), adds each env's step to its episode
one call at a time, and converts the env's dict of info arrays to one dict per env. Profiled
with cProfile on the quick config's links (16 envs), the connectors took 60% of the sampling
time, the module's forward 18% (of which the LSTM itself 7%), episode bookkeeping and metrics
6%, and the native vector env's own step 8%.

BatchedEnvRunner keeps all of RLlib's runner (the env built through gymnasium.make_vec, the
inference-only module and its weight sync, metrics, checkpoints) and replaces only how whole
episodes are sampled (`sample(num_episodes=...)`, what ccgym's PPO asks for): per step, one
forward of the module on every row's observation at once, the action sampled from RLlib's own
exploration distribution (as its GetActions connector does), one step of the vector env, and
the step's arrays appended to a Rollout. The episodes are built once at the end, as numpy'd
SingleAgentEpisodes holding what RLlib's runner stores (observations, actions, rewards,
action_logp, action_dist_inputs, state_out, weights_seq_no), so RLlib's learner connectors
(chunking, bootstrapping, GAE) and PPO's loss read them as they read its own. Infos are not
kept (PPO does not read them). The per-episode callbacks are not made: ccgym registers none.

A Rollout has one row per learned flow; here a row is a slot of the vector env. A multi-agent
runner maps each (slot, agent) to a row and builds multi-agent episodes from the rows.

Fixed-length sampling (`num_timesteps`) and random actions fall back to RLlib's loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium.wrappers.vector import DictInfoToList
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.distribution import Distribution
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import WEIGHTS_SEQ_NO


@dataclass
class Rollout:
    """Steps of a batch of rows, appended one step (arrays over rows) at a time."""

    obs: list[np.ndarray] = field(default_factory=list)  # T + 1 of (R, obs_dim)
    actions: list[np.ndarray] = field(default_factory=list)  # T of (R,)
    rewards: list[np.ndarray] = field(default_factory=list)
    logp: list[np.ndarray] = field(default_factory=list)
    dist_inputs: list[np.ndarray] = field(default_factory=list)  # T of (R, num_actions)
    state_out: list[dict[str, np.ndarray]] = field(default_factory=list)  # T of {k: (R, H)}
    ends: list[np.ndarray] = field(default_factory=list)  # T of (R,) bool: the episode ended
    terminated: list[np.ndarray] = field(default_factory=list)

    def lengths(self) -> np.ndarray:
        """Each row's episode length: its steps up to and including the first that ended it."""
        ends = np.stack(self.ends)  # (T, R)
        if not ends.any(axis=0).all():
            raise RuntimeError("a row's episode has not ended")
        return ends.argmax(axis=0) + 1

    def episodes(self, spaces: tuple[gym.Space, gym.Space],
                 weights_seq_no: int) -> list[SingleAgentEpisode]:
        """One numpy'd episode per row, each cut at its end."""
        obs, actions, rewards = np.stack(self.obs, 1), np.stack(self.actions, 1), \
            np.stack(self.rewards, 1)
        logp, dist_inputs = np.stack(self.logp, 1), np.stack(self.dist_inputs, 1)
        states = {k: np.stack([s[k] for s in self.state_out], 1) for k in self.state_out[0]}
        terminated = np.stack(self.terminated, 1)
        episodes = []
        for row, n in enumerate(self.lengths().tolist()):
            o, a, r = obs[row, :n + 1], actions[row, :n], rewards[row, :n]
            extra = {Columns.ACTION_LOGP: logp[row, :n],
                     Columns.ACTION_DIST_INPUTS: dist_inputs[row, :n],
                     Columns.STATE_OUT: {k: v[row, :n] for k, v in states.items()},
                     WEIGHTS_SEQ_NO: np.full(n, weights_seq_no)}
            episodes.append(SingleAgentEpisode(
                observations=o, actions=a, rewards=r,  # type: ignore[arg-type]  # RLlib's hints lack arrays
                infos=[{} for _ in range(n + 1)],
                extra_model_outputs=extra,
                terminated=bool(terminated[row, n - 1]),
                truncated=not terminated[row, n - 1], len_lookback_buffer=0,
                observation_space=spaces[0], action_space=spaces[1]))
        return episodes


def sample_actions(dist_class: type[Distribution], logits: torch.Tensor,
                   explore: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Actions (R,) from the module's action distribution over the logits (R, A), and their
    log-probabilities, as RLlib's GetActions connector draws them (the greedy action when not
    exploring)."""
    if dist_class is TorchCategorical:
        # Gumbel-max: the argmax of the log-probabilities minus the log of standard
        # exponentials is a draw of the categorical, in a fourth of the time that torch's
        # Categorical takes to build, check and sample itself on a few rows.
        log_probs = torch.log_softmax(logits, dim=-1)
        noisy = log_probs - torch.empty_like(log_probs).exponential_().log() if explore \
            else log_probs
        actions = noisy.argmax(dim=-1)
        return actions, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    dist = dist_class.from_logits(logits)
    if not explore:
        dist = dist.to_deterministic()
    # cast: RLlib's hints cover every framework (and sample's (sample, logp) form); a torch
    # module's distribution gives tensors.
    actions = cast(torch.Tensor, dist.sample())
    return actions, cast(torch.Tensor, dist.logp(actions))


class BatchedEnvRunner(SingleAgentEnvRunner):
    """RLlib's SingleAgentEnvRunner, sampling whole episodes in one batch (module docstring)."""

    def _sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None,
                explore: bool, random_actions: bool = False,
                force_reset: bool = False) -> list[SingleAgentEpisode]:
        if num_episodes is None or random_actions:
            return super()._sample(num_timesteps=num_timesteps, num_episodes=num_episodes,
                                   explore=explore, random_actions=random_actions,
                                   force_reset=force_reset)
        episodes: list[SingleAgentEpisode] = []
        while len(episodes) < num_episodes:
            episodes += self._sample_round(explore)
            self._seed = None  # the first round's reset seeds the envs; later ones go on
        steps = sum(len(e) for e in episodes)
        self._increase_sampled_metrics(steps, len(episodes))
        for episode in episodes:
            self._log_episode_metrics(len(episode), episode.get_return(),
                                      episode.get_duration_s())
        # RLlib's loop resets its ongoing episodes on its next call.
        self._needs_initial_reset = True
        return episodes

    @torch.inference_mode()
    def _sample_round(self, explore: bool) -> list[SingleAgentEpisode]:
        """One episode in every slot of the vector env, all stepped together."""
        wrapper, module = self.env, self.module
        # RLlib's runner wraps the vector env so (make_env), and builds a torch module for it
        # unless the algorithm has none (random actions only, which _sample leaves to RLlib).
        assert isinstance(wrapper, DictInfoToList) and isinstance(module, TorchRLModule)
        env = wrapper.env  # under RLlib's wrapper, which splits the infos per env each step
        # forward_exploration would switch the module to eval and back on every call (a walk
        # over its submodules); this inference-only copy is never trained, so once is enough.
        module.eval()
        forward = module._forward_exploration if explore else module._forward_inference
        dist_class = (module.get_exploration_action_dist_cls() if explore
                      else module.get_inference_action_dist_cls())
        obs, _ = env.reset(seed=self._seed)
        obs = np.array(obs, dtype=np.float32)
        rows = len(obs)
        state = {k: torch.from_numpy(np.repeat(v[None], rows, axis=0))
                 for k, v in module.get_initial_state().items()}
        rollout, done = Rollout(obs=[obs]), np.zeros(rows, dtype=bool)
        while not done.all():
            out = forward({Columns.OBS: torch.from_numpy(obs).unsqueeze(1),
                           Columns.STATE_IN: state})
            logits = out[Columns.ACTION_DIST_INPUTS][:, 0]
            actions, logp = sample_actions(dist_class, logits, explore)
            state = out[Columns.STATE_OUT]
            action_array = actions.numpy()
            obs, rewards, terminated, truncated, _ = env.step(action_array)
            obs = np.array(obs, dtype=np.float32)  # kept: an env may reuse its buffer
            ended = terminated | truncated
            rollout.obs.append(obs)
            rollout.actions.append(action_array)
            rollout.rewards.append(np.asarray(rewards, dtype=np.float64))
            rollout.logp.append(logp.numpy())
            rollout.dist_inputs.append(logits.numpy())
            rollout.state_out.append({k: v.numpy() for k, v in state.items()})
            rollout.ends.append(ended)
            rollout.terminated.append(np.asarray(terminated, dtype=bool))
            done |= ended
        spaces = (wrapper.single_observation_space, wrapper.single_action_space)
        return rollout.episodes(spaces, self._weights_seq_no)
