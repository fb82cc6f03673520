"""Training-run configs: TOML files (configs/train/*.toml), checked once when read.

Every key has a default (the dataclasses below, each field documented); a file sets only what
it changes. An unknown section or key, or a value of the wrong type, is a UserError that names
the file, the section and the key, and lists the valid ones. The resolved config (defaults
filled in, paths made absolute) is written into the run folder as config.toml, and `--resume`
reads it back from there.

    [run]        name, seed, workers, ray_address, iterations, env_threads, torch_threads
    [links]      train, train_fallback, vary_delay_ms, vary_queue_bdp, vary_ack, validation,
                 validation_fallback
    [model]      hidden_size, head
    [dagger]     rollouts_per_iteration, num_envs, episode_ms, beta0, beta_decay, exploration,
                 class_weight_power, bptt_len, epochs, batch_size, patience, min_delta,
                 holdout_fraction, oracle_duration_s, oracle_lookbacks, random_start
    [optimizer]  lr, weight_decay, grad_clip, lr_decay
    [eval]       duration_s, runs, baselines, oracle, final_duration_s, leaderboard
    [algorithm]  name ("dagger" or "ppo")
    [ppo]        init_from, num_envs, episode_ms, reward_scale, gamma, lambda_, clip_param,
                 vf_loss_coeff, entropy_coeff, kl_coeff, kl_target, num_epochs, minibatch_size,
                 max_seq_len, patience, min_delta

Links: a string is a link set (a packaged name such as "indigo-synthetic", or a TOML path
relative to the config file); a list holds link specs ("rate_mbps=12,delay_ms=20") and/or
link sets. Relative trace paths in specs are relative to the config file.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import typing
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ccgym.config_fields import (NON_NEGATIVE, POSITIVE, PROBABILITY, SHARES, broken_rule, is_real,
                                 rule)
from ccgym.emulators import _core
from ccgym.emulators.links import data_dir, needs_shared_data, rebase_entry, resolve_entries
from ccgym.emulators.variants import Variation, vary_links
from ccgym.errors import UserError
from ccgym.files import read_toml, unknown_key
from ccgym.oracle.ideal import LOOKBACKS
from ccgym.policies import HEADS

LinkEntries = str | list[str]
ALGORITHMS = ("dagger", "ppo")


# A field's value rule is declared beside it (field metadata, ccgym.config_fields) and checked
# by validate(); types are checked when reading. What relates fields or needs the build is
# checked in validate() too.
FRACTION = rule(lambda v: 0.0 <= v < 1.0, "must be in [0, 1)")
DECAY = DISCOUNT = rule(lambda v: 0.0 < v <= 1.0, "must be in (0, 1]")
WORKERS = rule(lambda v: v >= 0, "must be 0 (serial) or more")
NAME = rule(lambda v: re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", v) and "__" not in v,
            "must be letters, digits and . _ + - (no '__')")
ALGORITHM = rule(lambda v: v in ALGORITHMS, f"must be one of {', '.join(ALGORITHMS)}")
HEAD = rule(lambda v: v in HEADS, f"must be one of {', '.join(HEADS)}")


@dataclass
class RunSection:
    # The run's name: the first part of its folder runs/<name>__<seed>__<time>/.
    name: str = field(default="dagger", metadata=NAME)
    # Seeds everything: the links each rollout worker draws, mixing coins, weights, shuffles.
    seed: int = field(default=1, metadata=NON_NEGATIVE)
    # Parallel rollout workers (Ray tasks, one CPU each); 0 runs rollouts in-process, serially.
    workers: int = field(default=2, metadata=WORKERS)
    # "" starts Ray on this machine with `workers` CPUs; "auto" or "HOST:PORT" joins a cluster.
    ray_address: str = ""
    # DAgger iterations (each: roll out, label, aggregate, retrain, validate).
    iterations: int = field(default=10, metadata=POSITIVE)
    # Simulator threads inside one vectorized environment; 1 when Ray already uses the cores.
    env_threads: int = field(default=1, metadata=POSITIVE)
    # Torch threads of the trainer; a 32-unit LSTM gains nothing from more and loses to overhead.
    torch_threads: int = field(default=1, metadata=POSITIVE)


@dataclass
class LinksSection:
    # Links the policy is trained on (rollouts draw from them).
    train: LinkEntries = "indigo-synthetic"
    # Held-out links scored every iteration and on the final leaderboard.
    validation: LinkEntries = "pantheon-calibrated"
    # Used instead of `validation` when that needs the shared recorded data and it is absent.
    validation_fallback: LinkEntries = ""
    # Used instead of `train` when that needs the shared recorded data and it is absent.
    train_fallback: LinkEntries = ""
    # Each training link crossed with these values (emulators/variants.py); episodes draw a
    # link uniformly, so each value too. Empty keeps each link's own.
    vary_delay_ms: list[float] = field(default_factory=list)   # one-way delay, ms
    vary_queue_bdp: list[float] = field(default_factory=list)  # DropTail, BDPs; 0: infinite
    vary_ack: list[str] = field(default_factory=list)          # "own" or "clean" ACK path


@dataclass
class ModelSection:
    # LSTM units (Indigo used 32).
    hidden_size: int = field(default=32, metadata=POSITIVE)
    # What the policy outputs (policies/lstm.py): "classes", a logit per action learned by
    # cross-entropy, or "log_change", the log window change learned by squared error, the
    # action then the one whose change is closest.
    head: str = field(default="classes", metadata=HEAD)


@dataclass
class DaggerSection:
    # Episodes rolled out per iteration, each on a training link drawn at random.
    rollouts_per_iteration: int = field(default=16, metadata=POSITIVE)
    # Episodes stepped together in one vectorized environment (one rollout task).
    num_envs: int = field(default=8, metadata=POSITIVE)
    # Length of one episode, ms of simulated time (a multiple of STEP_MS).
    episode_ms: float = field(default=10_000.0, metadata=POSITIVE)
    # Probability of executing the expert's action at iteration 2, multiplied by beta_decay
    # every later iteration (iteration 1 always follows the expert: there is no policy yet).
    beta0: float = field(default=1.0, metadata=PROBABILITY)
    beta_decay: float = field(default=0.5, metadata=PROBABILITY)
    # Probability of replacing the executed action by a uniformly random one, at every
    # iteration (noise injection, as DART, Laskey et al. 2017): the expert, once on its
    # ideal window, would hold it forever and the dataset would teach nothing but "hold";
    # perturbed windows show it correcting from every side. States stay labelled with the
    # expert's action.
    exploration: float = field(default=0.1, metadata=PROBABILITY)
    # Cross-entropy weight of each action: (its share of the labels) ^ -class_weight_power,
    # normalized to a mean of 1 per label. 0: unweighted; 1: every action counts equally.
    # The classes head only: the log_change head's squared errors are unweighted.
    # "Hold" dominates the expert's labels; without weights the policy learns only that.
    class_weight_power: float = field(default=0.5, metadata=PROBABILITY)
    # Steps per truncated-BPTT segment; the recurrent state carries over between segments.
    bptt_len: int = field(default=50, metadata=POSITIVE)
    # Passes over the aggregated dataset per iteration.
    epochs: int = field(default=4, metadata=POSITIVE)
    # Episodes per gradient batch. Small batches: many steps per pass over a small dataset.
    batch_size: int = field(default=4, metadata=POSITIVE)
    # Stop after this many iterations in which neither held-out agreement nor validation
    # score improved by more than min_delta.
    patience: int = field(default=6, metadata=POSITIVE)
    min_delta: float = field(default=1e-3, metadata=NON_NEGATIVE)
    # Fraction of each iteration's episodes kept out of training to measure agreement.
    holdout_fraction: float = field(default=0.2, metadata=FRACTION)
    # Length of the oracle's search on each training link that needs one (a trace, a lossy or
    # Poisson link), seconds; 0: as `ccgym eval` runs the link (a trace once). Recorded traces
    # last up to 15 minutes, and varied links each need their own search: a minute suffices.
    oracle_duration_s: float = field(default=0.0, metadata=NON_NEGATIVE)
    # Where the oracle of a training trace may count its RTT: shares of it behind now, the best
    # of them by search (oracle/ideal.py). [1.0] makes an expert that only counts the RTT behind
    # now: every label a function of the link's past, which a sender can learn to read.
    oracle_lookbacks: list[float] = field(default_factory=lambda: list(LOOKBACKS),
                                          metadata=SHARES)
    # The share of training episodes that start from a random window, from one packet to four
    # BDPs, held for up to 3 s (envs/link_env.py start_window): without them no training
    # episode leads to a tiny window on a fast link, where policies then stayed.
    random_start: float = field(default=0.0, metadata=PROBABILITY)


@dataclass
class AlgorithmSection:
    # The trainer: "dagger" (imitation of the oracle, train/dagger.py) or "ppo" (RLlib's PPO on
    # the environment's reward, train/ppo.py).
    name: str = field(default="dagger", metadata=ALGORITHM)


@dataclass
class PpoSection:
    # A run folder (its best policy.pt) or a policy file whose weights the actor starts from,
    # e.g. "runs/quick__1__20250101-120000" (relative to the working directory); "": from
    # scratch. The value head always starts fresh.
    init_from: str = ""
    # Episodes stepped together in one env runner's vectorized environment; each of the
    # `workers` env runners (one if workers = 0) runs one episode per slot every iteration.
    num_envs: int = field(default=16, metadata=POSITIVE)
    # Length of one episode, ms of simulated time (a multiple of STEP_MS).
    episode_ms: float = field(default=10_000.0, metadata=POSITIVE)
    # The documented reward of envs/link_env.py, multiplied by this: returns are about
    # reward / (1 - gamma), and the value head shares the actor's LSTM, so unscaled returns of
    # -10 to -200 would make the value loss drown the policy's gradient in the shared layer.
    reward_scale: float = field(default=0.02, metadata=POSITIVE)
    # The log_change head's logits, -(d_a - r)^2, divided by this for the actions PPO samples
    # (greedy actions, and so the exported policy, are unchanged). At 1 the squared log changes
    # are so small (+10 from 30 packets: 0.08) that every action is about as likely, /2 and x2
    # too; at 0.001 the steps next to r (+-1 packet around 30) are sampled, the far ones not.
    log_change_temperature: float = field(default=0.001, metadata=POSITIVE)
    # Discount and GAE's lambda. 0.98: a horizon of about 50 steps (0.5 s), a few RTTs.
    gamma: float = field(default=0.98, metadata=DISCOUNT)
    lambda_: float = field(default=0.95, metadata=PROBABILITY)
    # PPO's clipped surrogate, value-loss weight, entropy bonus and KL penalty (adaptive, RLlib's).
    clip_param: float = field(default=0.2, metadata=NON_NEGATIVE)
    vf_loss_coeff: float = field(default=0.5, metadata=NON_NEGATIVE)
    entropy_coeff: float = field(default=0.005, metadata=NON_NEGATIVE)
    kl_coeff: float = field(default=0.2, metadata=NON_NEGATIVE)
    kl_target: float = field(default=0.01, metadata=NON_NEGATIVE)
    # Passes over each iteration's batch, and steps per gradient minibatch.
    num_epochs: int = field(default=4, metadata=POSITIVE)
    minibatch_size: int = field(default=4096, metadata=POSITIVE)
    # Steps per truncated-BPTT chunk; each chunk starts from the recurrent state recorded at
    # rollout time.
    max_seq_len: int = field(default=50, metadata=POSITIVE)
    # Stop after this many iterations whose validation score did not improve by min_delta.
    patience: int = field(default=6, metadata=POSITIVE)
    min_delta: float = field(default=1e-3, metadata=NON_NEGATIVE)


@dataclass
class OptimizerSection:
    # Adam's learning rate and decoupled weight decay (AdamW).
    lr: float = field(default=5e-3, metadata=POSITIVE)
    weight_decay: float = field(default=0.0, metadata=NON_NEGATIVE)
    # Gradient norm clip per step; 0 turns it off. LSTMs on long sequences need it.
    grad_clip: float = field(default=1.0, metadata=NON_NEGATIVE)
    # Iteration k trains at lr x lr_decay^(k-1). Every iteration retrains on the whole
    # aggregated dataset; a smaller late step keeps one iteration from undoing the last.
    lr_decay: float = field(default=1.0, metadata=DECAY)


@dataclass
class EvalSection:
    # Simulated seconds of each validation run during training (0: each link's default, a
    # trace once, else 30 s, as ccgym eval runs it).
    duration_s: float = field(default=10.0, metadata=NON_NEGATIVE)
    # Runs (seeds) per validation link.
    runs: int = field(default=1, metadata=POSITIVE)
    # Baselines of the final leaderboard and the eval/best_baseline_score reference line.
    baselines: list[str] = field(default_factory=lambda: [
        "cubic", "bbr", "vegas", "copa", "fixed:20"])
    # Score the oracle on the validation links too (reference line and leaderboard row).
    oracle: bool = True
    # Simulated seconds of each final-leaderboard run (0: each link's default, see ccgym eval).
    final_duration_s: float = field(default=30.0, metadata=NON_NEGATIVE)
    # Print the leaderboard of the trained policy beside the baselines at the end.
    leaderboard: bool = True

    @property
    def validation_length_s(self) -> float | None:
        """duration_s as ccgym eval takes it: None (0 here) is each link's default length."""
        return self.duration_s or None

    @property
    def final_length_s(self) -> float | None:
        """final_duration_s as ccgym eval takes it: None (0 here) is each link's default."""
        return self.final_duration_s or None


