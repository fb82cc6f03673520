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

Rollouts are Ray tasks (one vectorized environment each) or, with workers = 0, plain calls.
Everything a rollout needs travels in a RolloutTask, so a task runs the same on a cluster node.
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

from ccgym.errors import UserError
from ccgym.interrupts import sigterm_as_interrupt
from ccgym.policies.lstm import LstmPolicy, atomic_torch_save
from ccgym.train.config import TrainConfig, resolve_link_entries, resolve_validation_links

CHECKPOINT_FILE = "checkpoint.pt"
POLICY_FILE = "policy.pt"
CHECKPOINT_FORMAT = "ccgym-dagger-checkpoint"
CHECKPOINT_VERSION = 1
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
    env_config: dict[str, Any]  # for ccgym.envs.vector.VecLinkEnv (links, episode_ms, seed)
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
    from ccgym.envs.vector import VecLinkEnv

    torch.set_num_threads(1)  # a worker owns one CPU; torch's own pool would oversubscribe it
    start = time.perf_counter()
    env = VecLinkEnv(task.num_envs, task.env_config, task.threads)
    try:
        steps = int(round(task.env_config["episode_ms"] / _step_ms()))
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


def _step_ms() -> float:
    from ccgym.emulators import _core

    return float(_core.STEP_MS)


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
        env_config = {"links": list(train_specs), "episode_ms": d.episode_ms, "seed": seed}
        tasks.append(RolloutTask(worker_index, n, env_config, seed,
                                 beta if policy_dict is not None else 1.0, policy_dict,
                                 d.exploration, config.run.env_threads))
    return tasks


class RolloutPool:
    """Runs rollout tasks on Ray (workers > 0) or in-process (workers = 0).

    A context manager: Ray is shut down on exit, whatever the exit (end, error, Ctrl-C), if
    this pool started it. With ray_address it joins a running cluster instead of starting one.
    """

    def __init__(self, workers: int, ray_address: str = "") -> None:
        self.workers = workers
        self.ray_address = ray_address
        self._started_ray = False
        self._remote: Any = None

    def __enter__(self) -> RolloutPool:
        if self.workers > 0:
            import logging

            import ray

            if not ray.is_initialized():
                if self.ray_address:
                    ray.init(address=self.ray_address, logging_level=logging.WARNING)
                else:
                    ray.init(num_cpus=self.workers, include_dashboard=False,
                             logging_level=logging.WARNING)
                self._started_ray = True
            self._remote = ray.remote(num_cpus=1, max_retries=1)(run_rollout)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False

    def run(self, tasks: Sequence[RolloutTask],
            on_done: Callable[[RolloutResult], None] | None = None) -> list[RolloutResult]:
        """The results in task order; on_done is called as each one finishes."""
        if self._remote is None:
            results = []
            for task in tasks:
                results.append(run_rollout(task))
                if on_done:
                    on_done(results[-1])
            return results
        import ray

        refs = [self._remote.remote(task) for task in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        out: list[RolloutResult | None] = [None] * len(refs)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                out[index[ref]] = ray.get(ref)
                if on_done:
                    on_done(out[index[ref]])
        return [r for r in out if r is not None]


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


def train_epochs(policy: LstmPolicy, optimizer: torch.optim.Optimizer,
                 episodes: Sequence[Episode], epochs: int, batch_size: int, bptt_len: int,
                 grad_clip: float, rng: np.random.Generator,
                 weights: torch.Tensor | None = None,
                 on_epoch: Callable[[float], None] | None = None) -> float:
    """Truncated BPTT over whole episodes; returns the last epoch's mean (weighted) loss per
    label."""
    loss_fn = nn.CrossEntropyLoss(weight=weights, ignore_index=IGNORE_LABEL, reduction="sum")
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


# ---------------------------------------------------------------- validation

def validate_policy(policy: LstmPolicy, links: Sequence[Any], duration_s: float | None, runs: int,
                    seed: int) -> list[dict[str, Any]]:
    """The policy on every validation link (runs seeds each) for duration_s, or None: each
    link's default length (a trace once, as ccgym eval runs it). All simulations are stepped
    in lockstep so that inference is one batch; one leaderboard row per link."""
    from ccgym.analysis.evaluate import Slot, aggregate, link_duration_ms, score_simulation
    from ccgym.emulators import _core
    from ccgym.policies.lstm_scheme import LstmScheme

    seeds = [seed + r for r in range(runs)]
    ends = [link_duration_ms(link, duration_s) for link in links]
    sims, slots = [], []
    by_end: dict[float, list[Any]] = {}  # simulations that stop at the same time
    for link, end_ms in zip(links, ends):
        for s in seeds:
            sim = _core.Simulator(link.spec, [("external", 0.0, -1.0)], s)
            sims.append(sim)
            slots.append(Slot(sim, 0, link, s))
            by_end.setdefault(end_ms, []).append(sim)
    scheme = LstmScheme.from_policy(policy)
    scheme.reset(slots)
    for k in range(math.ceil(max(ends, default=0.0) / _core.STEP_MS)):
        # Every slot stays in the batch (the scheme keeps one recurrent state per slot). A
        # simulation past its end is not advanced: its metrics stop there, so that would be
        # work thrown away (the Poisson traces end at 60 s, att-lte-driving at 786 s).
        scheme.decide(slots)
        start, until = k * _core.STEP_MS, (k + 1) * _core.STEP_MS
        for end_ms, group in by_end.items():
            if end_ms > start:
                _core.run_all_until(group, min(end_ms, until), 0)
    rows = []
    for i, (link, end_ms) in enumerate(zip(links, ends)):
        metrics = [score_simulation(sim, end_ms)[0] for sim in sims[i * runs:(i + 1) * runs]]
        rows.append(aggregate(link, "lstm", metrics))
    return rows


def _finite_mean(values: Sequence[float | None]) -> float:
    """Mean of the scores; -inf if any is -inf (a link where nothing got through)."""
    numbers = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(np.mean(numbers)) if numbers else math.nan


def summarize_rows(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """eval/ scalars: the mean score over links, and per link group the mean score,
    throughput and 95% end-to-end delay."""
    out = {"score": _finite_mean([r["score"] for r in rows])}
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row.get("group") or "links"), []).append(row)
    for group, members in groups.items():
        out[f"{group}/score"] = _finite_mean([r["score"] for r in members])
        out[f"{group}/throughput_mbps"] = _finite_mean([r["throughput_mbps"] for r in members])
        out[f"{group}/e2e_delay_ms"] = _finite_mean([r["e2e_delay_p95_ms"] for r in members])
    return out


