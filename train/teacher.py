"""Policies a training config names: the teacher a distillation imitates ([dagger] teacher) and
the weights a run starts from ([model] init_from).

Both are policy arguments as `ccgym export` takes them (a packaged policy's name such as
generalist, a run folder, a policy file), with or without eval's `lstm:` in front; a relative
path is relative to the working directory (train/config.py makes it absolute).

Distillation is DAgger (train/dagger.py) with the teacher as the expert: every visited state is
labelled by the teacher, which reads the same observations, its recurrent state carried along
each learned flow from the flow's start, all rows of a rollout in one batched call. A
log_change teacher labels with its r, the log window change its action is the closest to
(train/imitation.py says why); a classes teacher with its action. No oracle runs: the rollout
links are resolved without one.
"""

from __future__ import annotations

import numpy as np

from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy, LstmState
from ccgym.policies.policy_path import resolve_policy_path, without_scheme
from ccgym.train.imitation import IGNORE_LABEL
from ccgym.train.sections import TrainConfig


def load_named_policy(value: str, key: str, config: TrainConfig,
                      same_size: bool) -> LstmPolicy:
    """The policy `key` names; UserError (one line naming the key) if it cannot be had or its
    head (and, same_size, its hidden size) differs from the config's [model]."""
    where = f"{key}: "
    path = resolve_policy_path(without_scheme(value), where)
    try:
        policy = LstmPolicy.load(path)
    except (ValueError, RuntimeError, OSError) as e:
        raise UserError(f"{where}{path}: {e}") from None
    model = config.model
    if same_size and policy.hidden_size != model.hidden_size:
        raise UserError(f"{where}{path} has hidden_size {policy.hidden_size}, the config's "
                        f"[model] hidden_size is {model.hidden_size}")
    if policy.head_kind != model.head:
        raise UserError(f"{where}{path} has the {policy.head_kind} head, the config's [model] "
                        f"head is {model.head}")
    return policy


def init_policy(config: TrainConfig) -> LstmPolicy | None:
    """The policy whose weights the run starts from ([model] init_from); None from scratch."""
    if not config.model.init_from:
        return None
    return load_named_policy(config.model.init_from, "[model] init_from", config, same_size=True)


def teacher_policy(config: TrainConfig) -> LstmPolicy | None:
    """The distillation's teacher ([dagger] teacher, any size); None: the oracle labels."""
    if not config.dagger.teacher:
        return None
    return load_named_policy(config.dagger.teacher, "[dagger] teacher", config, same_size=False)


def empty_labels(teacher: LstmPolicy | None, rows: int, steps: int) -> np.ndarray:
    """(rows, steps) labels to fill, as padding of their kind (train/imitation.py)."""
    if teacher is not None and teacher.head_kind == "log_change":
        return np.full((rows, steps), np.nan, dtype=np.float32)
    return np.full((rows, steps), IGNORE_LABEL, dtype=np.int64)


def teach(teacher: LstmPolicy, obs: np.ndarray, state: LstmState | None,
          starting: np.ndarray) -> tuple[np.ndarray, np.ndarray, LstmState]:
    """The teacher on one step of every row: its actions, the labels to record (its log
    changes or its actions) and its next state; starting: the rows whose flow starts here."""
    if teacher.head_kind == "log_change":
        return teacher.act_and_change(obs, state, starting)
    actions, state = teacher.act(obs, state, starting)
    return actions, actions, state

