"""PPO (Schulman et al., 2017) for the LSTM policy, on RLlib's new API stack.

RLlib does the reinforcement learning: its env runners (Ray actors, `workers` of them; with
workers = 0 one in this process) step the registered "ccgym/Link-v0" through its native vector
env and sample actions from the module (train/ppo_module.py: the project's LstmPolicy plus a
value head), one batched step for all envs (train/ppo_runner.py: ccgym's runner on RLlib's
public EnvRunner base, without RLlib's per-env connector work); its learner connectors cut the
episodes into max_seq_len chunks, bootstrap the truncated ends and compute GAE; its PPO
learner minibatches and steps Adam. ccgym uses RLlib's public API only (its documented
RLModule hooks included), on the Ray minor release pyproject.toml names. The reward is the
documented one of envs/engine.py, multiplied by [ppo] reward_scale (the shape is unchanged).

Ppo is a trainer on the loop every trainer shares (train/loop.py: validation, best-keeping,
patience, checkpoints, TensorBoard; PPO adds the tags losses/ (policy, value, entropy, KL) and
charts/episode_return). Each iteration:
  1. collect: every env runner runs one episode per slot, reseeded from (seed, iteration,
     runner), so a resumed run samples what an uninterrupted one would;
  2. learn: the learner updates the module on those episodes (num_epochs x minibatches), and
     the env runners get the new weights.

A warm start (`[model] init_from`) builds every copy of the module from a DAgger run's
policy.pt, so the first rollouts are that policy's, sampled.
"""

from __future__ import annotations

import contextlib
import functools
import math
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from ccgym.emulators import _core
from ccgym.emulators.links import Link
from ccgym.envs import LINK_ENV_ID
from ccgym.envs.config import EnvConfig
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import TrainConfig, env_config
from ccgym.train.pool import RolloutPool
from ccgym.train.teacher import init_policy
from ccgym.train.trainer import Figures, Progress, Rollouts, Trainer

# Seeds of an iteration's sampling (per env runner) and learning, derived from (seed,
# iteration, stream): nothing random is carried from one iteration to the next.
SAMPLE_STREAM = 1
LEARN_STREAM = 2
# RLlib's names for its learner's figures, and ours in TensorBoard.
LOSS_TAGS = {"policy_loss": "losses/policy", "vf_loss": "losses/value",
             "entropy": "losses/entropy", "mean_kl_loss": "losses/KL",
             "total_loss": "losses/total", "vf_explained_var": "losses/explained_variance",
             "curr_kl_coeff": "losses/KL_coeff"}


def stream_seed(*parts: int) -> int:
    """A 31-bit seed derived from the parts (numpy's SeedSequence: no two tuples collide)."""
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0] >> 1)


# ---------------------------------------------------------------- RLlib wiring

def runner_env_config(config: TrainConfig, env: EnvConfig) -> dict[str, Any]:
    """Keyword arguments of VecLinkEnv (through gymnasium.make_vec) inside each env runner:
    env (train/config.py's env_config, its links resolved) as it is."""
    return {
        "config": env,
        "threads": config.run.env_threads,
        # RLlib's env runners expect gymnasium's default: new episodes start on the next call.
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }


def init_policy_dict(config: TrainConfig) -> dict[str, Any] | None:
    """The warm start's policy ([model] init_from) as a file dict; None from scratch."""
    policy = init_policy(config)
    return policy.to_file_dict() if policy is not None else None


def module_config(config: TrainConfig) -> dict[str, Any]:
    """model_config of the RLlib module (train/ppo_module.py)."""
    return {"hidden_size": config.model.hidden_size, "head": config.model.head,
            "max_seq_len": config.ppo.max_seq_len,
            "temperature": config.ppo.log_change_temperature,
            "init_policy": init_policy_dict(config)}


