"""What every trainer does around its iterations: resolve the links, open the run folder's
TensorBoard events, log the hyperparameters and the reference lines once, close at the end.

    with open_session(config, folder, state, say) as session:
        while state.iteration < config.run.iterations and not state.early_stopping.stopped:
            ... session.train_specs, session.validation_links, session.writer ...

`state` is the trainer's own (DaggerState, PpoState): it needs `iteration` (the last finished
one) and `reference` (filled here on a new run, carried by the checkpoint after).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ccgym.train.config import TrainConfig, resolve_train_links, resolve_validation_links
from ccgym.train.run_folder import RunFolder, hyperparameter_table
from ccgym.train.validation import check_config, reference_scores


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
