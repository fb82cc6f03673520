"""PPO (Schulman et al., 2017) for the LSTM policy, on RLlib's new API stack.

RLlib does the reinforcement learning: its env runners (Ray actors, `workers` of them; with
workers = 0 one in this process) step the registered "ccgym/Link-v0" through its native vector
env and sample actions from the module (train/ppo_module.py: the project's LstmPolicy plus a
value head); its learner connectors cut the episodes into max_seq_len chunks, bootstrap the
truncated ends and compute GAE; its PPO learner minibatches and steps Adam. The reward is the
documented one of envs/link_env.py, multiplied by [ppo] reward_scale (the shape is unchanged).

This module runs the iterations the way DAgger's run: the same run folder (train/run_folder.py),
validation on held-out links with the reference lines (train/validation.py), best-keeping and
patience (train/early_stopping.py), an atomic checkpoint after every iteration and TensorBoard
tags losses/ (policy, value, entropy, KL), eval/ and charts/SPS. Each iteration:
  1. every env runner runs one episode per slot, reseeded from (seed, iteration, runner), so a
     resumed run samples what an uninterrupted one would;
  2. the learner updates the module on those episodes (num_epochs x minibatches);
  3. the env runners get the new weights; the actor is validated; the best is kept as policy.pt.

A warm start (`init_from`) builds every copy of the module from a DAgger run's policy.pt, so the
first rollouts are that policy's, sampled.
"""

from __future__ import annotations

import functools
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from tqdm import tqdm

from ccgym.emulators import _core
from ccgym.envs import LINK_ENV_ID
from ccgym.errors import UserError
from ccgym.interrupts import sigterm_as_interrupt
from ccgym.policies.lstm import LstmPolicy, atomic_torch_save
from ccgym.policies.policy_path import resolve_policy_path
from ccgym.train.config import TrainConfig
from ccgym.train.early_stopping import EarlyStopping
from ccgym.train.pool import RolloutPool
from ccgym.train.run_folder import RunFolder
from ccgym.train.session import open_session, start_state
from ccgym.train.validation import summarize_rows, validate_policy

CHECKPOINT_FORMAT = "ccgym-ppo-checkpoint"
CHECKPOINT_VERSION = 1
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

def env_config(config: TrainConfig, train_specs: list[str]) -> dict[str, Any]:
    """Keyword arguments of VecLinkEnv (through gymnasium.make_vec) inside each env runner."""
    ppo = config.ppo
    return {
        "config": {"links": list(train_specs), "episode_ms": ppo.episode_ms,
                   "throughput_weight": ppo.reward_scale, "delay_weight": ppo.reward_scale},
        "threads": config.run.env_threads,
        # RLlib's env runners expect gymnasium's default: new episodes start on the next call.
        "autoreset_mode": AutoresetMode.NEXT_STEP,
    }


def init_policy(config: TrainConfig) -> dict[str, Any] | None:
    """The warm start's policy (init_from) as a file dict; None from scratch."""
    if not config.ppo.init_from:
        return None
    path = resolve_policy_path(config.ppo.init_from, "[ppo] init_from: ")
    try:
        policy = LstmPolicy.load(path)
    except (ValueError, RuntimeError, OSError) as e:
        raise UserError(f"[ppo] init_from: {path}: {e}") from None
    if policy.hidden_size != config.model.hidden_size:
        raise UserError(f"[ppo] init_from: {path} has hidden_size {policy.hidden_size}, the "
                        f"config's [model] hidden_size is {config.model.hidden_size}")
    if policy.head_kind != config.model.head:
        raise UserError(f"[ppo] init_from: {path} has the {policy.head_kind} head, the "
                        f"config's [model] head is {config.model.head}")
    return policy.to_file_dict()


