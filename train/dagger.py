"""DAgger (Ross, Gordon and Bagnell, 2011) for the LSTM policy, as Indigo trained it.

Each iteration i = 1, 2, ...:
  1. roll out episodes on the training links. Every step executes the expert's action with
     probability beta_i, else the policy's: beta_1 = 1 (there is no policy yet), then
     beta_i = beta0 * beta_decay^(i-1);
  2. label every visited state with the expert's action (the oracle's, from the environment);
  3. aggregate: add the episodes to the dataset (a fraction held out to measure agreement);
  4. retrain the LSTM on all episodes with truncated backpropagation through time and
     cross-entropy, the recurrent state carried across segments;
  5. measure held-out agreement with the expert and the policy's score on the validation
     links, keep the best policy (policy.pt), write a checkpoint;
  6. stop when neither figure has improved for `patience` iterations.

Rollouts run on the shared RolloutPool (train/pool.py), one vectorized environment per task;
everything a rollout needs travels in a RolloutTask, so a task runs the same on a cluster node.
What is not DAgger lives beside it, shared with the other trainers: validation and reference
lines (train/validation.py), the run folder (train/run_folder.py), the best iteration and
patience (train/early_stopping.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from ccgym.envs.link_env import EnvConfig
from ccgym.envs.vector import VecLinkEnv
from ccgym.errors import UserError
from ccgym.interrupts import sigterm_as_interrupt
from ccgym.policies.lstm import LstmPolicy, atomic_torch_save, load_torch_file
from ccgym.train.config import TrainConfig
from ccgym.train.early_stopping import EarlyStopping
from ccgym.train.pool import RolloutPool
from ccgym.train.run_folder import RunFolder
from ccgym.train.session import open_session, start_state
from ccgym.train.validation import summarize_rows, validate_policy

CHECKPOINT_FORMAT = "ccgym-dagger-checkpoint"
CHECKPOINT_VERSION = 2  # 2: early stopping's state as EarlyStopping.to_dict()
READABLE_VERSIONS = (1, 2)
MS_PER_S = 1000.0
IGNORE_LABEL = -100  # cross-entropy's ignore_index: padding past an episode's end
# Independent random streams derived from (seed, iteration, stream): a resumed run draws
# the same numbers as an uninterrupted one without saving generator states mid-iteration.
SPLIT_STREAM = 1
SHUFFLE_STREAM = 2
MIXING_STREAM = 3

Episode = tuple[np.ndarray, np.ndarray]  # observations (T, OBS_DIM) float32, labels (T,) int64


def beta_for(iteration: int, beta0: float, beta_decay: float) -> float:
    """Probability of executing the expert's action at a (1-based) iteration."""
    if iteration <= 1:
        return 1.0
    return beta0 * beta_decay ** (iteration - 1)


# ---------------------------------------------------------------- rollouts

@dataclass
class RolloutTask:
    """One worker's share of an iteration's rollouts: num_envs episodes, stepped together."""

    worker_index: int  # unique over the run (iteration and task)
    num_envs: int
    env_config: EnvConfig  # for ccgym.envs.vector.VecLinkEnv (links, episode_ms, seed)
    seed: int  # the environment's reset seed; sub-environment i uses seed + i
    beta: float
    policy: dict[str, Any] | None  # LstmPolicy.to_file_dict(); None: the expert acts alone
    exploration: float = 0.0  # probability of a uniformly random action instead
    threads: int = 1


@dataclass
class RolloutResult:
    obs: np.ndarray        # (E, T, OBS_DIM) float32
    labels: np.ndarray     # (E, T) int64, the expert's action at each observation
    lengths: np.ndarray    # (E,) steps recorded per episode (T unless it ended early)
    policy_agreed: int     # steps where the policy's own choice equalled the expert's
    policy_steps: int      # steps where the policy made a choice
    env_steps: int
    seconds: float

    def episodes(self) -> list[Episode]:
        return [(self.obs[e, :n].copy(), self.labels[e, :n].copy())
                for e, n in enumerate(self.lengths)]


