"""The sections of a training config and every key's default, value rule and description.

Each field says once what it does (its "doc", which `ccgym train --describe-config` prints) and
what values it takes (its rule, ccgym.config_fields); train/config.py reads, checks and writes
configs from these declarations. [run], [links], [model], [optimizer], [eval] and [algorithm]
are every trainer's; [dagger] and [ppo] each belong to one trainer (train/registry.py), and a
run uses only its own trainer's.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, get_type_hints

from ccgym.config_fields import (NON_NEGATIVE, POSITIVE, PROBABILITY, SHARES, described,
                                 is_count, is_number, rule, same_field)
from ccgym.emulators._core import OBSERVATION_VERSION, STEP_MS
from ccgym.envs.competitors import entries_problem, parse_entry
from ccgym.envs.config import OBSERVATION_VERSIONS, EnvConfig
from ccgym.flags import MAX_DURATION_S, MAX_RUNS, MAX_SEED
from ccgym.measure.metrics import SHARE_RAMP_MS
from ccgym.oracle.ideal import LOOKBACKS
from ccgym.policies import HEADS
from ccgym.train.registry import TRAINERS, algorithm_sections

LinkEntries = str | list[str]

FRACTION = rule(lambda v: 0.0 <= v < 1.0, "must be in [0, 1)")
DECAY = DISCOUNT = rule(lambda v: 0.0 < v <= 1.0, "must be in (0, 1]")
WORKERS = rule(lambda v: v >= 0, "must be 0 (serial) or more")
# A run's name, seed and start time name its folder: short enough for any file system's 255
# bytes (NAME__SEED__YYYYmmdd-HHMMSS-N), checked before the folder is made.
MAX_RUN_NAME = 100
NAME = rule(lambda v: re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", v) and "__" not in v
            and len(v) <= MAX_RUN_NAME,
            f"must be letters, digits and . _ + - (no '__'), at most {MAX_RUN_NAME} of them")
SEED = rule(lambda v: is_count(v) and v <= MAX_SEED, f"must be an integer in 0..{MAX_SEED}")
# Sizes that allocate: beyond these a value is a typo (an extra zero) that would ask for more
# memory than a machine has (hidden_size 100000: 160 GB of LSTM weights and their gradients).
MAX_HIDDEN_SIZE = 1024  # Indigo used 32; 1024 units are 17 MB of weights
MAX_NUM_ENVS = 4096     # episodes in one vectorized environment; the configs use 8-10
HIDDEN_SIZE = rule(lambda v: is_count(v) and 1 <= v <= MAX_HIDDEN_SIZE,
                   f"must be an integer in 1..{MAX_HIDDEN_SIZE} (LSTM units; a larger model "
                   "is a typo here)")
NUM_ENVS = EPISODES = rule(lambda v: is_count(v) and 1 <= v <= MAX_NUM_ENVS,
                           f"must be an integer in 1..{MAX_NUM_ENVS}")
MAX_THREADS = 256  # threads of one process: more than any machine here has cores
THREADS = rule(lambda v: is_count(v) and 1 <= v <= MAX_THREADS,
               f"must be an integer in 1..{MAX_THREADS}")
RUNS = rule(lambda v: is_count(v) and 1 <= v <= MAX_RUNS, f"must be an integer in 1..{MAX_RUNS}")
EPISODE_MS = rule(lambda v: is_number(v) and 0 < v <= MAX_DURATION_S * 1000,
                  f"must be in (0, {MAX_DURATION_S * 1000:g}] ms (an hour)")
ALGORITHM = rule(lambda v: v in TRAINERS, f"must be one of {', '.join(TRAINERS)}")
LIST_OF_STRINGS = rule(lambda v: isinstance(v, list) and len(v) > 0
                       and all(isinstance(e, str) and e.strip() for e in v),
                       "must be a non-empty list of non-empty strings")
HEAD = rule(lambda v: v in HEADS, f"must be one of {', '.join(HEADS)}")


@dataclass
class RunSection:
    """What every trainer's loop uses: the run's name and seed, its iterations and patience,
    its rollout workers and episodes."""

    name: str = described("dagger", "The run's name: the first part of its folder "
                          "runs/<name>__<seed>__<time>/.", NAME)
    seed: int = described(1, "Seeds everything: the links each rollout worker draws, mixing "
                          "coins, weights, shuffles.", SEED)
    workers: int = described(2, "Parallel rollout workers (Ray tasks or env runners, one CPU "
                             "each); 0 runs rollouts in-process, serially.", WORKERS)
    ray_address: str = described("", '"" starts Ray on this machine with `workers` CPUs; '
                                 '"auto" or "HOST:PORT" joins a cluster.')
    iterations: int = described(10, "Training iterations (each: roll out, learn, validate).",
                                POSITIVE)
    patience: int = described(6, "Stop after this many iterations in which no watched figure "
                              "(the validation score; DAgger's held-out agreement too) improved "
                              "by more than min_delta.", POSITIVE)
    min_delta: float = described(1e-3, "The least change of a watched figure that counts as "
                                 "progress.", NON_NEGATIVE)
    num_envs: int = described(8, "Episodes stepped together in one vectorized environment (one "
                              "rollout task, or one env runner's slots).", NUM_ENVS)
    episode_ms: float = described(10_000.0, "Length of one episode, ms of simulated time (a "
                                  "multiple of the step, 10 ms).", EPISODE_MS)
    env_threads: int = described(1, "Simulator threads inside one vectorized environment; 1 "
                                 "when Ray already uses the cores.", THREADS)
    torch_threads: int = described(1, "Torch threads of the trainer; a 32-unit LSTM gains "
                                   "nothing from more and loses to overhead.", THREADS)

    def check(self, config: TrainConfig) -> tuple[str, str] | None:
        """What a single field's rule cannot say: (key, "must ...") when broken."""
        steps = self.episode_ms / STEP_MS
        if abs(steps - round(steps)) > 1e-9:
            return "run.episode_ms", f"must be a multiple of the step, {STEP_MS:g} ms"
        return None


