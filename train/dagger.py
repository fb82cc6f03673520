"""DAgger (Ross, Gordon and Bagnell, 2011) for the LSTM policy, as Indigo trained it.

Each iteration i = 1, 2, ...:
  1. roll out episodes on the training links. Every step executes the expert's action with
     probability beta_i, else the policy's: beta_1 = 1 (there is no policy yet), then
     beta_i = beta0 * beta_decay^(i-1);
  2. label every visited state with the expert's action: the oracle's, from the environment,
     or a trained teacher's ([dagger] teacher: distillation, train/teacher.py);
  3. aggregate: add the episodes to the dataset (a fraction held out to measure agreement);
  4. retrain the LSTM on all episodes with truncated backpropagation through time
     (train/imitation.py), the recurrent state carried across segments;
  5. measure held-out agreement with the expert and the policy's score on the validation
     links, keep the best policy (policy.pt), write a checkpoint;
  6. stop when neither figure has improved for `patience` iterations.

Steps 1 and 2 are Dagger.collect, 3 and 4 Dagger.learn; the loop every trainer shares
(train/loop.py) does step 5 and 6: validation, best-keeping, patience, checkpoints, TensorBoard.
Rollouts run on the RolloutPool (train/pool.py), one Engine per task (N simulations stepped
together in C++); everything a rollout needs travels in a RolloutTask, as on a cluster node.

On shared links ([links] competitors other than ["none"]) every learned flow of a simulation
(flow_0 and one per "self") is driven by the same expert-policy mixture, each with its own
coins, labelled by the shared expert (oracle/shared.py: the classic competitors' mean packets
in flight, or the ideal window split among the learned flows), and aggregated as an episode of
its own, from its flow's start to its stop. Alone, the rollouts are ccgym/Link-v0's.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from gymnasium.utils import seeding

from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.emulators.links import Link
from ccgym.envs.engine import Engine
from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import TrainConfig, env_config
from ccgym.train.imitation import Episode, agreement, class_weights, train_epochs
from ccgym.train.pool import RolloutPool
from ccgym.train.teacher import empty_labels, init_policy, teach, teacher_policy
from ccgym.train.trainer import Figures, Progress, Rollouts, Trainer

# Independent random streams derived from (seed, iteration, stream): a resumed run draws
# the same numbers as an uninterrupted one without saving generator states mid-iteration.
SPLIT_STREAM = 1
SHUFFLE_STREAM = 2
MIXING_STREAM = 3


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
    num_envs: int  # simulations; each holds one learned flow per "self" competitor more
    env_config: EnvConfig  # for ccgym.envs.engine.Engine (links resolved, competitors, ...)
    seed: int  # simulation i draws its episode from np_random(seed + i)
    beta: float
    policy: dict[str, Any] | None  # LstmPolicy.to_file_dict(); None: the expert acts alone
    exploration: float = 0.0  # probability of a uniformly random action instead
    threads: int = 1
    teacher: dict[str, Any] | None = None  # the expert, LstmPolicy.to_file_dict(); None: oracle


@dataclass
class RolloutResult:
    # E episodes: one per learned flow (row of the Engine), each from its flow's start
    obs: np.ndarray        # (E, T, OBS_DIM) float32
    labels: np.ndarray     # (E, T) the expert's label at each observation (train/imitation.py)
    lengths: np.ndarray    # (E,) steps recorded per episode (T unless it started late or
                           # stopped early; 0: the flow never sent)
    policy_agreed: int     # steps where the policy's own choice equalled the expert's
    policy_steps: int      # steps where the policy made a choice
    env_steps: int         # steps recorded, every learned flow's (= sum of lengths)
    seconds: float

    def episodes(self) -> list[Episode]:
        return [(self.obs[e, :n].copy(), self.labels[e, :n].copy())
                for e, n in enumerate(self.lengths) if n > 0]


def run_rollout(task: RolloutTask) -> RolloutResult:
    """Rolls out one batch of simulations; runs in a Ray worker or in-process.

    Every learned flow of every simulation is a row of the Engine (envs/engine.py):
    flow_0 and one more per "self" competitor, each driven by the same expert-policy mixture
    with its own coins, labelled by the shared expert, and recorded as an episode of its own
    from its start to its stop. Alone on the link (competitors ["none"]) simulation i is
    the LinkEnv episode of seed + i, as VecLinkEnv ran it.
    """
    torch.set_num_threads(1)  # a worker owns one CPU; torch's own pool would oversubscribe it
    start = time.perf_counter()
    links = Engine(task.num_envs, task.env_config, task.threads)
    for i in range(task.num_envs):
        links.reset_sim(i, seeding.np_random(task.seed + i)[0])
    rows = links.first_step()
    steps, n = task.env_config.episode_steps, links.num_rows
    policy = LstmPolicy.from_file_dict(task.policy) if task.policy is not None else None
    teacher = LstmPolicy.from_file_dict(task.teacher) if task.teacher is not None else None
    coins = np.random.default_rng([task.seed, task.worker_index, MIXING_STREAM])
    obs_buf = np.zeros((n, steps, rows.obs.shape[1]), dtype=np.float32)
    labels = empty_labels(teacher, n, steps)
    lengths = np.zeros(n, dtype=np.int64)
    started = np.zeros(n, dtype=bool)  # the flow has sent (and the policy acted on it)
    ended = np.zeros(n, dtype=bool)    # the flow has stopped: its episode is complete
    state = policy.initial_state(n) if policy is not None else None
    teacher_state = None
    agreed = chosen = 0
    for t in range(steps):
        # A row records while its flow sends: from its first step's end to its stop.
        ended |= started & ~rows.active
        alive = rows.active & ~ended
        record = np.flatnonzero(alive)
        starting = alive & ~started
        if teacher is not None:
            expert, label, teacher_state = teach(teacher, rows.obs, teacher_state, starting)
        else:
            expert = label = links.expert_actions()
        obs_buf[record, lengths[record]] = rows.obs[record]
        labels[record, lengths[record]] = label[record]
        lengths[record] += 1
        if policy is not None:
            mine, state = policy.act(rows.obs, state, starting)
            agreed += int(np.sum((mine == expert) & alive))
            chosen += int(np.sum(alive))
            use_expert = coins.random(n) < task.beta
            actions = np.where(use_expert, expert, mine)
        else:
            actions = expert
        started |= alive
        if task.exploration > 0:
            explore = coins.random(n) < task.exploration
            actions = np.where(explore, coins.integers(0, _core.NUM_ACTIONS, n), actions)
        if t == steps - 1:
            break  # the last observation is labelled; the step after it is not needed
        rows = links.step(np.where(alive, actions, _core.HOLD_ACTION))
    return RolloutResult(obs_buf, labels, lengths, agreed, chosen, int(lengths.sum()),
                         time.perf_counter() - start)


def make_tasks(config: TrainConfig, env: EnvConfig, iteration: int,
               policy: LstmPolicy | None, teacher: dict[str, Any] | None = None
               ) -> list[RolloutTask]:
    """The iteration's rollouts in env (env_config: its links resolved), in tasks of at most
    num_envs episodes;
    teacher: the expert's file dict (None: the oracle)."""
    d = config.dagger
    per_task, count = config.run.num_envs, d.rollouts_per_iteration
    tasks_per_iteration = math.ceil(count / per_task)
    beta = beta_for(iteration, d.beta0, d.beta_decay)
    policy_dict = policy.to_file_dict() if policy is not None and beta < 1.0 else None
    tasks = []
    for k in range(tasks_per_iteration):
        n = min(per_task, count - k * per_task)
        # RLlib's seed + worker_index, the index unique over the run; run_rollout draws simulation
        # i from (task seed + i), so workers num_envs apart give every simulation its own seed.
        worker_index = (iteration - 1) * tasks_per_iteration + k
        seed = config.run.seed + worker_index * per_task
        tasks.append(RolloutTask(worker_index, n, env, seed,
                                 beta if policy_dict is not None else 1.0, policy_dict,
                                 d.exploration, config.run.env_threads, teacher))
    return tasks