@dataclass
class TrainConfig:
    run: RunSection = field(default_factory=RunSection)
    links: LinksSection = field(default_factory=LinksSection)
    model: ModelSection = field(default_factory=ModelSection)
    dagger: DaggerSection = field(default_factory=DaggerSection)
    optimizer: OptimizerSection = field(default_factory=OptimizerSection)
    eval: EvalSection = field(default_factory=EvalSection)
    algorithm: AlgorithmSection = field(default_factory=AlgorithmSection)
    ppo: PpoSection = field(default_factory=PpoSection)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return dataclasses.asdict(self)

    def flat(self) -> dict[str, Any]:
        """section.key -> value, for the hyperparameter table."""
        return {f"{s}.{k}": v for s, keys in self.to_dict().items() for k, v in keys.items()}


SECTIONS: dict[str, type] = {"run": RunSection, "links": LinksSection, "model": ModelSection,
            "dagger": DaggerSection, "optimizer": OptimizerSection, "eval": EvalSection,
            "algorithm": AlgorithmSection, "ppo": PpoSection}


# ---------------------------------------------------------------- reading

def _is_list_of(test: Any) -> Any:
    return lambda value: isinstance(value, list) and all(test(v) for v in value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# A field's type -> (its name in errors, the test a TOML value must pass, the conversion).
_TYPES: dict[Any, tuple[str, Any, Any]] = {
    bool: ("true or false", lambda v: isinstance(v, bool), bool),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool), int),
    float: ("a number", is_real, float),
    str: ("a string", _is_str, str),
    list[str]: ("a list of strings", _is_list_of(_is_str), list),
    list[float]: ("a list of numbers", _is_list_of(is_real),
                  lambda v: [float(x) for x in v]),
    LinkEntries: ("a string or a list of strings",
                  lambda v: _is_str(v) or _is_list_of(_is_str)(v),
                  lambda v: v if isinstance(v, str) else list(v)),
}