@dataclass
class LinksSection:
    """The links trained on and validated on. A string is a link set (a packaged name such as
    "indigo-synthetic", or a TOML path relative to the config file); a list holds link specs
    ("rate_mbps=12,delay_ms=20") and/or link sets."""

    train: LinkEntries = described("indigo-synthetic", "Links the policy is trained on "
                                   "(rollouts draw from them).")
    validation: LinkEntries = described("pantheon-calibrated", "Held-out links scored every "
                                        "iteration and on the final leaderboard.")
    validation_fallback: LinkEntries = described("", "Used instead of `validation` when that "
                                                 "needs the shared recorded data and it is "
                                                 "absent.")
    train_fallback: LinkEntries = described("", "Used instead of `train` when that needs the "
                                            "shared recorded data and it is absent.")
    vary_delay_ms: list[float] = described([], "Each training link crossed with these one-way "
                                           "delays, ms (emulators/variants.py); episodes draw a "
                                           "link uniformly, so each value too. Empty keeps "
                                           "each link's own.")
    vary_queue_bdp: list[float] = described([], "Each training link crossed with these "
                                            "DropTail buffers, in BDPs; 0: infinite.")
    vary_ack: list[str] = described([], 'Each training link crossed with these ACK paths: '
                                    '"own" or "clean".')
    # What competes, as the environment takes it (envs/config.py declares and describes these).
    competitors: list[str] = same_field(EnvConfig, "competitors")
    competitor_starts: list[str] = same_field(EnvConfig, "competitor_starts")
    competitor_stagger_ms: float = same_field(EnvConfig, "competitor_stagger_ms")
    competitor_stop: float = same_field(EnvConfig, "competitor_stop")

    @property
    def shared(self) -> bool:
        """Some training episode has company on the link (entries checked: see check)."""
        return any(parse_entry(entry) for entry in self.competitors)

    def check(self, config: TrainConfig) -> tuple[str, str] | None:
        """Each competitors entry parsed (the message names the bad part), and a trainer
        that runs shared links."""
        problem = entries_problem(self.competitors)
        if problem:
            return "links.competitors", problem
        name = config.algorithm.name
        if self.shared and name in TRAINERS and not TRAINERS[name].shared_target:
            return "links.competitors", (f'the {name} trainer runs one flow alone: set ["none"] '
                                         f"or [algorithm] name = \"ppo\", got "
                                         f"{self.competitors!r}")
        return None