# ---------------------------------------------------------------- the trainer

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


class Dagger(Trainer):
    """DAgger on the loop (train/loop.py): the policy, its optimizer and the aggregated
    dataset; rollouts on the shared RolloutPool."""

    name = "dagger"

    def __init__(self, config: TrainConfig) -> None:
        super().__init__(config)
        torch.manual_seed(config.run.seed)
        model = config.model
        self._policy = LstmPolicy(hidden_size=model.hidden_size, head=model.head,
                                  observation_version=model.observation_version)
        start = init_policy(config)
        if start is not None:
            self._policy.load_state_dict(start.state_dict())
        teacher = teacher_policy(config)
        self._teacher = teacher.to_file_dict() if teacher is not None else None
        self.optimizer = make_optimizer(self._policy, config)
        self.train_episodes: list[Episode] = []
        self.holdout_episodes: list[Episode] = []
        self._pool: RolloutPool | None = None
        self._env: EnvConfig | None = None  # the rollouts' environment, its links resolved

    @classmethod
    def check_config(cls, config: TrainConfig) -> None:
        init_policy(config)  # a missing or mismatched policy fails before the run folder
        teacher_policy(config)

    @property
    def policy(self) -> LstmPolicy:
        return self._policy

    @property
    def dataset_size(self) -> int:
        return sum(len(y) for _, y in self.train_episodes + self.holdout_episodes)

    @contextlib.contextmanager
    def session(self, train_links: Sequence[Link]) -> Iterator[None]:
        run = self.config.run
        with RolloutPool(run.workers, run.ray_address) as pool:
            self._pool, self._env = pool, env_config(self.config, train_links)
            try:
                yield
            finally:
                self._pool = None

    def use_train_links(self, train_links: Sequence[Link]) -> None:
        self._env = env_config(self.config, train_links)  # from the next collect

    def stages(self, iteration: int) -> int:
        d = self.config.dagger
        return math.ceil(d.rollouts_per_iteration / self.config.run.num_envs) + d.epochs

    def collect(self, iteration: int, progress: Progress) -> Rollouts:
        """Rolls out the iteration's episodes, the expert acting with probability beta."""
        assert self._pool is not None and self._env is not None, "collect runs inside session()"
        d = self.config.dagger
        tasks = make_tasks(self.config, self._env, iteration,
                           self.policy if iteration > 1 else None, self._teacher)
        progress.stage(f"rollouts, beta={beta_for(iteration, d.beta0, d.beta_decay):.3f}")
        results = self._pool.run(run_rollout, tasks, lambda _: progress.advance())
        return Rollouts(results, sum(r.env_steps for r in results))

    def learn(self, iteration: int, rollouts: Rollouts, progress: Progress) -> Figures:
        """Aggregates the episodes, retrains on the whole dataset, measures held-out
        agreement."""
        config, d = self.config, self.config.dagger
        rollout_agreement = self._aggregate(iteration, rollouts.data)
        progress.stage("training")
        lr = learning_rate(config, iteration)
        set_learning_rate(self.optimizer, lr)
        weigh = d.class_weight_power > 0 and self.policy.head_kind == "classes"
        weights = (class_weights(self.train_episodes, self.policy.num_actions,
                                 d.class_weight_power) if weigh else None)
        loss = train_epochs(
            self.policy, self.optimizer, self.train_episodes, d.epochs, d.batch_size,
            d.bptt_len, config.optimizer.grad_clip,
            np.random.default_rng([config.run.seed, iteration, SHUFFLE_STREAM]), weights,
            on_epoch=lambda value: progress.advance(f"loss={value:.4f}"))
        agreed, balanced = agreement(self.policy, self.holdout_episodes or self.train_episodes)
        beta = beta_for(iteration, d.beta0, d.beta_decay)
        return Figures(
            text=(f"loss {loss:.4f}  agreement {agreed:.3f} (balanced {balanced:.3f})  "
                  f"beta {beta:.3f}  dataset {self.dataset_size} steps"),
            scalars={"losses/loss": loss, "losses/learning_rate": lr,
                     "dagger/expert_agreement": agreed, "dagger/balanced_agreement": balanced,
                     "dagger/rollout_agreement": rollout_agreement, "dagger/beta": beta,
                     "dagger/dataset_size": self.dataset_size,
                     "dagger/episodes": len(self.train_episodes) + len(self.holdout_episodes)},
            history={"loss": loss, "agreement": agreed, "balanced_agreement": balanced, "beta": beta},
            watched={"agreement": agreed})

    def _aggregate(self, iteration: int, results: Sequence[RolloutResult]) -> float:
        """Adds the rollouts' episodes to the dataset, split into training and held-out ones;
        the policy's agreement with the expert during the rollouts (NaN before it acts)."""
        episodes = [e for r in results for e in r.episodes()]
        rng = np.random.default_rng([self.config.run.seed, iteration, SPLIT_STREAM])
        new_train, new_holdout = _split(episodes, self.config.dagger.holdout_fraction, rng)
        self.train_episodes.extend(new_train)
        self.holdout_episodes.extend(new_holdout)
        chosen = sum(r.policy_steps for r in results)
        return sum(r.policy_agreed for r in results) / chosen if chosen else math.nan

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.policy.to_file_dict(),
            "optimizer": self.optimizer.state_dict(),
            "dataset": {"train": _episodes_to_tensors(self.train_episodes),
                        "holdout": _episodes_to_tensors(self.holdout_episodes)},
            # Rollouts, splits and shuffles draw from generators derived from (seed, iteration),
            # so torch's generator (weight init) is the only state to carry.
            "rng": {"torch": torch.get_rng_state()},
        }

    def load_state_dict(self, data: dict[str, Any], where: str) -> None:
        policy = LstmPolicy.from_file_dict(data["model"], where=where)
        if policy.hidden_size != self.config.model.hidden_size:
            raise UserError(f"{where}: the checkpoint's hidden_size {policy.hidden_size} "
                            f"differs from the config's {self.config.model.hidden_size}")
        self._policy = policy
        self.optimizer = make_optimizer(policy, self.config)
        self.optimizer.load_state_dict(data["optimizer"])
        torch.set_rng_state(data["rng"]["torch"])
        self.train_episodes = _episodes_from_tensors(data["dataset"]["train"])
        self.holdout_episodes = _episodes_from_tensors(data["dataset"]["holdout"])