def reference_scores(config: TrainConfig, links: Sequence[Any],
                     warn: Callable[[str], None]) -> dict[str, float]:
    """Mean validation score of the oracle and of the best baseline: reference lines."""
    from ccgym.analysis.evaluate import evaluate

    ev = config.eval
    out: dict[str, float] = {}
    schemes = list(ev.baselines)
    if schemes:
        rows, _ = evaluate(links, schemes, runs=ev.runs, seed=config.run.seed,
                           duration_s=ev.validation_length_s, progress=False)
        by_scheme = {s: _finite_mean([r["score"] for r in rows if r["scheme"] == s])
                     for s in schemes}
        best = max(by_scheme, key=lambda s: by_scheme[s])
        out["best_baseline_score"] = by_scheme[best]
        warn(f"best baseline on the validation links: {best} ({by_scheme[best]:.3f})")
    if ev.oracle:
        try:
            rows, _ = evaluate(links, ["oracle"], runs=ev.runs, seed=config.run.seed,
                               duration_s=ev.validation_length_s, progress=False)
        except UserError as e:
            warn(f"no oracle reference: {e}")
        else:
            out["oracle_score"] = _finite_mean([r["score"] for r in rows if r["scheme"] == "oracle"])
    return out


# ---------------------------------------------------------------- checkpoints

@dataclass
class DaggerState:
    """Everything a run needs to continue after its last finished iteration."""

    iteration: int  # last finished iteration (0: none)
    policy: LstmPolicy
    optimizer: torch.optim.Optimizer
    train_episodes: list[Episode] = field(default_factory=list)
    holdout_episodes: list[Episode] = field(default_factory=list)
    best_score: float = -math.inf
    best_agreement: float = -math.inf
    best_iteration: int = 0
    stale: int = 0  # iterations since either figure last improved
    stopped_early: bool = False
    reference: dict[str, float] = field(default_factory=dict)
    env_steps: int = 0
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def dataset_size(self) -> int:
        return sum(len(y) for _, y in self.train_episodes + self.holdout_episodes)


def new_state(config: TrainConfig) -> DaggerState:
    torch.manual_seed(config.run.seed)
    policy = LstmPolicy(hidden_size=config.model.hidden_size)
    optimizer = make_optimizer(policy, config)
    return DaggerState(0, policy, optimizer)


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
        "best": {"score": state.best_score, "agreement": state.best_agreement,
                 "iteration": state.best_iteration, "stale": state.stale,
                 "stopped_early": state.stopped_early},
        "reference": dict(state.reference),
        "env_steps": state.env_steps,
        "history": list(state.history),
    }, path)


