"""The training loop, one for every trainer (train/trainer.py, chosen by train/registry.py).

    state = train(config, run_dir, resume=..., extend=..., progress=..., say=...)

Each iteration k = 1, 2, ...: the trainer collects experience and learns from it; the loop
scores its policy on the validation links (train/validation.py), keeps the best one as policy.pt,
counts patience (train/early_stopping.py), logs the iteration to TensorBoard and the terminal,
and writes checkpoint.pt last: once the checkpoint exists, the iteration's events and policy.pt
do too. A resumed run reads the checkpoint and continues exactly where it stopped.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.links import Link
from ccgym.errors import UserError
from ccgym.interrupts import sigterm_as_interrupt
from ccgym.policies.lstm import atomic_torch_save, load_torch_file
from ccgym.train import curriculum
from ccgym.train.config import RunLinks, TrainConfig
from ccgym.train.early_stopping import EarlyStopping
from ccgym.train.registry import trainer_class
from ccgym.train.run_folder import RunFolder, hyperparameter_table
from ccgym.train.share_validation import held_share, validate_shares
from ccgym.train.trainer import Figures, Progress, Trainer
from ccgym.train.validation import check_config, reference_scores, summarize_rows

CHECKPOINT_FORMAT = "ccgym-checkpoint"
CHECKPOINT_VERSION = 3  # 3: one format for every trainer: the loop's state and the trainer's


@dataclass
class RunState:
    """Everything a run needs to continue after its last finished iteration."""

    trainer: Trainer  # the algorithm's own state (weights, optimizer, dataset)
    early_stopping: EarlyStopping  # the best iteration (policy.pt) and the patience count
    iteration: int = 0  # last finished iteration (0: none)
    reference: dict[str, float] = field(default_factory=dict)  # oracle, best baseline
    env_steps: int = 0
    history: list[dict[str, float]] = field(default_factory=list)
    curriculum: list[str] = field(default_factory=list)  # links its rounds found, as specs


def new_state(config: TrainConfig) -> RunState:
    trainer = trainer_class(config.algorithm.name, config.links.shared)
    return RunState(trainer(config), _early_stopping(config))


def _early_stopping(config: TrainConfig, saved: dict[str, Any] | None = None) -> EarlyStopping:
    run = config.run
    if saved is None:
        return EarlyStopping(run.patience, run.min_delta)
    return EarlyStopping.from_dict(saved, run.patience, run.min_delta)


# ---------------------------------------------------------------- checkpoints

def save_checkpoint(path: Path, state: RunState) -> None:
    """Atomically: a run killed while writing keeps the previous checkpoint."""
    atomic_torch_save({
        "format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
        "algorithm": state.trainer.name, "iteration": state.iteration,
        "early_stopping": state.early_stopping.to_dict(), "reference": dict(state.reference),
        "env_steps": state.env_steps, "history": list(state.history),
        "curriculum": list(state.curriculum), "trainer": state.trainer.state_dict(),
    }, path)


def load_checkpoint(path: Path, config: TrainConfig) -> RunState:
    try:
        data = load_torch_file(path, "checkpoint")
    except OSError as e:
        raise UserError(f"{path}: cannot read the checkpoint: {e.strerror}") from None
    except ValueError as e:
        raise UserError(str(e)) from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise UserError(f"{path}: not a ccgym checkpoint of this version (an older ccgym's "
                        "runs cannot be resumed; start a new run)")
    if data.get("version") != CHECKPOINT_VERSION:
        raise UserError(f"{path}: checkpoint version {data.get('version')} is not supported")
    if data.get("algorithm") != config.algorithm.name:
        raise UserError(f"{path}: a {data.get('algorithm')} checkpoint, but the config's "
                        f"[algorithm] name is {config.algorithm.name}")
    try:
        state = new_state(config)
        state.trainer.load_state_dict(data["trainer"], str(path))
        state.early_stopping = _early_stopping(config, data["early_stopping"])
        state.iteration, state.env_steps = int(data["iteration"]), int(data["env_steps"])
        state.reference, state.history = dict(data["reference"]), list(data["history"])
        state.curriculum = [str(spec) for spec in data.get("curriculum", [])]
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError) as e:
        # The right format, damaged inside (or written by a ccgym whose layout differs).
        raise UserError(f"{path}: a damaged checkpoint ({type(e).__name__}: "
                        f"{' '.join(str(e).split())[:200]})") from None
    return state


def _start(config: TrainConfig, folder: RunFolder, resume: bool, extend: bool,
           say: Callable[[str], None]) -> RunState:
    """A new state, or with resume the one in the folder's checkpoint (if any). A resumed run
    that had stopped early continues only with extend (a new --iterations); its patience
    starts over."""
    if not (resume and folder.checkpoint.is_file()):
        return new_state(config)
    state = load_checkpoint(folder.checkpoint, config)
    if state.iteration >= config.run.iterations:
        raise UserError(f"--resume {folder.path}: the run has finished its {state.iteration} "
                        f"iterations; give --iterations N (more than {state.iteration}) to "
                        "train it further")
    say(f"resuming {folder.path} after iteration {state.iteration}")
    if state.early_stopping.stopped:
        if extend:
            state.early_stopping.restart()
        else:
            say(f"the run had stopped early (no improvement for "
                f"{state.early_stopping.patience} iterations); give --iterations to continue it")
    return state


# ---------------------------------------------------------------- the loop

def train(config: TrainConfig, run_dir: Path, *, resume: bool = False,
          extend: bool = False, progress: bool = True,
          say: Callable[[str], None] | None = None, links: RunLinks | None = None) -> RunState:
    """Runs (or continues) config's trainer in run_dir up to config.run.iterations.

    resume: continue from the run folder's checkpoint when there is one. extend: also continue
    a run that had stopped early (its patience counter starts over). links: what
    check_config(config) returned, where the caller checked it already; else it runs here.
    """
    from tqdm import tqdm

    say = say or (lambda text: tqdm.write(text))
    folder = RunFolder(run_dir)
    folder.path.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(config.run.torch_threads)
    state = _start(config, folder, resume, extend, say)
    if state.early_stopping.stopped:
        return state
    links = check_config(config) if links is None else links
    with (_open_run(config, links, folder, state, progress, say) as run, sigterm_as_interrupt(),
          state.trainer.session(run.train_links)):
        if state.curriculum:  # resumed after a curriculum round: its links are trained on
            state.trainer.use_train_links(_mixed(run, state))
        while state.iteration < config.run.iterations and not state.early_stopping.stopped:
            _iteration(run, state)
    return state


@dataclass
class _Run:
    """What every iteration of one run uses, set up once by train()."""

    config: TrainConfig
    folder: RunFolder
    train_links: list[Link]
    validation_links: list[Any]
    share_links: list[Any]  # where shares beside [eval] share_against are validated
    writer: Any  # TensorBoard's SummaryWriter on the run folder
    progress: bool
    say: Callable[[str], None]


@contextlib.contextmanager
def _open_run(config: TrainConfig, links: RunLinks, folder: RunFolder, state: RunState,
              progress: bool, say: Callable[[str], None]) -> Iterator[_Run]:
    """Opens the TensorBoard events; a new run logs its hyperparameters and scores the
    reference lines once (the checkpoint carries them after)."""
    for note in links.notes:
        say(note)
    writer = folder.events_writer(purge_step=state.iteration + 1)
    try:
        if state.iteration == 0:
            table = hyperparameter_table(config)
            writer.add_text("hyperparameters", table, 0)
            say("hyperparameters:\n" + table)
            say(f"{len(links.train)} training links, {len(links.validation)} validation links")
            state.reference = reference_scores(config, links.validation, say)
        yield _Run(config, folder, links.train, links.validation, links.share, writer, progress,
                   say)
        writer.flush()
    finally:
        writer.close()


def _iteration(run: _Run, state: RunState) -> None:
    """Collect, learn, validate; then keep the best policy, log and checkpoint."""
    from tqdm import tqdm

    trainer, k = state.trainer, state.iteration + 1
    if curriculum.due(run.config.curriculum, state.iteration):
        _curriculum_round(run, state)
    with tqdm(total=trainer.stages(k) + 1, desc=f"iteration {k}/{run.config.run.iterations}",
              unit="stage", disable=not run.progress, leave=False) as bar:
        progress = Progress(bar)
        started = time.perf_counter()
        rollouts = trainer.collect(k, progress)
        rollout_s = time.perf_counter() - started
        figures = trainer.learn(k, rollouts, progress)
        progress.stage("validation")
        scores = summarize_rows(trainer.validate(run.validation_links))
        if run.share_links:
            progress.stage("validation beside competitors")
            scores.update(validate_shares(trainer.policy, run.share_links, run.config.eval,
                                          run.config.run.seed))
        progress.advance()
    state.env_steps += rollouts.env_steps
    steps_per_second = rollouts.env_steps / rollout_s if rollout_s > 0 else 0.0
    _record(run, state, k, figures, scores, steps_per_second)


def _mixed(run: _Run, state: RunState) -> list[Link]:
    found = [link_from_spec(spec) for spec in state.curriculum]
    return curriculum.mix(run.train_links, found, run.config.curriculum.weight)


def _curriculum_round(run: _Run, state: RunState) -> None:
    """A search with the current policy; its worst links join the training mix."""
    k = state.iteration + 1
    number = state.iteration // run.config.curriculum.every
    run.say(f"curriculum round {number}: searching {run.config.curriculum.space} with the "
            "current policy")
    found = curriculum.run_round(run.config, run.folder.path, state.trainer.policy, number)
    state.curriculum = [*state.curriculum, *found.specs]
    state.trainer.use_train_links(_mixed(run, state))
    share = curriculum.share(run.train_links, state.curriculum, run.config.curriculum.weight)
    for tag, value in (("curriculum/gap", found.gap), ("curriculum/links", len(state.curriculum)),
                       ("curriculum/share", share)):
        run.writer.add_scalar(tag, value, k)
    run.say(f"curriculum round {number}: gap {found.gap:.3f} on the worst link kept; "
            f"{len(state.curriculum)} links found so far, {share:.0%} of the episodes")


def _record(run: _Run, state: RunState, k: int, figures: Figures, scores: dict[str, float],
            steps_per_second: float) -> None:
    """Keeps the policy if it is the best so far, logs the iteration, writes the checkpoint."""
    score = scores["score"]
    state.iteration = k
    ev = run.config.eval
    held = held_share(scores, ev.share_floor, ev.share_ceiling)
    watched = {**figures.watched, **({"shares/held": held} if ev.selects_by_share else {})}
    if state.early_stopping.update(k, score, held, **watched):
        state.trainer.policy.save(run.folder.policy)
    shares = {tag: value for tag, value in scores.items() if tag.startswith("shares/")
              and tag.count("/") == 1}
    state.history.append({"iteration": float(k), "score": score, **shares, **figures.history})
    scalars = {**figures.scalars, "charts/SPS": steps_per_second,
               "charts/env_steps": float(state.env_steps)}
    scalars.update({f"eval/{tag}": value for tag, value in scores.items()})
    scalars.update({f"eval/{tag}": value for tag, value in state.reference.items()})
    for tag, value in scalars.items():
        if not math.isnan(value):  # e.g. no rollout agreement before the policy first acts
            run.writer.add_scalar(tag, value, k)
    run.writer.flush()
    save_checkpoint(run.folder.checkpoint, state)

    beside = "".join(f"  {tag.removeprefix('shares/')} {value:.2f}"
                     for tag, value in shares.items() if tag.startswith("shares/beside_"))
    run.say(f"iteration {k}: {figures.text}  score {score:.3f}{beside}  "
            f"SPS {steps_per_second:.0f}" + ("  (best)" if state.early_stopping.best_iteration == k else ""))
    if state.early_stopping.stopped and k < run.config.run.iterations:
        run.say(f"stopping early: no improvement for {run.config.run.patience} iterations")