def run_rollout(task: RolloutTask) -> RolloutResult:
    """Rolls out one batch of episodes; runs in a Ray worker or in-process."""
    torch.set_num_threads(1)  # a worker owns one CPU; torch's own pool would oversubscribe it
    start = time.perf_counter()
    env = VecLinkEnv(task.num_envs, task.env_config, task.threads)
    try:
        steps = task.env_config.episode_steps
        n = task.num_envs
        num_actions = int(env.single_action_space.n)
        policy = LstmPolicy.from_file_dict(task.policy) if task.policy is not None else None
        coins = np.random.default_rng([task.seed, task.worker_index, MIXING_STREAM])
        obs, infos = env.reset(seed=task.seed)
        obs_buf = np.zeros((n, steps, obs.shape[1]), dtype=np.float32)
        labels = np.full((n, steps), IGNORE_LABEL, dtype=np.int64)
        lengths = np.full(n, steps, dtype=np.int64)
        alive = np.ones(n, dtype=bool)
        state = policy.initial_state(n) if policy is not None else None
        starting = np.ones(n, dtype=bool)
        agreed = chosen = env_steps = 0
        for t in range(steps):
            expert = np.asarray(infos["expert_action"], dtype=np.int64)
            obs_buf[alive, t] = obs[alive]
            labels[alive, t] = expert[alive]
            if policy is not None:
                mine, state = policy.act(obs, state, starting)
                starting[:] = False
                agreed += int(np.sum((mine == expert) & alive))
                chosen += int(np.sum(alive))
                use_expert = coins.random(n) < task.beta
                actions = np.where(use_expert, expert, mine)
            else:
                actions = expert
            if task.exploration > 0:
                explore = coins.random(n) < task.exploration
                actions = np.where(explore, coins.integers(0, num_actions, n), actions)
            env_steps += int(np.sum(alive))
            if t == steps - 1:
                break  # the last observation is labelled; the step after it is not needed
            obs, _, terminated, truncated, infos = env.step(actions.astype(np.int64))
            ended = (np.asarray(terminated) | np.asarray(truncated)) & alive
            if ended.any():
                # An episode that ends early (a trace run once) keeps what it recorded.
                lengths[ended] = t + 1
                alive &= ~ended
                if not alive.any():
                    break
    finally:
        close = getattr(env, "close", None)
        if close is not None:
            close()
    return RolloutResult(obs_buf, labels, lengths, agreed, chosen, env_steps,
                         time.perf_counter() - start)


def make_tasks(config: TrainConfig, train_specs: Sequence[str], iteration: int,
               policy: LstmPolicy | None) -> list[RolloutTask]:
    """The iteration's rollouts, split into tasks of at most num_envs episodes."""
    d = config.dagger
    per_task = d.num_envs
    count = d.rollouts_per_iteration
    tasks_per_iteration = math.ceil(count / per_task)
    beta = beta_for(iteration, d.beta0, d.beta_decay)
    policy_dict = policy.to_file_dict() if policy is not None and beta < 1.0 else None
    tasks = []
    for k in range(tasks_per_iteration):
        n = min(per_task, count - k * per_task)
        # RLlib's convention, seed + worker_index, with the index unique over the whole run.
        # VecLinkEnv seeds its sub-environment i with (reset seed + i): spacing the workers
        # num_envs apart gives every sub-environment of the run its own seed.
        worker_index = (iteration - 1) * tasks_per_iteration + k
        seed = config.run.seed + worker_index * per_task
        env_config = EnvConfig(links=list(train_specs), episode_ms=d.episode_ms, seed=seed,
                               oracle_duration_ms=d.oracle_duration_s * MS_PER_S or None,
                               oracle_lookbacks=list(d.oracle_lookbacks),
                               random_start=d.random_start)
        tasks.append(RolloutTask(worker_index, n, env_config, seed,
                                 beta if policy_dict is not None else 1.0, policy_dict,
                                 d.exploration, config.run.env_threads))
    return tasks


# ---------------------------------------------------------------- learning

def _batch(episodes: Sequence[Episode]) -> tuple[torch.Tensor, torch.Tensor]:
    """Episodes padded to the longest: obs (B, T, D) and labels (B, T) (padding ignored)."""
    longest = max(len(labels) for _, labels in episodes)
    dim = episodes[0][0].shape[1]
    obs = np.zeros((len(episodes), longest, dim), dtype=np.float32)
    labels = np.full((len(episodes), longest), IGNORE_LABEL, dtype=np.int64)
    for i, (o, y) in enumerate(episodes):
        obs[i, :len(y)] = o
        labels[i, :len(y)] = y
    return torch.from_numpy(obs), torch.from_numpy(labels)


