"""PPO's env runners: RLlib's public EnvRunner base, sampling whole episodes in one batch.

RLlib's own SingleAgentEnvRunner runs, on every step of its vector env, its env-to-module and
module-to-env connector pipelines, each of which walks every env's item in Python (tree maps,
batching and unbatching, a time rank added and removed), adds each env's step to its episode
one call at a time, and converts the env's dict of info arrays to one dict per env. Profiled
with cProfile on the quick config's links (16 envs), the connectors took 60% of the sampling
time, the module's forward 18% (of which the LSTM itself 7%), episode bookkeeping and metrics
6%, and the native vector env's own step 8%.

So ccgym brings its own sampling the way RLlib documents it: a subclass of its public
`EnvRunner` base (ray.rllib.env.env_runner), which the algorithm builds (`env_runner_cls`) and
drives through that base's methods only: `make_env` and `make_module` build the env and the
inference-only module (from the algorithm config's public `get_rl_module_spec`),
`get_spaces` tells the algorithm the module's spaces, `get_state`/`set_state` carry the
module's weights (RLlib's weight sync) and `sample` returns episodes. Nothing of RLlib's
private members is read, set or overridden (tests/train/test_ppo_public_rllib.py checks it).

`sample(num_episodes=..., explore=..., seed=...)` samples whole episodes in rounds, each round
one episode in every slot stepped together: per step, one forward of the module on every
row's observation at once (the module's own `act`), the action drawn from the
module's exploration distribution (as RLlib's GetActions connector draws it), one step of the
env, and the step's arrays appended to a Rollout. The episodes are built once at the end, as
numpy'd SingleAgentEpisodes holding what RLlib's runner stores (observations, actions,
rewards, action_logp, action_dist_inputs, state_out, weights_seq_no), so RLlib's learner
connectors (chunking, bootstrapping, GAE) and PPO's loss read them as they read its own.
Infos are not kept (PPO does not read them); no callbacks are made (ccgym registers none);
fixed-length sampling and random actions, which ccgym's PPO never asks for, are refused.

A Rollout has one row per learned flow; here (BatchedEnvRunner) a row is a slot of the
registered vector env ccgym/Link-v0, and every row's episode starts at the first step. The
multi-agent runner (train/ppo_multi_runner.py) shares the base (WholeEpisodeRunner), the
batched forward (BatchActor) and the Rollout: its rows are the learned flows of all its
simulations, each row's episode from its flow's start to its stop.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import gymnasium as gym
import numpy as np
import ray
import torch
from ray.rllib.core import COMPONENT_RL_MODULE, DEFAULT_MODULE_ID
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.distribution import Distribution
from ray.rllib.core.distribution.torch.torch_distribution import TorchCategorical
from ray.rllib.env import INPUT_ENV_SINGLE_SPACES, INPUT_ENV_SPACES
from ray.rllib.env.env_runner import EnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.utils.metrics import (EPISODE_LEN_MEAN, EPISODE_RETURN_MAX, EPISODE_RETURN_MEAN,
                                     EPISODE_RETURN_MIN, NUM_ENV_STEPS_SAMPLED,
                                     NUM_ENV_STEPS_SAMPLED_LIFETIME, NUM_EPISODES,
                                     NUM_EPISODES_LIFETIME, WEIGHTS_SEQ_NO)

from ccgym.train.ppo_module import LstmActorCritic


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

    def __init__(self, module: LstmActorCritic, explore: bool, rows: int) -> None:
        # The runner's inference-only copy is never trained: eval mode once, for every step.
        module.eval()
        self.forward = module.act
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


def wants_component(name: str, components: str | Collection[str] | None,
                    not_components: str | Collection[str] | None) -> bool:
    """Whether a get_state call with these (RLlib's Checkpointable arguments: names or
    "name/sub" paths) asks for the component."""
    def names(value: str | Collection[str] | None) -> set[str]:
        listed = [value] if isinstance(value, str) else list(value or [])
        return {c.split("/")[0] for c in listed}
    return (components is None or name in names(components)) and name not in names(
        not_components)


class WholeEpisodeRunner(EnvRunner):
    """An EnvRunner that samples whole episodes in rounds (the module docstring): the state,
    spaces, metrics and sampling loop its two kinds share. A subclass builds its env
    (make_env), its module (make_module), and runs one round (sample_round)."""

    env: Any  # what make_env builds (the base declares it None until then)

    def __init__(self, *, config: Any, **kwargs: Any) -> None:
        super().__init__(config=config, **kwargs)
        # The spaces the algorithm hands a runner that builds no env (the driver's, beside
        # remote runners), from one that does.
        self.spaces: dict[str, Any] = kwargs.get("spaces") or {}
        self.num_envs: int = self.config.num_envs_per_env_runner
        self.weights_seq_no = 0  # the learner's update the module's weights are from
        # Environment steps of the last sample (of every simulation, not of each of its
        # learned flows), what ccgym counts as the iteration's steps.
        self.env_steps_sampled = 0
        self.module: Any = None
        # The env's arguments: the run's env config until the curriculum gives new links.
        self.env_arguments: dict[str, Any] = dict(self.config.env_config)
        # As RLlib's runners: the driver's runner builds no env when remote runners sample.
        if self.worker_index is None or self.worker_index > 0 or self.config.num_env_runners \
                == 0 or self.config.create_env_on_local_worker:
            self.make_env()
        self.make_module()

    def assert_healthy(self) -> None:
        assert self.env is not None and self.module is not None, "the env runner is not built"

    def use_env_arguments(self, arguments: dict[str, Any]) -> None:
        """Builds its env anew on these arguments (the curriculum's links), where it has one;
        the next sample's seeded reset starts its episodes."""
        self.env_arguments = arguments
        if self.env is not None:
            self.make_env()

    def sample(  # type: ignore[override]  # the base takes any keywords; RLlib's runners name these
            self, *, num_timesteps: int | None = None, num_episodes: int | None = None,
            explore: bool = True, random_actions: bool = False, force_reset: bool = False,
            seed: int | None = None) -> list[SingleAgentEpisode]:
        """At least num_episodes whole episodes: rounds of one episode in every slot, the first
        round's reset seeded with seed (None: each slot's generator goes on)."""
        if num_episodes is None or num_timesteps is not None or random_actions:
            raise NotImplementedError(
                f"{type(self).__name__} samples whole episodes with the module's actions "
                "(num_episodes), not a number of timesteps or random actions")
        episodes: list[SingleAgentEpisode] = []
        self.env_steps_sampled = 0
        for _ in range(-(-num_episodes // self.num_envs)):
            round_episodes, steps = self.sample_round(explore, seed)
            episodes += round_episodes
            self.env_steps_sampled += steps
            seed = None  # the first round's reset seeds the envs; later ones go on
        self.num_env_steps_sampled_lifetime += self.env_steps_sampled
        self.log_sample(episodes)
        return episodes

    def sample_round(self, explore: bool, seed: int | None) -> tuple[
            list[SingleAgentEpisode], int]:
        """One episode in every slot; (its episodes, its environment steps)."""
        raise NotImplementedError

    def episode_returns(self, episodes: list[SingleAgentEpisode]) -> list[tuple[int, float]]:
        """(length, return) of each episode of the env, for the metrics."""
        return [(len(e), e.get_return()) for e in episodes]

    def log_sample(self, episodes: list[SingleAgentEpisode]) -> None:
        """RLlib's sampling counts and episode figures (its metric names), on the runner's
        public MetricsLogger."""
        log = self.metrics.log_value
        finished = self.episode_returns(episodes)
        log(NUM_ENV_STEPS_SAMPLED, self.env_steps_sampled, reduce="sum")
        log(NUM_ENV_STEPS_SAMPLED_LIFETIME, self.env_steps_sampled, reduce="lifetime_sum")
        log(NUM_EPISODES, len(finished), reduce="sum")
        log(NUM_EPISODES_LIFETIME, len(finished), reduce="lifetime_sum")
        # The window RLlib's runners use: the smoothing window shared among the runners.
        window = max(1, -(-self.config.metrics_num_episodes_for_smoothing
                          // max(self.config.num_env_runners, 1)))
        for length, value in finished:
            log(EPISODE_LEN_MEAN, length, window=window)
            log(EPISODE_RETURN_MEAN, value, window=window)
            log(EPISODE_RETURN_MIN, value, reduce="min", window=window)
            log(EPISODE_RETURN_MAX, value, reduce="max", window=window)

    def get_metrics(self) -> Any:
        return self.metrics.reduce()

    def get_state(self, components: str | Collection[str] | None = None, *,
                  not_components: str | Collection[str] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
        """The module's weights (with their update's number) and the lifetime step count, as
        RLlib's weight sync and checkpoints ask for them."""
        state: dict[str, Any] = {
            NUM_ENV_STEPS_SAMPLED_LIFETIME: self.num_env_steps_sampled_lifetime}
        if wants_component(COMPONENT_RL_MODULE, components, not_components):
            state[COMPONENT_RL_MODULE] = self.module.get_state(**kwargs)
            state[WEIGHTS_SEQ_NO] = self.weights_seq_no
        return state

    def set_state(self, state: dict[str, Any]) -> None:
        """New weights unless the module's are as recent (a sequence number of 0 forces
        them), as RLlib's runners take them."""
        if COMPONENT_RL_MODULE in state:
            seq_no = int(state.get(WEIGHTS_SEQ_NO, 0))
            if seq_no == 0 or self.weights_seq_no < seq_no:
                weights = state[COMPONENT_RL_MODULE]
                if isinstance(weights, ray.ObjectRef):
                    weights = ray.get(weights)
                self.module.set_state(self.module_weights(weights))
            if seq_no > 0:
                self.weights_seq_no = seq_no
        if NUM_ENV_STEPS_SAMPLED_LIFETIME in state:
            self.num_env_steps_sampled_lifetime = state[NUM_ENV_STEPS_SAMPLED_LIFETIME]

    def module_weights(self, weights: dict[str, Any]) -> dict[str, Any]:
        """The part of a synced module state that is this runner's module's."""
        return weights

    def stop(self) -> None:
        if self.env is not None:
            self.env.close()


class BatchedEnvRunner(WholeEpisodeRunner):
    """The single-flow runner: the registered vector env, every slot a row (the module
    docstring)."""

    def make_env(self) -> None:
        """The algorithm's env (ccgym/Link-v0) as gymnasium's vector env of num_envs slots,
        with the env's arguments."""
        if self.env is not None:
            self.env.close()
        self.env = gym.make_vec(cast(str, self.config.env), num_envs=self.num_envs,
                                vectorization_mode=self.config.gym_env_vectorize_mode,
                                **self.env_arguments)

    def make_module(self) -> None:
        """The algorithm's module in its inference-only form, for the env's spaces."""
        self.module = self.config.get_rl_module_spec(
            spaces=self.get_spaces(), inference_only=True).build()

    def get_spaces(self) -> dict[str, Any]:
        if self.env is None:
            return self.spaces
        env = cast(gym.vector.VectorEnv, self.env)
        return {INPUT_ENV_SPACES: (env.observation_space, env.action_space),
                INPUT_ENV_SINGLE_SPACES: (env.single_observation_space, env.single_action_space),
                DEFAULT_MODULE_ID: (env.single_observation_space, env.single_action_space)}

    def module_weights(self, weights: dict[str, Any]) -> dict[str, Any]:
        # The learner's state is its multi-module's: the one module's weights are under its id.
        return weights.get(DEFAULT_MODULE_ID, weights)

    @torch.inference_mode()
    def sample_round(self, explore: bool, seed: int | None) -> tuple[
            list[SingleAgentEpisode], int]:
        """One episode in every slot of the vector env, all stepped together."""
        env, module = cast(gym.vector.VectorEnv, self.env), self.module
        assert isinstance(module, LstmActorCritic)  # the PPO config's module
        obs, _ = env.reset(seed=seed)
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
        spaces = (env.single_observation_space, env.single_action_space)
        episodes = rollout.episodes(spaces, self.weights_seq_no)
        return episodes, sum(len(e) for e in episodes)
