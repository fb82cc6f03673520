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

A Rollout has one row per learned flow; here a row is a slot of the vector env, and every row's
episode starts at the first step. The multi-agent runner (train/ppo_multi_runner.py) shares
the round (WholeEpisodes), the batched forward (BatchActor) and the Rollout: its rows are the
learned flows of all its simulations, each row's episode from its flow's start to its stop.

Fixed-length sampling (`num_timesteps`) and random actions fall back to RLlib's loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

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
    # (R,) the index of each row's first observation (T: the row never acts); None: all 0
    starts: np.ndarray | None = None

    def add(self, step: ActorStep, obs: np.ndarray, rewards: np.ndarray, ends: np.ndarray,
            terminated: np.ndarray) -> None:
        """One step: the actor's choice and what the env returned for it."""
        self.obs.append(obs)
        self.actions.append(step.actions)
        self.rewards.append(np.asarray(rewards, dtype=np.float64))
        self.logp.append(step.logp)
        self.dist_inputs.append(step.logits)
        self.state_out.append(step.state)
        self.ends.append(ends)
        self.terminated.append(np.asarray(terminated, dtype=bool))

    def spans(self) -> tuple[np.ndarray, np.ndarray]:
        """Each row's start and episode length: its steps from its start up to and including
        the first that ended it (0 for a row that never acts)."""
        ends = np.stack(self.ends)  # (T, R)
        starts = np.zeros(ends.shape[1], dtype=np.int64) if self.starts is None else self.starts
        ended = ends.any(axis=0)
        if (~ended & (starts < len(ends))).any():
            raise RuntimeError("a row's episode has not ended")
        return starts, np.where(ended, ends.argmax(axis=0) + 1 - starts, 0)

    def episodes(self, spaces: tuple[gym.Space, gym.Space], weights_seq_no: int,
                 tags: Sequence[dict[str, Any]] | None = None) -> list[SingleAgentEpisode]:
        """One numpy'd episode per row that acted, each cut at its start and end; tags: each
        row's further SingleAgentEpisode arguments (its agent and module, multi-agent)."""
        obs, actions, rewards = np.stack(self.obs, 1), np.stack(self.actions, 1), \
            np.stack(self.rewards, 1)
        logp, dist_inputs = np.stack(self.logp, 1), np.stack(self.dist_inputs, 1)
        states = {k: np.stack([s[k] for s in self.state_out], 1) for k in self.state_out[0]}
        terminated = np.stack(self.terminated, 1)
        episodes = []
        for row, (s, n) in enumerate(zip(*(a.tolist() for a in self.spans()))):
            if n == 0:
                continue
            steps = slice(s, s + n)
            extra = {Columns.ACTION_LOGP: logp[row, steps],
                     Columns.ACTION_DIST_INPUTS: dist_inputs[row, steps],
                     Columns.STATE_OUT: {k: v[row, steps] for k, v in states.items()},
                     WEIGHTS_SEQ_NO: np.full(n, weights_seq_no)}
            end = bool(terminated[row, s + n - 1])
            episodes.append(SingleAgentEpisode(
                observations=obs[row, s:s + n + 1],  # type: ignore[arg-type]  # RLlib's hints lack arrays
                actions=actions[row, steps], rewards=rewards[row, steps],  # type: ignore[arg-type]
                infos=[{} for _ in range(n + 1)], extra_model_outputs=extra,
                terminated=end, truncated=not end, len_lookback_buffer=0,
                observation_space=spaces[0], action_space=spaces[1],
                **(tags[row] if tags is not None else {})))
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


@dataclass
class ActorStep:
    """A BatchActor's step: per row its action, the action's log-probability, the logits and
    the recurrent state after the step."""

    actions: np.ndarray
    logp: np.ndarray
    logits: np.ndarray
    state: dict[str, np.ndarray]