def class_weights(episodes: Sequence[Episode], num_actions: int, power: float) -> torch.Tensor:
    """share(action) ^ -power, scaled so that the mean weight over all labels is 1."""
    counts = np.zeros(num_actions)
    for _, labels in episodes:
        counts += np.bincount(labels[labels >= 0], minlength=num_actions)[:num_actions]
    share = np.maximum(counts, 1.0) / max(counts.sum(), 1.0)
    weights = share ** -power
    weights *= counts.sum() / max(float(np.dot(weights, counts)), 1e-12)
    return torch.as_tensor(weights, dtype=torch.float32)


def imitation_loss(policy: LstmPolicy, weights: torch.Tensor | None
                   ) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """(logits (N, A), labels (N,)) -> the loss summed over the labelled steps: the weighted
    cross-entropy for the classes head; for the log_change head, whose logits are minus the
    squared distance of its change to each action's, the squared error to the expert's
    (unweighted)."""
    if policy.head_kind == "classes":
        return nn.CrossEntropyLoss(weight=weights, ignore_index=IGNORE_LABEL, reduction="sum")

    def squared_error(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labelled = labels != IGNORE_LABEL
        return -logits[labelled].gather(1, labels[labelled].unsqueeze(1)).sum()

    return squared_error


def train_epochs(policy: LstmPolicy, optimizer: torch.optim.Optimizer,
                 episodes: Sequence[Episode], epochs: int, batch_size: int, bptt_len: int,
                 grad_clip: float, rng: np.random.Generator,
                 weights: torch.Tensor | None = None,
                 on_epoch: Callable[[float], object] | None = None) -> float:
    """Truncated BPTT over whole episodes; returns the last epoch's mean (weighted) loss per
    label."""
    loss_fn = imitation_loss(policy, weights)
    policy.train()
    mean_loss = math.nan
    for _ in range(epochs):
        order = rng.permutation(len(episodes))
        total, count = 0.0, 0
        for first in range(0, len(order), batch_size):
            obs, labels = _batch([episodes[i] for i in order[first:first + batch_size]])
            state = None
            for s in range(0, labels.shape[1], bptt_len):
                seg_labels = labels[:, s:s + bptt_len]
                valid = int((seg_labels != IGNORE_LABEL).sum())
                logits, state = policy(obs[:, s:s + bptt_len], state)
                # The state flows into the next segment, the gradient does not (truncation).
                state = (state[0].detach(), state[1].detach())
                if valid == 0:
                    continue
                loss = loss_fn(logits.reshape(-1, logits.shape[-1]), seg_labels.reshape(-1))
                optimizer.zero_grad(set_to_none=True)
                (loss / valid).backward()
                if grad_clip > 0:
                    nn.utils.clip_grad_norm_(policy.parameters(), grad_clip)
                optimizer.step()
                total += float(loss.detach())
                count += valid
        mean_loss = total / max(count, 1)
        if on_epoch:
            on_epoch(mean_loss)
    policy.eval()
    return mean_loss


@torch.no_grad()
def agreement(policy: LstmPolicy, episodes: Sequence[Episode],
              batch_size: int = 64) -> tuple[float, float]:
    """(agreement, balanced agreement) of the greedy policy with the expert's labels, fed the
    recorded observations: the share of steps where it picks the expert's action, and the
    mean of that share over the actions the expert took (which "hold" cannot dominate)."""
    policy.eval()
    hits = np.zeros(policy.num_actions)
    totals = np.zeros(policy.num_actions)
    for first in range(0, len(episodes), batch_size):
        obs, labels = _batch(episodes[first:first + batch_size])
        logits, _ = policy(obs)
        valid = labels != IGNORE_LABEL
        chosen = logits.argmax(-1)[valid].numpy()
        expected = labels[valid].numpy()
        totals += np.bincount(expected, minlength=policy.num_actions)
        hits += np.bincount(expected[chosen == expected], minlength=policy.num_actions)
    if totals.sum() == 0:
        return math.nan, math.nan
    taken = totals > 0
    return float(hits.sum() / totals.sum()), float(np.mean(hits[taken] / totals[taken]))


# ---------------------------------------------------------------- checkpoints

@dataclass
class DaggerState:
    """Everything a run needs to continue after its last finished iteration."""

    iteration: int  # last finished iteration (0: none)
    policy: LstmPolicy
    optimizer: torch.optim.Optimizer
    early_stopping: EarlyStopping  # the best iteration (policy.pt) and the patience count
    train_episodes: list[Episode] = field(default_factory=list)
    holdout_episodes: list[Episode] = field(default_factory=list)
    reference: dict[str, float] = field(default_factory=dict)
    env_steps: int = 0
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def dataset_size(self) -> int:
        return sum(len(y) for _, y in self.train_episodes + self.holdout_episodes)


def new_state(config: TrainConfig) -> DaggerState:
    torch.manual_seed(config.run.seed)
    policy = LstmPolicy(hidden_size=config.model.hidden_size, head=config.model.head)
    optimizer = make_optimizer(policy, config)
    return DaggerState(0, policy, optimizer, _early_stopping(config))


def _early_stopping(config: TrainConfig, saved: dict[str, Any] | None = None) -> EarlyStopping:
    d = config.dagger
    if saved is None:
        return EarlyStopping(d.patience, d.min_delta)
    return EarlyStopping.from_dict(saved, d.patience, d.min_delta)


def learning_rate(config: TrainConfig, iteration: int) -> float:
    """The step size of a (1-based) iteration: lr x lr_decay^(iteration - 1)."""
    return config.optimizer.lr * config.optimizer.lr_decay ** (iteration - 1)


def set_learning_rate(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def make_optimizer(policy: LstmPolicy, config: TrainConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(policy.parameters(), lr=config.optimizer.lr,
                             weight_decay=config.optimizer.weight_decay)


def _episodes_to_tensors(episodes: Sequence[Episode]) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.from_numpy(o), torch.from_numpy(y)) for o, y in episodes]


def _episodes_from_tensors(items: Sequence[Any]) -> list[Episode]:
    return [(o.numpy(), y.numpy()) for o, y in items]


def save_checkpoint(path: Path, state: DaggerState) -> None:
    """Atomically: a run killed while writing keeps the previous checkpoint."""
    atomic_torch_save({
        "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
        "iteration": state.iteration,
        "model": state.policy.to_file_dict(),
        "optimizer": state.optimizer.state_dict(),
        "dataset": {"train": _episodes_to_tensors(state.train_episodes),
                    "holdout": _episodes_to_tensors(state.holdout_episodes)},
        # Rollouts, splits and shuffles draw from generators derived from (seed, iteration),
        # so torch's generator (weight init) is the only state to carry.
        "rng": {"torch": torch.get_rng_state()},
        "early_stopping": state.early_stopping.to_dict(),
        "reference": dict(state.reference),
        "env_steps": state.env_steps,
        "history": list(state.history),
    }, path)


def load_checkpoint(path: Path, config: TrainConfig) -> DaggerState:
    try:
        data = load_torch_file(path, "checkpoint")
    except OSError as e:
        raise UserError(f"{path}: cannot read the checkpoint: {e.strerror}") from None
    except ValueError as e:
        raise UserError(str(e)) from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path}: not a ccgym DAgger checkpoint")
    if data.get("version") not in READABLE_VERSIONS:
        raise UserError(f"{path}: checkpoint version {data.get('version')} is not supported")
    try:
        return _state_from_checkpoint(data, path, config)
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as e:
        # The right format, damaged inside (or written by a ccgym whose layout differs).
        raise UserError(f"{path}: a damaged checkpoint ({type(e).__name__}: "
                        f"{' '.join(str(e).split())[:200]})") from None