@dataclass
class CurriculumSection:
    """Genet's curriculum: every few iterations, `ccgym search` with the current policy finds
    the links of a space where it falls furthest behind the best classic baseline, and the
    worst of them join the training links."""

    every: int = described(0, "Every how many iterations a search runs (after iterations "
                           "every, 2 x every, ...); 0: no curriculum.", NON_NEGATIVE)
    space: str = described("default", "The link space searched: a packaged space's name or a "
                           "TOML file, relative to the config file (configs/spaces/default.toml "
                           "documents the keys). Searched less its competitors: a training "
                           "link shares its episodes with what [links] competitors say.")
    trials: int = described(30, "Links tried in each search.", POSITIVE)
    seeds: int = described(2, "Runs (seeds) of each scheme on each link tried.", POSITIVE)
    keep: int = described(2, "The worst links of each search that join the training links.",
                          POSITIVE)
    weight: float = described(0.3, "The share of training episodes drawn from the links found "
                              "(all rounds' together); the rest from [links] train.", FRACTION)
    baselines: list[str] = described(["cubic", "bbr", "vegas", "copa"], "The classic schemes "
                                     "whose best the policy is measured against.",
                                     LIST_OF_STRINGS)
    duration_s: float = described(10.0, "Simulated seconds of each search run.", POSITIVE)


@dataclass
class ModelSection:
    """The LSTM policy (policies/lstm.py)."""

    hidden_size: int = described(32, "LSTM units (Indigo used 32).", HIDDEN_SIZE)
    head: str = described("classes", 'What the policy outputs: "classes", a logit per action '
                          'learned by cross-entropy, or "log_change", the log window change '
                          "learned by squared error, the action then the one whose change is "
                          "closest.", HEAD)
    observation_version: int = described(OBSERVATION_VERSION, "What the policy observes "
                                         "(policies/cpp/features.hh): 4, or 6, which adds "
                                         "readings that tell a competitor's standing queue from "
                                         "the flow's own. DAgger only.", OBSERVATION_VERSIONS)
    init_from: str = described("", "A policy whose weights the run starts from (of this "
                               "hidden_size and head): a packaged policy's name (generalist), "
                               "a run folder (its best policy.pt) or a policy file, relative to "
                               'the working directory; "": from scratch. PPO\'s value head '
                               "always starts fresh.")


@dataclass
class OptimizerSection:
    """The optimizer of every trainer (AdamW; PPO's is RLlib's Adam)."""

    lr: float = described(5e-3, "Adam's learning rate.", POSITIVE)
    weight_decay: float = described(0.0, "Decoupled weight decay (AdamW).", NON_NEGATIVE)
    grad_clip: float = described(1.0, "Gradient norm clip per step; 0 turns it off. LSTMs on "
                                 "long sequences need it.", NON_NEGATIVE)
    lr_decay: float = described(1.0, "Iteration k trains at lr x lr_decay^(k-1): a smaller "
                                "late step keeps one iteration from undoing the last.", DECAY)