def algorithm_config(config: TrainConfig, train_specs: list[str]) -> Any:
    """RLlib's PPOConfig for this run."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from ccgym.train.ppo_module import LstmActorCritic

    ppo, run = config.ppo, config.run
    steps = round(ppo.episode_ms / _step_ms())
    runners = max(run.workers, 1)
    model = {"hidden_size": config.model.hidden_size, "head": config.model.head,
             "max_seq_len": ppo.max_seq_len, "temperature": ppo.log_change_temperature,
             "init_policy": init_policy(config)}
    return (
        PPOConfig()
        # "module:id" makes gymnasium import ccgym.envs (which registers the id) in each runner.
        .environment(f"ccgym.envs:{LINK_ENV_ID}", env_config=env_config(config, train_specs))
        .env_runners(num_env_runners=run.workers, num_envs_per_env_runner=ppo.num_envs,
                     num_cpus_per_env_runner=1, gym_env_vectorize_mode="vector_entry_point",
                     rollout_fragment_length=steps)
        .learners(num_learners=0)
        .training(lr=config.optimizer.lr, grad_clip=config.optimizer.grad_clip or None,
                  gamma=ppo.gamma, lambda_=ppo.lambda_, clip_param=ppo.clip_param,
                  vf_loss_coeff=ppo.vf_loss_coeff, entropy_coeff=ppo.entropy_coeff,
                  kl_coeff=ppo.kl_coeff, kl_target=ppo.kl_target, use_kl_loss=ppo.kl_coeff > 0,
                  num_epochs=ppo.num_epochs, minibatch_size=ppo.minibatch_size,
                  train_batch_size_per_learner=runners * ppo.num_envs * steps,
                  # The squared error is clipped, which stops its gradient: returns are scaled
                  # instead (reward_scale), so no clip is needed.
                  vf_clip_param=math.inf)
        .rl_module(rl_module_spec=RLModuleSpec(module_class=LstmActorCritic, model_config=model))
        .debugging(seed=run.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=runners * ppo.num_envs)
    )


def _step_ms() -> float:
    return float(_core.STEP_MS)


def sample_episodes(runner: Any, seed: int, iteration: int) -> tuple[list[Any], int, float]:
    """One episode per slot of one env runner (runs inside it); (episodes, steps, seconds)."""
    s = stream_seed(seed, iteration, SAMPLE_STREAM, runner.worker_index)
    # RLlib reseeds the env with _seed when a sample of whole episodes resets it; there is no
    # public setter. Torch's generator draws the actions.
    if not hasattr(runner, "_seed"):  # else every iteration would replay the same episodes
        raise RuntimeError("this RLlib's env runner has no _seed: ccgym cannot reseed it")
    runner._seed = s
    torch.manual_seed(s)
    np.random.seed(s)
    random.seed(s)
    started = time.perf_counter()
    episodes = runner.sample(num_episodes=runner.num_envs, explore=True)
    return episodes, sum(len(e) for e in episodes), time.perf_counter() - started


def _learner_call(algo: Any, function: Callable[[Any], Any]) -> Any:
    """function(learner) on the (one, local) learner; its errors raised here."""
    return next(iter(algo.learner_group.foreach_learner(function))).get()


def _module(learner: Any) -> Any:
    from ray.rllib.core.rl_module.rl_module import DEFAULT_MODULE_ID

    return learner.module[DEFAULT_MODULE_ID]


def _actor_dict(learner: Any) -> dict[str, Any]:
    return _module(learner).policy.to_file_dict()


def _kl_coeff(learner: Any) -> float:
    from ray.rllib.core.rl_module.rl_module import DEFAULT_MODULE_ID

    return float(learner.curr_kl_coeffs_per_module[DEFAULT_MODULE_ID].item())


def _set_kl_coeff(learner: Any, value: float) -> None:
    from ray.rllib.core.rl_module.rl_module import DEFAULT_MODULE_ID

    learner.curr_kl_coeffs_per_module[DEFAULT_MODULE_ID].data.fill_(value)


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


# ---------------------------------------------------------------- state and checkpoints

@dataclass
class PpoState:
    """Everything a run needs to continue after its last finished iteration."""

    iteration: int  # last finished iteration (0: none)
    early_stopping: EarlyStopping
    learner: dict[str, Any] | None = None  # RLlib learner state: module weights and Adam's
    kl_coeff: float | None = None  # the adaptive KL coefficient (not in RLlib's state)
    reference: dict[str, float] = field(default_factory=dict)
    env_steps: int = 0
    history: list[dict[str, float]] = field(default_factory=list)
    policy: LstmPolicy | None = None  # the actor after the last iteration


def _early_stopping(config: TrainConfig, saved: dict[str, Any] | None = None) -> EarlyStopping:
    if saved is None:
        return EarlyStopping(config.ppo.patience, config.ppo.min_delta)
    return EarlyStopping.from_dict(saved, config.ppo.patience, config.ppo.min_delta)


def save_checkpoint(path: Path, state: PpoState) -> None:
    """Atomically: a run killed while writing keeps the previous checkpoint."""
    atomic_torch_save({
        "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
        "iteration": state.iteration, "learner": state.learner, "kl_coeff": state.kl_coeff,
        "early_stopping": state.early_stopping.to_dict(), "reference": dict(state.reference),
        "env_steps": state.env_steps, "history": list(state.history),
    }, path)


def load_checkpoint(path: Path, config: TrainConfig) -> PpoState:
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as e:
        raise UserError(f"{path}: cannot read the checkpoint: {e}") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path}: not a ccgym PPO checkpoint (is [algorithm] name right?)")
    if data.get("version") != CHECKPOINT_VERSION:
        raise UserError(f"{path}: checkpoint version {data.get('version')} is not supported")
    return PpoState(iteration=int(data["iteration"]),
                    early_stopping=_early_stopping(config, data["early_stopping"]),
                    learner=data["learner"], kl_coeff=data["kl_coeff"],
                    reference=dict(data["reference"]), env_steps=int(data["env_steps"]),
                    history=list(data["history"]))


# ---------------------------------------------------------------- the loop

def train(config: TrainConfig, run_dir: Path, *, resume: bool = False,
          extend: bool = False, progress: bool = True,
          say: Callable[[str], None] | None = None) -> PpoState:
    """Runs (or continues) PPO in run_dir up to config.run.iterations.

    resume: continue from the run folder's checkpoint when there is one. extend: also continue
    a run that had stopped early (its patience counter starts over).
    """
    say = say or (lambda text: tqdm.write(text))
    folder = RunFolder(run_dir)
    folder.path.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.run.torch_threads)
    state = start_state(config, folder, resume, extend, say,
                        new=lambda: PpoState(0, _early_stopping(config)),
                        load=lambda path: load_checkpoint(path, config))
    if state.early_stopping.stopped:
        return state
    # RLlib needs Ray even when the env runner is this process: one CPU for the driver.
    with (open_session(config, folder, state, say) as session, sigterm_as_interrupt(),
          RolloutPool(max(config.run.workers, 1), config.run.ray_address)):
        algo = algorithm_config(config, session.train_specs).build_algo()
        try:
            _restore(algo, state)
            run = _Run(config, folder, algo, session.validation_links, session.writer,
                       progress, say)
            while state.iteration < config.run.iterations and not state.early_stopping.stopped:
                _iteration(run, state)
        finally:
            algo.stop()
    return state


def _restore(algo: Any, state: PpoState) -> None:
    """A resumed run's learner state on the learner, and its weights on the env runners."""
    if state.learner is None:
        return
    learner_state = state.learner
    _learner_call(algo, lambda learner: learner.set_state(learner_state))
    if state.kl_coeff is not None:
        kl = state.kl_coeff
        _learner_call(algo, lambda learner: _set_kl_coeff(learner, kl))
    _sync_weights(algo)