def load_checkpoint(path: Path, config: TrainConfig) -> DaggerState:
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as e:
        raise UserError(f"{path}: cannot read the checkpoint: {e}") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path}: not a ccgym DAgger checkpoint")
    if data.get("version") != CHECKPOINT_VERSION:
        raise UserError(f"{path}: checkpoint version {data.get('version')} is not supported")
    policy = LstmPolicy.from_file_dict(data["model"], where=str(path))
    if policy.hidden_size != config.model.hidden_size:
        raise UserError(f"{path}: the checkpoint's hidden_size {policy.hidden_size} differs "
                        f"from the config's {config.model.hidden_size}")
    optimizer = make_optimizer(policy, config)
    optimizer.load_state_dict(data["optimizer"])
    torch.set_rng_state(data["rng"]["torch"])
    best = data["best"]
    return DaggerState(
        iteration=int(data["iteration"]), policy=policy, optimizer=optimizer,
        train_episodes=_episodes_from_tensors(data["dataset"]["train"]),
        holdout_episodes=_episodes_from_tensors(data["dataset"]["holdout"]),
        best_score=float(best["score"]), best_agreement=float(best["agreement"]),
        best_iteration=int(best["iteration"]), stale=int(best["stale"]),
        stopped_early=bool(best["stopped_early"]), reference=dict(data["reference"]),
        env_steps=int(data["env_steps"]), history=list(data["history"]))


# ---------------------------------------------------------------- the loop

