"""What every trainer does around its iterations: start or resume its state, resolve the links,
open the run folder's TensorBoard events, log the hyperparameters and the reference lines once,
close at the end.

    state = start_state(config, folder, resume, extend, say, new=..., load=...)
    with open_session(config, folder, state, say) as session:
        while state.iteration < config.run.iterations and not state.early_stopping.stopped:
            ... session.train_specs, session.validation_links, session.writer ...

`state` is the trainer's own (DaggerState, PpoState): it needs `iteration` (the last finished
one), `early_stopping` (train.early_stopping) and `reference` (filled here on a new run, carried
by the checkpoint after).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ccgym.errors import UserError
from ccgym.train.config import TrainConfig, resolve_train_links, resolve_validation_links
from ccgym.train.run_folder import RunFolder, hyperparameter_table
from ccgym.train.validation import check_config, reference_scores


State = TypeVar("State")


def start_state(config: TrainConfig, folder: RunFolder, resume: bool, extend: bool,
                say: Callable[[str], None], new: Callable[[], State],
                load: Callable[[Path], State]) -> State:
    """A new state, or with resume the one in the folder's checkpoint (if any). A resumed run
    that had stopped early continues only with extend (a new --iterations); its patience
    starts over."""
    if not (resume and folder.checkpoint.is_file()):
        return new()
    state: Any = load(folder.checkpoint)
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


@dataclass
class Session:
    train_specs: list[str]
    validation_links: list[Any]
    writer: Any  # TensorBoard's SummaryWriter on the run folder


@contextlib.contextmanager
def open_session(config: TrainConfig, folder: RunFolder, state: Any,
                 say: Callable[[str], None]) -> Iterator[Session]:
    check_config(config)
    train_links, train_note = resolve_train_links(config)
    validation_links, note = resolve_validation_links(config)
    for text in (train_note, note):
        if text:
            say(text)
    writer = folder.events_writer(purge_step=state.iteration + 1)
    try:
        if state.iteration == 0:
            table = hyperparameter_table(config)
            writer.add_text("hyperparameters", table, 0)
            say("hyperparameters:\n" + table)
            say(f"{len(train_links)} training links, {len(validation_links)} validation links")
            state.reference = reference_scores(config, validation_links, say)
        yield Session([link.spec for link in train_links], validation_links, writer)
        writer.flush()
    finally:
        writer.close()