def _check_type(value: Any, annotation: Any) -> Any:
    """The value converted to the field's type, or raise TypeError (naming the type)."""
    name, test, convert = _TYPES[annotation]
    if not test(value):
        raise TypeError(name)
    return convert(value)


def _section(section_type: type, table: Any, where: str) -> Any:
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table (a [section] of key = value lines)")
    hints = typing.get_type_hints(section_type)
    valid = [f.name for f in dataclasses.fields(section_type)]
    values = {}
    for key, value in table.items():
        if key not in hints:
            raise unknown_key(where, key, valid)
        try:
            values[key] = _check_type(value, hints[key])
        except TypeError as e:
            raise UserError(f"{where} {key}: must be {e}, got {value!r}") from None
    return section_type(**values)


def parse_config(doc: dict[str, Any], source: str = "config") -> TrainConfig:
    """A TrainConfig from a parsed TOML document; UserError on any unknown or bad key."""
    sections = {}
    for name, table in doc.items():
        if name not in SECTIONS:
            raise unknown_key(source, name, list(SECTIONS))
        sections[name] = _section(SECTIONS[name], table, f"{source}: [{name}]")
    config = TrainConfig(**sections)
    validate(config, source)
    return config


def _read_toml(path: Path) -> dict[str, Any]:
    doc = read_toml(path, "config file")
    if not doc:
        # Training with every default is `ccgym train` with no file; an empty file is a mistake.
        raise UserError(f"{path}: empty config (no sections); give [run], [links], ... as in "
                        "configs/train/quick.toml, or no file for the packaged default")
    return doc