class BatchActor:
    """An env runner's torch module acting for a batch of rows, each with its own recurrent
    state: one forward for all of them per step."""

    def __init__(self, module: TorchRLModule, explore: bool, rows: int) -> None:
        # forward_exploration would switch the module to eval and back on every call (a walk
        # over its submodules); the runner's inference-only copy is never trained, so once is
        # enough.
        module.eval()
        self.forward = module._forward_exploration if explore else module._forward_inference
        self.dist_class = (module.get_exploration_action_dist_cls() if explore
                           else module.get_inference_action_dist_cls())
        self.explore = explore
        self.initial = {k: torch.from_numpy(np.repeat(v[None], rows, axis=0))
                        for k, v in module.get_initial_state().items()}
        self.state = self.initial

    def act(self, obs: np.ndarray) -> ActorStep:
        """Every row's action on its observation (R, obs_dim) float32."""
        out = self.forward({Columns.OBS: torch.from_numpy(obs).unsqueeze(1),
                            Columns.STATE_IN: self.state})
        logits = out[Columns.ACTION_DIST_INPUTS][:, 0]
        actions, logp = sample_actions(self.dist_class, logits, self.explore)
        self.state = out[Columns.STATE_OUT]
        return ActorStep(actions.numpy(), logp.numpy(), logits.numpy(),
                         {k: v.numpy() for k, v in self.state.items()})

    def restart(self, rows: np.ndarray) -> None:
        """The initial state for the rows (bool (R,)) whose next step starts an episode."""
        if not rows.any():
            return
        mask = torch.from_numpy(rows)
        self.state = {k: torch.where(mask.view(-1, *[1] * (v.dim() - 1)), self.initial[k], v)
                      for k, v in self.state.items()}


class WholeEpisodes:
    """The _sample of a batched env runner: whole episodes in rounds, each round one episode
    in every slot (simulation) stepped together; the runner's _sample_round runs a round and
    _log_sampled logs RLlib's metrics of a sample."""

    num_envs: int
    _seed: int | None
    _needs_initial_reset: bool
    # Environment steps of the last whole-episode sample (of every simulation, not of each of
    # its learned flows), what ccgym counts as the iteration's steps.
    env_steps_sampled: int = 0

    def _sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None,
                explore: bool, random_actions: bool = False,
                force_reset: bool = False) -> list[Any]:
        if num_episodes is None or random_actions:
            return super()._sample(  # type: ignore[misc]  # the runner's RLlib class's
                num_timesteps=num_timesteps, num_episodes=num_episodes, explore=explore,
                random_actions=random_actions, force_reset=force_reset)
        episodes: list[SingleAgentEpisode] = []
        self.env_steps_sampled = 0
        for _ in range(-(-num_episodes // self.num_envs)):
            round_episodes, steps = self._sample_round(explore)
            episodes += round_episodes
            self.env_steps_sampled += steps
            self._seed = None  # the first round's reset seeds the envs; later ones go on
        self._log_sampled(episodes, self.env_steps_sampled)
        # RLlib's loop resets its ongoing episodes on its next call.
        self._needs_initial_reset = True
        return episodes

    def _sample_round(self, explore: bool) -> tuple[list[SingleAgentEpisode], int]:
        """One episode in every slot; (its episodes, its environment steps)."""
        raise NotImplementedError

    def _log_sampled(self, episodes: list[SingleAgentEpisode], env_steps: int) -> None:
        raise NotImplementedError


class BatchedEnvRunner(WholeEpisodes, SingleAgentEnvRunner):
    """RLlib's SingleAgentEnvRunner, sampling whole episodes in one batch (module docstring)."""

    def _log_sampled(self, episodes: list[SingleAgentEpisode], env_steps: int) -> None:
        self._increase_sampled_metrics(env_steps, len(episodes))
        for episode in episodes:
            self._log_episode_metrics(len(episode), episode.get_return(),
                                      episode.get_duration_s())

    @torch.inference_mode()
    def _sample_round(self, explore: bool) -> tuple[list[SingleAgentEpisode], int]:
        """One episode in every slot of the vector env, all stepped together."""
        wrapper, module = self.env, self.module
        # RLlib's runner wraps the vector env so (make_env), and builds a torch module for it
        # unless the algorithm has none (random actions only, which _sample leaves to RLlib).
        assert isinstance(wrapper, DictInfoToList) and isinstance(module, TorchRLModule)
        env = wrapper.env  # under RLlib's wrapper, which splits the infos per env each step
        obs, _ = env.reset(seed=self._seed)
        obs = np.array(obs, dtype=np.float32)
        actor = BatchActor(module, explore, len(obs))
        rollout, done = Rollout(obs=[obs]), np.zeros(len(obs), dtype=bool)
        while not done.all():
            step = actor.act(obs)
            obs, rewards, terminated, truncated, _ = env.step(step.actions)
            obs = np.array(obs, dtype=np.float32)  # kept: an env may reuse its buffer
            ended = terminated | truncated
            rollout.add(step, obs, rewards, ended, terminated)
            done |= ended
        spaces = (wrapper.single_observation_space, wrapper.single_action_space)
        episodes = rollout.episodes(spaces, self._weights_seq_no)
        return episodes, sum(len(e) for e in episodes)