def _sync_weights(algo: Any) -> None:
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group,
                                       inference_only=True, timeout_seconds=None)


@dataclass
class _Run:
    """What every iteration of one run uses, set up once by train()."""

    config: TrainConfig
    folder: RunFolder
    algo: Any  # RLlib's PPO Algorithm: its env runner group and learner group
    validation_links: list[Any]
    writer: Any  # TensorBoard's SummaryWriter on the run folder
    progress: bool
    say: Callable[[str], None]


@dataclass
class _Figures:
    """One iteration's figures: its history entry, its TensorBoard scalars, its printed line."""

    iteration: int
    losses: dict[str, float] = field(default_factory=dict)  # TensorBoard tag -> value
    episode_return: float = math.nan  # mean undiscounted (scaled) return of the episodes
    scores: dict[str, float] = field(default_factory=dict)  # eval/ scalars; "score" the mean
    env_steps: int = 0
    sample_s: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.env_steps / self.sample_s if self.sample_s > 0 else 0.0


def _iteration(run: _Run, state: PpoState) -> None:
    """Sample, learn, sync, validate; then keep the best policy and checkpoint."""
    config, algo = run.config, run.algo
    k = state.iteration + 1
    figures = _Figures(k)
    with tqdm(total=3, desc=f"iteration {k}/{config.run.iterations}", unit="stage",
              disable=not run.progress, leave=False) as bar:
        bar.set_postfix_str("rollouts")
        started = time.perf_counter()
        results = algo.env_runner_group.foreach_env_runner(
            functools.partial(sample_episodes, seed=config.run.seed, iteration=k),
            local_env_runner=config.run.workers == 0)
        figures.sample_s = time.perf_counter() - started
        episodes = [e for r in results for e in r[0]]
        figures.env_steps = sum(r[1] for r in results)
        figures.episode_return = float(np.mean([e.get_return() for e in episodes]))
        bar.update()

        bar.set_postfix_str("learning")
        _learn(run, state, figures, episodes)
        bar.update()

        bar.set_postfix_str("validation")
        state.policy = LstmPolicy.from_file_dict(_learner_call(algo, _actor_dict))
        ev = config.eval
        rows = validate_policy(state.policy, run.validation_links, ev.validation_length_s,
                               ev.runs, config.run.seed)
        figures.scores = summarize_rows(rows)
        bar.update()
    _record(run, state, figures)