@dataclass
class EvalSection:
    """Validation during training, its reference lines, and the final leaderboard."""

    duration_s: float = described(10.0, "Simulated seconds of each validation run during "
                                  "training (0: each link's default, a trace once, else 30 s, "
                                  "as ccgym eval runs it).", NON_NEGATIVE)
    runs: int = described(1, "Runs (seeds) per validation link.", RUNS)
    baselines: list[str] = described(["cubic", "bbr", "vegas", "copa", "fixed:20"],
                                     "Baselines of the final leaderboard and the "
                                     "eval/best_baseline_score reference line.")
    oracle: bool = described(True, "Score the oracle on the validation links too (reference "
                             "line and leaderboard row).")
    final_duration_s: float = described(30.0, "Simulated seconds of each final-leaderboard run "
                                        "(0: each link's default, see ccgym eval).",
                                        NON_NEGATIVE)
    leaderboard: bool = described(True, "Print the leaderboard of the trained policy beside "
                                  "the baselines at the end.")
    share_against: list[str] = described([], "Competitors the policy is also validated beside "
                                         '(e.g. ["cubic", "bbr"]; [] none), each first on '
                                         "share_links, the policy share_stagger_s later: "
                                         "eval/shares/ (train/share_validation.py).")
    share_links: LinkEntries = described("shared-bottleneck", "Links of the share validation, "
                                         "as [links] validation.")
    share_duration_s: float = described(20.0, "Seconds of each share run; shares count from "
                                        "the policy's start plus 5 s.", POSITIVE)
    share_stagger_s: float = described(5.0, "When the policy joins its competitor, s.",
                                       NON_NEGATIVE)
    share_floor: float = described(0.0, "The best iteration (policy.pt) is the one with the "
                                   "highest lowest share beside share_against capped at this "
                                   "floor, then the highest score; 0: by score alone.",
                                   PROBABILITY)
    share_ceiling: float = described(1.0, "With share_floor, a band: the held share loses what "
                                     "the highest share beside a competitor exceeds this "
                                     "ceiling by (a policy that takes the link from cubic is "
                                     "not sharing it); 1: no ceiling.", PROBABILITY)

    def check(self, config: TrainConfig) -> tuple[str, str] | None:
        """The share runs measure something, and a floor has shares to judge."""
        least_s = self.share_stagger_s + SHARE_RAMP_MS / 1000.0
        if any(not s.strip() for s in self.share_against):
            return "eval.share_against", "has an empty scheme name"
        if self.share_against and (not self.share_links or not all(
                e.strip() for e in ([] if isinstance(self.share_links, str) else self.share_links))):
            return "eval.share_links", "must name a link set or list link specs"
        if self.share_against and self.share_duration_s <= least_s:
            return "eval.share_duration_s", (f"must be more than share_stagger_s + 5 s (the "
                                             f"ramp), {least_s:g}, got {self.share_duration_s:g}")
        if self.share_floor > 0 and not self.share_against:
            return "eval.share_floor", "needs competitors: set share_against, or a floor of 0"
        if self.share_ceiling < 1 and not self.share_against:
            return "eval.share_ceiling", "needs competitors: set share_against, or a ceiling of 1"
        if self.share_ceiling < self.share_floor:
            return "eval.share_ceiling", (f"must be at least share_floor ({self.share_floor:g}), "
                                          f"got {self.share_ceiling:g}")
        return None

    @property
    def selects_by_share(self) -> bool:
        """Whether the shares take part in choosing the best iteration (a floor or ceiling)."""
        return self.share_floor > 0 or self.share_ceiling < 1

    @property
    def validation_length_s(self) -> float | None:
        """duration_s as ccgym eval takes it: None (0 here) is each link's default length."""
        return self.duration_s or None

    @property
    def final_length_s(self) -> float | None:
        """final_duration_s as ccgym eval takes it: None (0 here) is each link's default."""
        return self.final_duration_s or None


@dataclass
class AlgorithmSection:
    """Which trainer runs (train/registry.py)."""

    name: str = described("dagger", "The trainer, one of train/registry.py's: "
                          + "; ".join(f'"{name}", {r.summary}' for name, r in TRAINERS.items())
                          + ".", ALGORITHM)