def _state_from_checkpoint(data: dict[str, Any], path: Path, config: TrainConfig) -> DaggerState:
    policy = LstmPolicy.from_file_dict(data["model"], where=str(path))
    if policy.hidden_size != config.model.hidden_size:
        raise UserError(f"{path}: the checkpoint's hidden_size {policy.hidden_size} differs "
                        f"from the config's {config.model.hidden_size}")
    optimizer = make_optimizer(policy, config)
    optimizer.load_state_dict(data["optimizer"])
    torch.set_rng_state(data["rng"]["torch"])
    return DaggerState(
        iteration=int(data["iteration"]), policy=policy, optimizer=optimizer,
        early_stopping=_early_stopping(config, _saved_early_stopping(data)),
        train_episodes=_episodes_from_tensors(data["dataset"]["train"]),
        holdout_episodes=_episodes_from_tensors(data["dataset"]["holdout"]),
        reference=dict(data["reference"]), env_steps=int(data["env_steps"]),
        history=list(data["history"]))


def _saved_early_stopping(data: dict[str, Any]) -> dict[str, Any]:
    if data["version"] >= 2:
        return data["early_stopping"]
    best = data["best"]  # version 1 kept the two records under their own names
    return {"best_iteration": best["iteration"], "best_score": best["score"],
            "records": {"score": best["score"], "agreement": best["agreement"]},
            "stale": best["stale"], "stopped": best["stopped_early"]}