def _learn(run: _Run, state: PpoState, figures: _Figures, episodes: list[Any]) -> None:
    """RLlib's learner on the episodes (GAE, minibatches, epochs); the env runners' weights."""
    from ray.rllib.core.rl_module.rl_module import DEFAULT_MODULE_ID
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME
    from ray.rllib.utils.metrics.metrics_logger import MetricsLogger

    config, algo = run.config, run.algo
    s = stream_seed(config.run.seed, figures.iteration, LEARN_STREAM)
    torch.manual_seed(s)
    np.random.seed(s)
    random.seed(s)
    results = algo.learner_group.update(
        episodes=episodes,
        timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: state.env_steps + figures.env_steps},
        num_epochs=config.ppo.num_epochs, minibatch_size=config.ppo.minibatch_size,
        shuffle_batch_per_epoch=True)
    logger = MetricsLogger(root=True)
    logger.aggregate(results)
    reduced = logger.reduce()  # the mean over the minibatch updates
    module_figures = reduced.get(DEFAULT_MODULE_ID, {})
    for key, tag in LOSS_TAGS.items():
        if key in module_figures:
            figures.losses[tag] = float(module_figures[key])
    _sync_weights(algo)


def _record(run: _Run, state: PpoState, figures: _Figures) -> None:
    """Keeps the policy if it is the best so far, logs the iteration, writes the checkpoint."""
    k, score = figures.iteration, figures.scores["score"]
    state.iteration = k
    state.env_steps += figures.env_steps
    if state.early_stopping.update(k, score):
        state.policy.save(run.folder.policy)
    state.learner = _learner_call(run.algo, _learner_state)
    state.kl_coeff = _learner_call(run.algo, _kl_coeff)
    state.history.append({"iteration": float(k), "score": score,
                          "episode_return": figures.episode_return,
                          **{tag.split("/")[1]: v for tag, v in figures.losses.items()}})
    _log(run.writer, state, figures)
    # The checkpoint comes last: once it exists, the iteration's events and policy.pt do too.
    save_checkpoint(run.folder.checkpoint, state)

    loss = figures.losses
    run.say(f"iteration {k}: return {figures.episode_return:.3f}  "
            f"policy {loss.get('losses/policy', math.nan):.4f}  "
            f"value {loss.get('losses/value', math.nan):.4f}  "
            f"entropy {loss.get('losses/entropy', math.nan):.3f}  "
            f"KL {loss.get('losses/KL', math.nan):.4f}  score {score:.3f}  "
            f"SPS {figures.steps_per_second:.0f}"
            + ("  (best)" if state.early_stopping.best_iteration == k else ""))
    if state.early_stopping.stopped and k < run.config.run.iterations:
        run.say(f"stopping early: no improvement for {run.config.ppo.patience} iterations")


def _log(writer: Any, state: PpoState, figures: _Figures) -> None:
    k = figures.iteration
    scalars = dict(figures.losses)
    scalars.update({"charts/SPS": figures.steps_per_second,
                    "charts/episode_return": figures.episode_return,
                    "charts/env_steps": float(state.env_steps)})
    scalars.update({f"eval/{tag}": value for tag, value in figures.scores.items()})
    scalars.update({f"eval/{tag}": value for tag, value in state.reference.items()})
    for tag, value in scalars.items():
        if not math.isnan(value):
            writer.add_scalar(tag, value, k)
    writer.flush()