@dataclass
class DaggerSection:
    """DAgger's own keys (train/dagger.py)."""

    rollouts_per_iteration: int = described(16, "Episodes rolled out per iteration, each on a "
                                            "training link drawn at random.", EPISODES)
    beta0: float = described(1.0, "Probability of executing the expert's action at iteration "
                             "2, multiplied by beta_decay every later iteration (iteration 1 "
                             "always follows the expert: there is no policy yet).", PROBABILITY)
    beta_decay: float = described(0.5, "See beta0.", PROBABILITY)
    exploration: float = described(0.1, "Probability of replacing the executed action by a "
                                   "uniformly random one, at every iteration (noise injection, "
                                   "as DART, Laskey et al. 2017): the expert, once on its ideal "
                                   "window, would hold it forever and the dataset would teach "
                                   'nothing but "hold"; perturbed windows show it correcting '
                                   "from every side. States stay labelled with the expert's "
                                   "action.", PROBABILITY)
    class_weight_power: float = described(0.5, "Cross-entropy weight of each action: (its "
                                          "share of the labels) ^ -class_weight_power, "
                                          "normalized to a mean of 1 per label. 0: unweighted; "
                                          "1: every action counts equally. The classes head "
                                          'only. "Hold" dominates the expert\'s labels; without '
                                          "weights the policy learns only that.", PROBABILITY)
    bptt_len: int = described(50, "Steps per truncated-BPTT segment; the recurrent state "
                              "carries over between segments.", POSITIVE)
    epochs: int = described(4, "Passes over the aggregated dataset per iteration.", POSITIVE)
    batch_size: int = described(4, "Episodes per gradient batch. Small batches: many steps per "
                                "pass over a small dataset.", POSITIVE)
    holdout_fraction: float = described(0.2, "Fraction of each iteration's episodes kept out "
                                        "of training to measure agreement.", FRACTION)
    oracle_duration_s: float = described(0.0, "Length of the oracle's search on each training "
                                         "link that needs one (a trace, a lossy or Poisson "
                                         "link), seconds; 0: as `ccgym eval` runs the link (a "
                                         "trace once). Varied links each need their own "
                                         "search: a minute suffices.", NON_NEGATIVE)
    oracle_lookbacks: list[float] = described(list(LOOKBACKS), "Where the oracle of a training "
                                              "trace may count its RTT: shares of it behind "
                                              "now, the best of them by search "
                                              "(oracle/ideal.py). [1.0]: an expert whose every "
                                              "label is a function of the link's past, which a "
                                              "sender can learn to read.", SHARES)
    teacher: str = described("", "A trained policy that labels the rollouts in place of the "
                             "oracle, and whose actions the expert's share of steps executes: "
                             "distillation (train/teacher.py), e.g. of an ensemble into one "
                             "network. A packaged policy's name (generalist, or lstm:generalist "
                             "as eval writes it), a run folder or a policy file, relative to "
                             "the working directory; its head must be [model] head, its size "
                             'any. A log_change teacher\'s labels are its log window change. "": '
                             "the oracle (the shared expert on shared links).")
    random_start: float = described(0.0, "The share of training episodes that start from a "
                                    "random window, from one packet to four BDPs, held for up "
                                    "to 3 s (envs/engine.py start_window): without them no "
                                    "episode leads to a tiny window on a fast link.",
                                    PROBABILITY)