def load_config(path: str | os.PathLike) -> TrainConfig:
    """Reads, checks and resolves a config file (link paths made absolute)."""
    path = Path(path)
    config = parse_config(_read_toml(path), str(path))
    return resolve_paths(config, path.resolve().parent)


def load_packaged_config(name: str) -> TrainConfig:
    """A config shipped in ccgym/configs/train (e.g. "quick")."""
    resource = resources.files("ccgym.configs") / "train" / f"{name}.toml"
    with resources.as_file(resource) as path:
        if not path.is_file():
            raise UserError(f"no packaged training config {name!r}")
        return load_config(path)


# ---------------------------------------------------------------- checks

def validate(config: TrainConfig, source: str) -> None:
    """Value checks (types were checked when reading): each field's rule, then what relates
    fields or needs the build. [ppo] is checked only when it is the algorithm."""
    def bad(key: str, message: str) -> UserError:
        section, name = key.split(".")
        return UserError(f"{source}: [{section}] {name}: {message}")

    for name in SECTIONS:
        if name == "ppo" and config.algorithm.name != "ppo":
            continue
        broken = broken_rule(getattr(config, name))
        if broken:
            raise bad(f"{name}.{broken[0]}", broken[1])
    _check_step(config.dagger.episode_ms, "dagger.episode_ms", bad)
    links = config.links
    for key in ("train", "validation"):
        value = getattr(links, key)
        if not value or (isinstance(value, list) and not all(v.strip() for v in value)):
            raise bad(f"links.{key}", "must name a link set or list link specs")
    if any(not s.strip() for s in config.eval.baselines):
        raise bad("eval.baselines", "has an empty scheme name")
    try:
        Variation(tuple(links.vary_delay_ms), tuple(links.vary_queue_bdp), tuple(links.vary_ack))
    except ValueError as e:
        key, _, message = str(e).partition(": ")
        raise bad(f"links.vary_{key}", message) from None
    if config.algorithm.name == "ppo":
        _validate_ppo(config, bad)