# ---------------------------------------------------------------- the loop

def _split(episodes: list[Episode], fraction: float,
           rng: np.random.Generator) -> tuple[list[Episode], list[Episode]]:
    """(train, holdout): round(fraction * n) episodes held out, at least one when fraction > 0
    and there are two or more, so that agreement is always measured on unseen episodes."""
    n = len(episodes)
    held = int(round(fraction * n))
    if fraction > 0 and n >= 2:
        held = min(max(held, 1), n - 1)
    order = rng.permutation(n)
    holdout = {int(i) for i in order[:held]}
    return ([e for i, e in enumerate(episodes) if i not in holdout],
            [e for i, e in enumerate(episodes) if i in holdout])


def train(config: TrainConfig, run_dir: Path, *, resume: bool = False,
          extend: bool = False, progress: bool = True,
          say: Callable[[str], None] | None = None) -> DaggerState:
    """Runs (or continues) DAgger in run_dir up to config.run.iterations.

    resume: continue from the run folder's checkpoint when there is one. extend: also continue
    a run that had stopped early (its patience counter starts over).
    """
    say = say or (lambda text: tqdm.write(text))
    folder = RunFolder(run_dir)
    folder.path.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.run.torch_threads)
    state = start_state(config, folder, resume, extend, say, new=lambda: new_state(config),
                        load=lambda path: load_checkpoint(path, config))
    if state.early_stopping.stopped:
        return state

    with (open_session(config, folder, state, say) as session, sigterm_as_interrupt(),
          RolloutPool(config.run.workers, config.run.ray_address) as pool):
        run = _Run(config, folder, pool, session.train_specs, session.validation_links,
                   session.writer, progress, say)
        while state.iteration < config.run.iterations and not state.early_stopping.stopped:
            _iteration(run, state)
    return state


@dataclass
class _Run:
    """What every iteration of one run uses, set up once by train()."""

    config: TrainConfig
    folder: RunFolder
    pool: RolloutPool
    train_specs: list[str]
    validation_links: list[Any]
    writer: Any  # TensorBoard's SummaryWriter on the run folder
    progress: bool
    say: Callable[[str], None]


@dataclass
class _Figures:
    """One iteration's figures: its history entry, its TensorBoard scalars, its printed line."""

    iteration: int
    beta: float
    learning_rate: float
    loss: float = math.nan
    agreement: float = math.nan  # on the held-out episodes
    balanced_agreement: float = math.nan
    rollout_agreement: float = math.nan  # the policy's own choices during the rollouts
    scores: dict[str, float] = field(default_factory=dict)  # eval/ scalars; "score" the mean
    env_steps: int = 0
    rollout_s: float = 0.0

    @property
    def steps_per_second(self) -> float:
        return self.env_steps / self.rollout_s if self.rollout_s > 0 else 0.0


def _iteration(run: _Run, state: DaggerState) -> None:
    """Roll out, aggregate, retrain, validate; then keep the best policy and checkpoint."""
    config, d = run.config, run.config.dagger
    k = state.iteration + 1
    figures = _Figures(k, beta_for(k, d.beta0, d.beta_decay), learning_rate(config, k))
    tasks = make_tasks(config, run.train_specs, k, state.policy if k > 1 else None)
    with tqdm(total=len(tasks) + d.epochs + 1, desc=f"iteration {k}/{config.run.iterations}",
              unit="stage", disable=not run.progress, leave=False) as bar:
        bar.set_postfix_str(f"rollouts, beta={figures.beta:.3f}")
        started = time.perf_counter()
        results = run.pool.run(run_rollout, tasks, lambda _: bar.update())
        figures.rollout_s = time.perf_counter() - started
        _aggregate(run, state, figures, results)

        bar.set_postfix_str("training")
        _learn(config, state, figures,
               lambda value: (bar.update(), bar.set_postfix_str(f"loss={value:.4f}")))

        bar.set_postfix_str("validation")
        ev = config.eval
        rows = validate_policy(state.policy, run.validation_links, ev.validation_length_s,
                               ev.runs, config.run.seed)
        figures.scores = summarize_rows(rows)
        bar.update()
    _record(run, state, figures)