def hyperparameter_table(config: TrainConfig) -> str:
    """The config as a Markdown table (TensorBoard's text tab renders it), CleanRL style."""
    lines = ["| parameter | value |", "|-|-|"]
    for key, value in config.flat().items():
        lines.append(f"| {key} | {value} |")
    return "\n".join(lines)


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

    resume: continue from run_dir/checkpoint.pt when there is one. extend: also continue a
    run that had stopped early (its patience counter starts over).
    """
    from torch.utils.tensorboard import SummaryWriter
    from tqdm import tqdm

    say = say or (lambda text: tqdm.write(text))
    run_dir.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.run.torch_threads)
    checkpoint_path = run_dir / CHECKPOINT_FILE
    if resume and checkpoint_path.is_file():
        state = load_checkpoint(checkpoint_path, config)
        say(f"resuming {run_dir} after iteration {state.iteration}")
        if state.stopped_early:
            if not extend:
                say(f"the run had stopped early (no improvement for {config.dagger.patience} "
                    "iterations); give --iterations to continue it")
                return state
            state.stopped_early, state.stale = False, 0
    else:
        state = new_state(config)

    check_config(config)
    train_links = resolve_link_entries(config.links.train, "train")
    train_specs = [link.spec for link in train_links]
    validation_links, note = resolve_validation_links(config)
    if note:
        say(note)

    # purge_step drops events a killed run logged after its last checkpoint.
    writer = SummaryWriter(str(run_dir), purge_step=state.iteration + 1)
    try:
        if state.iteration == 0:
            table = hyperparameter_table(config)
            writer.add_text("hyperparameters", table, 0)
            say("hyperparameters:\n" + table)
            say(f"{len(train_links)} training links, {len(validation_links)} validation links")
            state.reference = reference_scores(config, validation_links, say)
        with sigterm_as_interrupt(), RolloutPool(config.run.workers,
                                                 config.run.ray_address) as pool:
            while state.iteration < config.run.iterations and not state.stopped_early:
                _iteration(config, state, pool, train_specs, validation_links, writer,
                           checkpoint_path, run_dir / POLICY_FILE, progress, say)
        writer.flush()
    finally:
        writer.close()
    return state


def check_config(config: TrainConfig) -> None:
    """What can only be checked against the build and the files: the baselines exist and the
    links resolve. A misspelt baseline fails now, not after the training it was to be
    compared with."""
    from ccgym.analysis.evaluate import validate_schemes

    for scheme in config.eval.baselines:
        try:
            validate_schemes([scheme])
        except UserError as e:
            raise UserError(f"[eval] baselines: {scheme!r}: {e}") from None
    resolve_link_entries(config.links.train, "train")
    resolve_validation_links(config)


def _iteration(config: TrainConfig, state: DaggerState, pool: RolloutPool,
               train_specs: Sequence[str], validation_links: Sequence[Any], writer: Any,
               checkpoint_path: Path, policy_path: Path, progress: bool,
               say: Callable[[str], None]) -> None:
    from tqdm import tqdm

    d, ev = config.dagger, config.eval
    k = state.iteration + 1
    beta = beta_for(k, d.beta0, d.beta_decay)
    lr = learning_rate(config, k)
    tasks = make_tasks(config, train_specs, k, state.policy if k > 1 else None)
    total = len(tasks) + d.epochs + 1
    with tqdm(total=total, desc=f"iteration {k}/{config.run.iterations}", unit="stage",
              disable=not progress, leave=False) as bar:
        bar.set_postfix_str(f"rollouts, beta={beta:.3f}")
        started = time.perf_counter()
        results = pool.run(tasks, on_done=lambda _: bar.update())
        rollout_s = time.perf_counter() - started
        episodes = [e for r in results for e in r.episodes()]
        env_steps = sum(r.env_steps for r in results)
        chosen = sum(r.policy_steps for r in results)
        rollout_agreement = (sum(r.policy_agreed for r in results) / chosen) if chosen else math.nan

        new_train, new_holdout = _split(episodes, d.holdout_fraction,
                                        np.random.default_rng([config.run.seed, k, SPLIT_STREAM]))
        state.train_episodes.extend(new_train)
        state.holdout_episodes.extend(new_holdout)

        bar.set_postfix_str("training")
        set_learning_rate(state.optimizer, lr)
        weights = class_weights(state.train_episodes, state.policy.num_actions,
                                d.class_weight_power) if d.class_weight_power > 0 else None
        loss = train_epochs(
            state.policy, state.optimizer, state.train_episodes, d.epochs, d.batch_size,
            d.bptt_len, config.optimizer.grad_clip,
            np.random.default_rng([config.run.seed, k, SHUFFLE_STREAM]), weights,
            on_epoch=lambda value: (bar.update(), bar.set_postfix_str(f"loss={value:.4f}")))
        held, balanced = agreement(state.policy, state.holdout_episodes or state.train_episodes)

        bar.set_postfix_str("validation")
        rows = validate_policy(state.policy, validation_links, ev.validation_length_s,
                               ev.runs, config.run.seed)
        scores = summarize_rows(rows)
        bar.update()

    state.iteration = k
    state.env_steps += env_steps
    score = scores["score"]
    improved = False
    if held > state.best_agreement + d.min_delta:
        state.best_agreement, improved = held, True
    if score > state.best_score + d.min_delta:
        improved = True
    if score > state.best_score or not policy_path.is_file():
        state.best_score = max(score, state.best_score)
        state.best_iteration = k
        state.policy.save(policy_path)
    state.stale = 0 if improved else state.stale + 1
    if state.stale >= d.patience and k < config.run.iterations:
        state.stopped_early = True
    state.history.append({"iteration": float(k), "loss": loss, "agreement": held,
                          "balanced_agreement": balanced, "score": score, "beta": beta})

    writer.add_scalar("losses/loss", loss, k)
    writer.add_scalar("losses/learning_rate", lr, k)
    writer.add_scalar("dagger/expert_agreement", held, k)
    writer.add_scalar("dagger/balanced_agreement", balanced, k)
    if not math.isnan(rollout_agreement):
        writer.add_scalar("dagger/rollout_agreement", rollout_agreement, k)
    writer.add_scalar("dagger/beta", beta, k)
    writer.add_scalar("dagger/dataset_size", state.dataset_size, k)
    writer.add_scalar("dagger/episodes", len(state.train_episodes) + len(state.holdout_episodes), k)
    for tag, value in scores.items():
        writer.add_scalar(f"eval/{tag}", value, k)
    for tag, value in state.reference.items():
        writer.add_scalar(f"eval/{tag}", value, k)
    writer.add_scalar("charts/SPS", env_steps / rollout_s if rollout_s > 0 else 0.0, k)
    writer.flush()
    # The checkpoint comes last: once it exists, the iteration's events and policy.pt do too.
    save_checkpoint(checkpoint_path, state)

    say(f"iteration {k}: loss {loss:.4f}  agreement {held:.3f} (balanced {balanced:.3f})  "
        f"score {score:.3f}  "
        f"beta {beta:.3f}  dataset {state.dataset_size} steps  "
        f"SPS {env_steps / max(rollout_s, 1e-9):.0f}"
        + ("  (best)" if state.best_iteration == k else ""))
    if state.stopped_early:
        say(f"stopping early: no improvement for {d.patience} iterations")