def _check_step(episode_ms: float, key: str, bad: Any) -> None:
    steps = episode_ms / _core.STEP_MS
    if abs(steps - round(steps)) > 1e-9:
        raise bad(key, f"must be a multiple of the step, {_core.STEP_MS:g} ms")


def _validate_ppo(config: TrainConfig, bad: Any) -> None:
    ppo = config.ppo
    _check_step(ppo.episode_ms, "ppo.episode_ms", bad)
    # An iteration's batch: one episode per slot of each env runner (one when workers = 0).
    batch = max(config.run.workers, 1) * ppo.num_envs * round(ppo.episode_ms / _core.STEP_MS)
    if ppo.minibatch_size > batch:
        raise bad("ppo.minibatch_size", f"must be at most an iteration's batch, {batch} steps "
                                        "(workers x num_envs x episode steps), got "
                                        f"{ppo.minibatch_size}")
    if config.optimizer.lr_decay != 1:
        raise bad("optimizer.lr_decay", f"PPO keeps one step size; set 1, got "
                                        f"{config.optimizer.lr_decay}")
    if config.optimizer.weight_decay != 0:
        raise bad("optimizer.weight_decay", "PPO's optimizer (RLlib's Adam) has no weight "
                                            f"decay; set 0, got {config.optimizer.weight_decay}")