def _aggregate(run: _Run, state: DaggerState, figures: _Figures,
               results: Sequence[RolloutResult]) -> None:
    """Adds the rollouts' episodes to the dataset, split into training and held-out ones."""
    episodes = [e for r in results for e in r.episodes()]
    figures.env_steps = sum(r.env_steps for r in results)
    chosen = sum(r.policy_steps for r in results)
    if chosen:
        figures.rollout_agreement = sum(r.policy_agreed for r in results) / chosen
    rng = np.random.default_rng([run.config.run.seed, figures.iteration, SPLIT_STREAM])
    new_train, new_holdout = _split(episodes, run.config.dagger.holdout_fraction, rng)
    state.train_episodes.extend(new_train)
    state.holdout_episodes.extend(new_holdout)


def _learn(config: TrainConfig, state: DaggerState, figures: _Figures,
           on_epoch: Callable[[float], object]) -> None:
    """Retrains the policy on the whole dataset; measures held-out agreement."""
    d = config.dagger
    set_learning_rate(state.optimizer, figures.learning_rate)
    weights = class_weights(state.train_episodes, state.policy.num_actions,
                            d.class_weight_power) if d.class_weight_power > 0 else None
    figures.loss = train_epochs(
        state.policy, state.optimizer, state.train_episodes, d.epochs, d.batch_size, d.bptt_len,
        config.optimizer.grad_clip,
        np.random.default_rng([config.run.seed, figures.iteration, SHUFFLE_STREAM]), weights,
        on_epoch=on_epoch)
    figures.agreement, figures.balanced_agreement = agreement(
        state.policy, state.holdout_episodes or state.train_episodes)


def _record(run: _Run, state: DaggerState, figures: _Figures) -> None:
    """Keeps the policy if it is the best so far, logs the iteration, writes the checkpoint."""
    k, score = figures.iteration, figures.scores["score"]
    state.iteration = k
    state.env_steps += figures.env_steps
    if state.early_stopping.update(k, score, agreement=figures.agreement):
        state.policy.save(run.folder.policy)
    state.history.append({"iteration": float(k), "loss": figures.loss,
                          "agreement": figures.agreement,
                          "balanced_agreement": figures.balanced_agreement, "score": score,
                          "beta": figures.beta})
    _log(run.writer, state, figures)
    # The checkpoint comes last: once it exists, the iteration's events and policy.pt do too.
    save_checkpoint(run.folder.checkpoint, state)

    run.say(f"iteration {k}: loss {figures.loss:.4f}  agreement {figures.agreement:.3f} "
            f"(balanced {figures.balanced_agreement:.3f})  score {score:.3f}  "
            f"beta {figures.beta:.3f}  dataset {state.dataset_size} steps  "
            f"SPS {figures.steps_per_second:.0f}"
            + ("  (best)" if state.early_stopping.best_iteration == k else ""))
    if state.early_stopping.stopped and k < run.config.run.iterations:
        run.say(f"stopping early: no improvement for {run.config.dagger.patience} iterations")


def _log(writer: Any, state: DaggerState, figures: _Figures) -> None:
    k = figures.iteration
    scalars = {"losses/loss": figures.loss, "losses/learning_rate": figures.learning_rate,
               "dagger/expert_agreement": figures.agreement,
               "dagger/balanced_agreement": figures.balanced_agreement,
               "dagger/rollout_agreement": figures.rollout_agreement,
               "dagger/beta": figures.beta, "dagger/dataset_size": state.dataset_size,
               "dagger/episodes": len(state.train_episodes) + len(state.holdout_episodes),
               "charts/SPS": figures.steps_per_second}
    scalars.update({f"eval/{tag}": value for tag, value in figures.scores.items()})
    scalars.update({f"eval/{tag}": value for tag, value in state.reference.items()})
    for tag, value in scalars.items():
        if not math.isnan(value):  # no rollout agreement before the policy first acts
            writer.add_scalar(tag, value, k)
    writer.flush()