def algorithm_config(config: TrainConfig, env: EnvConfig) -> Any:
    """RLlib's PPOConfig for this run."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ccgym.train.ppo_module import LstmActorCritic
    from ccgym.train.ppo_runner import BatchedEnvRunner

    ppo, run = config.ppo, config.run
    steps = round(run.episode_ms / _step_ms())
    runners = max(run.workers, 1)
    model = module_config(config)
    return (
        PPOConfig()
        # "module:id" makes gymnasium import ccgym.envs (which registers the id) in each runner.
        .environment(f"ccgym.envs:{LINK_ENV_ID}", env_config=runner_env_config(config, env))
        .env_runners(env_runner_cls=BatchedEnvRunner,
                     num_env_runners=run.workers, num_envs_per_env_runner=run.num_envs,
                     num_cpus_per_env_runner=1, gym_env_vectorize_mode="vector_entry_point",
                     rollout_fragment_length=steps)
        .learners(num_learners=0)
        .training(lr=config.optimizer.lr, grad_clip=config.optimizer.grad_clip or None,
                  gamma=ppo.gamma, lambda_=ppo.lambda_, clip_param=ppo.clip_param,
                  vf_loss_coeff=ppo.vf_loss_coeff, entropy_coeff=ppo.entropy_coeff,
                  kl_coeff=ppo.kl_coeff, kl_target=ppo.kl_target, use_kl_loss=ppo.kl_coeff > 0,
                  num_epochs=ppo.num_epochs, minibatch_size=ppo.minibatch_size,
                  train_batch_size_per_learner=runners * run.num_envs * steps,
                  # The squared error is clipped, which stops its gradient: returns are scaled
                  # instead (reward_scale), so no clip is needed.
                  vf_clip_param=math.inf)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=LstmActorCritic, model_config=model))
        .debugging(seed=run.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=runners * run.num_envs)
    )


def _step_ms() -> float:
    return float(_core.STEP_MS)


def sample_episodes(runner: Any, seed: int, iteration: int) -> tuple[list[Any], int, float]:
    """One episode per slot of one env runner (runs inside it); (episodes, environment steps,
    seconds)."""
    s = stream_seed(seed, iteration, SAMPLE_STREAM, runner.worker_index)
    # The seed resets the runner's envs; torch's generator draws the actions.
    torch.manual_seed(s)
    np.random.seed(s)
    random.seed(s)
    started = time.perf_counter()
    episodes = runner.sample(num_episodes=runner.num_envs, explore=True, seed=s)
    # The steps of the runner's simulations (the multi-agent one returns an episode per
    # learned flow).
    return episodes, runner.env_steps_sampled, time.perf_counter() - started


def _learner_call(algo: Any, function: Callable[[Any], Any]) -> Any:
    """function(learner) on the (one, local) learner; its errors raised here."""
    return next(iter(algo.learner_group.foreach_learner(function))).get()


def default_module_id() -> str:
    """RLlib's id of a single-agent run's module."""
    from ray.rllib.core.rl_module.rl_module import DEFAULT_MODULE_ID

    return DEFAULT_MODULE_ID


def _module(learner: Any, module_id: str | None = None) -> Any:
    return learner.module[module_id or default_module_id()]


def _actor_dict(learner: Any, module_id: str) -> dict[str, Any]:
    return _module(learner, module_id).policy.to_file_dict()


def _kl_coeff(learner: Any, module_id: str) -> float:
    return float(learner.curr_kl_coeffs_per_module[module_id].item())


def _set_kl_coeff(learner: Any, value: float, module_id: str) -> None:
    learner.curr_kl_coeffs_per_module[module_id].data.fill_(value)


def _learner_state(learner: Any) -> dict[str, Any]:
    from ray.rllib.core import COMPONENT_OPTIMIZER, COMPONENT_RL_MODULE

    return _tensors(learner.get_state(components=[COMPONENT_RL_MODULE, COMPONENT_OPTIMIZER]))


def _tensors(tree: Any) -> Any:
    """numpy arrays as tensors, so that torch.load(weights_only=True) reads the checkpoint."""
    if isinstance(tree, dict):
        return {k: _tensors(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_tensors(v) for v in tree)
    if isinstance(tree, np.ndarray):
        return torch.from_numpy(np.array(tree))
    if isinstance(tree, np.generic):
        return tree.item()
    return tree


def _sync_weights(algo: Any) -> None:
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group,
                                       inference_only=True, timeout_seconds=None)


# ---------------------------------------------------------------- the trainer

class Ppo(Trainer):
    """PPO on the loop (train/loop.py): RLlib's algorithm (env runners and learner) for the
    run, the learner's state carried between runs by the checkpoint."""

    name = "ppo"

    def __init__(self, config: TrainConfig) -> None:
        super().__init__(config)
        self._algo: Any = None  # RLlib's PPO Algorithm while the session is open
        self._learner: dict[str, Any] | None = None  # module weights and Adam's state
        self._kl_coeff: float | None = None  # the adaptive KL coefficient (not in RLlib's)
        self._policy: LstmPolicy | None = None  # the actor after the last iteration
        self._lifetime_steps = 0  # env steps of every finished iteration

    @classmethod
    def check_config(cls, config: TrainConfig) -> None:
        init_policy(config)  # a missing or mismatched init_from fails before the run folder

    @property
    def policy(self) -> LstmPolicy:
        assert self._policy is not None, "no iteration has learned yet"
        return self._policy

    @contextlib.contextmanager
    def session(self, train_links: Sequence[Link]) -> Iterator[None]:
        run = self.config.run
        # RLlib needs Ray even when the env runner is this process: one CPU for the driver.
        with RolloutPool(max(run.workers, 1), run.ray_address):
            self._algo = self.algorithm_config(env_config(self.config, train_links)).build_algo()
            try:
                self._restore()
                yield
            finally:
                self._algo.stop()
                self._algo = None

    def use_train_links(self, train_links: Sequence[Link]) -> None:
        """Every env runner builds its env anew on these links, from the next collect."""
        arguments = self.algorithm_config(env_config(self.config, train_links)).env_config
        self._algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.use_env_arguments(arguments))

    def algorithm_config(self, env: EnvConfig) -> Any:
        """RLlib's config of the run's algorithm (a multi-agent variant builds its own)."""
        return algorithm_config(self.config, env)

    @property
    def module_id(self) -> str:
        """The id of the module RLlib trains (a multi-agent variant names its own)."""
        return default_module_id()

    def _restore(self) -> None:
        """A resumed run's learner state on the learner, and its weights on the env runners."""
        if self._learner is None:
            return
        learner_state = self._learner
        _learner_call(self._algo, lambda learner: learner.set_state(learner_state))
        if self._kl_coeff is not None:
            kl = self._kl_coeff
            module_id = self.module_id
            _learner_call(self._algo, lambda learner: _set_kl_coeff(learner, kl, module_id))
        _sync_weights(self._algo)

    def stages(self, iteration: int) -> int:
        return 2

    def collect(self, iteration: int, progress: Progress) -> Rollouts:
        """One episode per slot of every env runner."""
        progress.stage("rollouts")
        results = self._algo.env_runner_group.foreach_env_runner(
            functools.partial(sample_episodes, seed=self.config.run.seed, iteration=iteration),
            local_env_runner=self.config.run.workers == 0)
        progress.advance()
        return Rollouts([e for r in results for e in r[0]], sum(r[1] for r in results))

    def learn(self, iteration: int, rollouts: Rollouts, progress: Progress) -> Figures:
        """RLlib's learner on the episodes (GAE, minibatches, epochs); the env runners'
        weights."""
        progress.stage("learning")
        losses = self._update(iteration, rollouts)
        _sync_weights(self._algo)
        progress.advance()
        module_id = self.module_id
        self._policy = LstmPolicy.from_file_dict(
            _learner_call(self._algo, lambda learner: _actor_dict(learner, module_id)))
        self._learner = _learner_call(self._algo, _learner_state)
        self._kl_coeff = _learner_call(self._algo, lambda learner: _kl_coeff(learner, module_id))
        # The mean return of the iteration's episodes, one per learned flow.
        episode_return = float(np.mean([e.get_return() for e in rollouts.data]))
        return Figures(
            text=(f"return {episode_return:.3f}  "
                  f"policy {losses.get('losses/policy', math.nan):.4f}  "
                  f"value {losses.get('losses/value', math.nan):.4f}  "
                  f"entropy {losses.get('losses/entropy', math.nan):.3f}  "
                  f"KL {losses.get('losses/KL', math.nan):.4f}"),
            scalars={**losses, "charts/episode_return": episode_return},
            history={"episode_return": episode_return,
                     **{tag.split("/")[1]: value for tag, value in losses.items()}})

    def _update(self, iteration: int, rollouts: Rollouts) -> dict[str, float]:
        """One learner update, seeded from (seed, iteration); TensorBoard tag -> loss."""
        from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
        from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

        config = self.config
        s = stream_seed(config.run.seed, iteration, LEARN_STREAM)
        torch.manual_seed(s)
        np.random.seed(s)
        random.seed(s)
        # The lifetime count RLlib's schedules read: every earlier iteration's steps and these.
        results = self._algo.learner_group.update(
            episodes=rollouts.data,
            timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: self._lifetime_steps + rollouts.env_steps},
            num_epochs=config.ppo.num_epochs, minibatch_size=config.ppo.minibatch_size,
            shuffle_batch_per_epoch=True)
        self._lifetime_steps += rollouts.env_steps
        logger = MetricsLogger(root=True)
        logger.aggregate(results)
        module_figures = logger.reduce().get(self.module_id, {})  # mean over minibatches
        return {tag: float(module_figures[key]) for key, tag in LOSS_TAGS.items()
                if key in module_figures}

    def state_dict(self) -> dict[str, Any]:
        return {"learner": self._learner, "kl_coeff": self._kl_coeff,
                "env_steps": self._lifetime_steps}

    def load_state_dict(self, data: dict[str, Any], where: str) -> None:
        self._learner, self._kl_coeff = data["learner"], data["kl_coeff"]
        self._lifetime_steps = int(data["env_steps"])