# ---------------------------------------------------------------- links

def _absolute_entries(entries: LinkEntries, base: Path) -> LinkEntries:
    if isinstance(entries, str):
        return rebase_entry(entries, base) if entries else entries
    return [rebase_entry(e, base) for e in entries]


def resolve_paths(config: TrainConfig, base: Path) -> TrainConfig:
    links = config.links
    config.links = dataclasses.replace(
        links, train=_absolute_entries(links.train, base),
        train_fallback=_absolute_entries(links.train_fallback, base),
        validation=_absolute_entries(links.validation, base),
        validation_fallback=_absolute_entries(links.validation_fallback, base))
    if config.ppo.init_from:
        # Run folders live under the working directory (runs/), not beside the config file.
        config.ppo.init_from = str(Path(config.ppo.init_from).expanduser().resolve())
    return config


def resolve_link_entries(entries: LinkEntries, what: str) -> list[Any]:
    """The Link objects (ccgym.emulators.links.Link) a [links] entry names. Links given as
    spec strings form a group named after the entry (e.g. "validation"); a link set's links
    keep the set's group."""
    try:
        links = resolve_entries(entries, group=what)
    except UserError as e:
        raise UserError(f"[links] {what}: {e}") from None
    if not links:
        raise UserError(f"[links] {what}: no links")
    return links


def _with_fallback(entries: LinkEntries, fallback: LinkEntries,
                   what: str) -> tuple[list[Any], str | None]:
    """The links of `entries`, or of `fallback` (with a note saying so) when `entries` need
    the shared recorded data and it is absent."""
    data = data_dir()
    data_missing = data is None or not data.is_dir()
    if fallback and data_missing and needs_shared_data(entries):
        note = (f"[links] {what} needs the shared data, which was not found "
                f"(set CCGYM_DATA); using {what}_fallback {fallback!r}")
        return resolve_link_entries(fallback, f"{what}_fallback"), note
    return resolve_link_entries(entries, what), None


def resolve_validation_links(config: TrainConfig) -> tuple[list[Any], str | None]:
    """The validation links, and a note when the fallback replaced them (data absent)."""
    return _with_fallback(config.links.validation, config.links.validation_fallback, "validation")


def resolve_train_links(config: TrainConfig) -> tuple[list[Any], str | None]:
    """The training links, each crossed with the [links] vary_* values, and a note when the
    fallback replaced them (data absent)."""
    links, note = _with_fallback(config.links.train, config.links.train_fallback, "train")
    variation = Variation(tuple(config.links.vary_delay_ms), tuple(config.links.vary_queue_bdp),
                          tuple(config.links.vary_ack))
    return vary_links(links, variation), note


# ---------------------------------------------------------------- writing

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write {value} to TOML here")
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes for what configs hold.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def to_toml(config: TrainConfig, header: str = "") -> str:
    """The config as TOML that parse_config reads back to an equal config."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for section, values in config.to_dict().items():
        if lines:
            lines.append("")
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {_toml_value(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


def with_overrides(config: TrainConfig, source: str = "command line",
                   **changes: Any) -> TrainConfig:
    """A copy with `section.key` changes (e.g. {"run.iterations": 3}), re-validated."""
    doc = config.to_dict()
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        doc[section][key] = value
    return parse_config(doc, source)