@dataclass
class PpoSection:
    """PPO's own keys (train/ppo.py, on RLlib)."""

    reward_scale: float = described(0.02, "The reward of envs/engine.py multiplied by this: "
                                    "the value head shares the actor's LSTM, so unscaled "
                                    "returns of -10 to -200 would make the value loss drown "
                                    "the policy's gradient.", POSITIVE)
    log_change_temperature: float = described(0.001, "The log_change head's logits divided by "
                                              "this for the actions PPO samples (greedy "
                                              "actions are unchanged). At 1 every action is "
                                              "about as likely; at 0.001 the steps next to the "
                                              "policy's change are sampled, the far ones not.",
                                              POSITIVE)
    gamma: float = described(0.98, "Discount. 0.98: a horizon of about 50 steps (0.5 s), a few "
                             "RTTs.", DISCOUNT)
    lambda_: float = described(0.95, "GAE's lambda.", PROBABILITY)
    clip_param: float = described(0.2, "PPO's clipped surrogate's clip.", NON_NEGATIVE)
    vf_loss_coeff: float = described(0.5, "Value-loss weight.", NON_NEGATIVE)
    entropy_coeff: float = described(0.005, "Entropy bonus.", NON_NEGATIVE)
    kl_coeff: float = described(0.2, "Initial KL penalty (adaptive, RLlib's); 0: none.",
                                NON_NEGATIVE)
    kl_target: float = described(0.01, "The KL the adaptive penalty aims at.", NON_NEGATIVE)
    num_epochs: int = described(4, "Passes over each iteration's batch.", POSITIVE)
    minibatch_size: int = described(4096, "Steps per gradient minibatch (at most an "
                                    "iteration's batch).", POSITIVE)
    max_seq_len: int = described(50, "Steps per truncated-BPTT chunk; each chunk starts from "
                                 "the recurrent state recorded at rollout time.", POSITIVE)
    fair_share_weight: float = described(0.0, "On shared links ([links] competitors), each "
                                         "learned flow's step reward gains w x exp(-((rate - "
                                         "fair) / (sigma x fair))^2), w this key, rate the "
                                         "flow's delivery rate and fair the link's capacity "
                                         "over its active flows (a Gaussian around the fair "
                                         "share, after Sage), before reward_scale. 0: each "
                                         "flow's own reward only.", NON_NEGATIVE)
    fair_share_sigma: float = described(0.25, "The Gaussian's width as a share of the fair "
                                        "share (see fair_share_weight).", POSITIVE)

    def check(self, config: TrainConfig) -> tuple[str, str] | None:
        """What relates [ppo] to other sections: (key, "must ...") when broken."""
        steps = round(config.run.episode_ms / STEP_MS)
        # An iteration's batch: one episode per slot of each env runner (one when workers = 0).
        batch = max(config.run.workers, 1) * config.run.num_envs * steps
        if self.minibatch_size > batch:
            return "ppo.minibatch_size", (f"must be at most an iteration's batch, {batch} steps "
                                          "(workers x num_envs x episode steps), got "
                                          f"{self.minibatch_size}")
        if config.model.observation_version != OBSERVATION_VERSION:
            return "model.observation_version", (f"PPO observes version {OBSERVATION_VERSION} "
                                                 "only; set it or train with DAgger")
        if config.optimizer.lr_decay != 1:
            return "optimizer.lr_decay", ("PPO keeps one step size; set 1, got "
                                          f"{config.optimizer.lr_decay}")
        if config.optimizer.weight_decay != 0:
            return "optimizer.weight_decay", ("PPO's optimizer (RLlib's Adam) has no weight "
                                              "decay; set 0, got "
                                              f"{config.optimizer.weight_decay}")
        return None


@dataclass
class TrainConfig:
    run: RunSection = field(default_factory=RunSection)
    links: LinksSection = field(default_factory=LinksSection)
    curriculum: CurriculumSection = field(default_factory=CurriculumSection)
    model: ModelSection = field(default_factory=ModelSection)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    eval: EvalSection = field(default_factory=EvalSection)
    algorithm: AlgorithmSection = field(default_factory=AlgorithmSection)
    dagger: DaggerSection = field(default_factory=DaggerSection)
    ppo: PpoSection = field(default_factory=PpoSection)

    def used_sections(self) -> list[str]:
        """The shared sections and this run's trainer's own, in file order."""
        own = TRAINERS[self.algorithm.name].sections if self.algorithm.name in TRAINERS else ()
        others = algorithm_sections() - set(own)
        return [name for name in SECTIONS if name not in others]

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)

    def flat(self) -> dict[str, Any]:
        """section.key -> value of the sections this run uses, for the hyperparameter table."""
        doc = self.to_dict()
        return {f"{s}.{k}": v for s in self.used_sections() for k, v in doc[s].items()}


# Each section's dataclass by name, in file order (the fields' types are their default factories).
SECTIONS: dict[str, type] = get_type_hints(TrainConfig)

# Keys that moved, for the error an older config meets.
MOVED = {f"{algorithm}.{key}": f"run.{key}" for algorithm in ("dagger", "ppo")
         for key in ("num_envs", "episode_ms", "patience", "min_delta")}
MOVED["ppo.init_from"] = "model.init_from"  # DAgger starts from a policy too
# Moved keys at the value that sets nothing, as every run folder's config.toml written before
# the move lists them (a resolved config holds every key): read as absent, so that such runs
# still resume and package.
MOVED_UNSET = {"ppo.init_from": ""}
