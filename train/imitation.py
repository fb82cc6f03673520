"""Imitation learning of the LSTM policy from labelled episodes: DAgger's learning step
(train/dagger.py), whatever the expert.

An episode's labels are of one of two kinds:
- actions (int64, IGNORE_LABEL past the episode's end): the expert's action at each step, the
  oracle's or a teacher policy's; the classes head learns them by (weighted) cross-entropy,
  the log_change head by the squared error to the log change each action makes;
- log window changes (float32, NaN past the end): a log_change teacher's r at each step
  (train/teacher.py), learned by a log_change student as they are. They carry what the
  teacher's action drops: where between two actions it leaned, which the teacher itself
  would weigh the next time (an ensemble's mean r sits between its members' actions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ccgym.policies.lstm import LstmPolicy, LstmState, action_log_changes

IGNORE_LABEL = -100  # cross-entropy's ignore_index: padding past an episode's end

Episode = tuple[np.ndarray, np.ndarray]  # observations (T, OBS_DIM) float32, labels (T,)


def is_labelled(labels: torch.Tensor) -> torch.Tensor:
    """Where a step carries a label, of either kind (padding is not)."""
    if labels.is_floating_point():
        return ~torch.isnan(labels)
    return labels != IGNORE_LABEL


def label_actions(obs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The expert's action at each step (int64; meaningless where not labelled): the label
    itself, or the action whose log change is the closest to a teacher's, as its act chose."""
    if not labels.is_floating_point():
        return labels
    return (-(action_log_changes(obs) - labels.unsqueeze(-1)) ** 2).argmax(-1)


def batch(episodes: Sequence[Episode]) -> tuple[torch.Tensor, torch.Tensor]:
    """Episodes padded to the longest: obs (B, T, D) and labels (B, T), padded as their kind."""
    longest = max(len(labels) for _, labels in episodes)
    dim = episodes[0][0].shape[1]
    kind = episodes[0][1].dtype
    obs = np.zeros((len(episodes), longest, dim), dtype=np.float32)
    labels = np.full((len(episodes), longest), np.nan if kind.kind == "f" else IGNORE_LABEL,
                     dtype=kind)
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
    """(logits (N, A), action labels (N,)) -> the loss summed over the labelled steps: the
    weighted cross-entropy for the classes head; for the log_change head, whose logits are
    minus the squared distance of its change to each action's, the squared error to the
    expert's (unweighted)."""
    if policy.head_kind == "classes":
        return nn.CrossEntropyLoss(weight=weights, ignore_index=IGNORE_LABEL, reduction="sum")

    def squared_error(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        labelled = labels != IGNORE_LABEL
        return -logits[labelled].gather(1, labels[labelled].unsqueeze(1)).sum()

    return squared_error


def segment_loss(policy: LstmPolicy, obs: torch.Tensor, labels: torch.Tensor,
                 state: LstmState | None,
                 action_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
                 ) -> tuple[torch.Tensor, LstmState]:
    """The loss summed over one segment's labelled steps, and the state after it."""
    if labels.is_floating_point():
        changes, state = policy.log_changes(obs, state)
        labelled = is_labelled(labels)
        return ((changes - labels)[labelled] ** 2).sum(), state
    logits, state = policy(obs, state)
    return action_loss(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)), state


def train_epochs(policy: LstmPolicy, optimizer: torch.optim.Optimizer,
                 episodes: Sequence[Episode], epochs: int, batch_size: int, bptt_len: int,
                 grad_clip: float, rng: np.random.Generator,
                 weights: torch.Tensor | None = None,
                 on_epoch: Callable[[float], object] | None = None) -> float:
    """Truncated BPTT over whole episodes; returns the last epoch's mean (weighted) loss per
    label."""
    action_loss = imitation_loss(policy, weights)
    policy.train()
    mean_loss = math.nan
    for _ in range(epochs):
        order = rng.permutation(len(episodes))
        total, count = 0.0, 0
        for first in range(0, len(order), batch_size):
            obs, labels = batch([episodes[i] for i in order[first:first + batch_size]])
            state = None
            for s in range(0, labels.shape[1], bptt_len):
                seg_labels = labels[:, s:s + bptt_len]
                valid = int(is_labelled(seg_labels).sum())
                loss, state = segment_loss(policy, obs[:, s:s + bptt_len], seg_labels, state,
                                           action_loss)
                # The state flows into the next segment, the gradient does not (truncation).
                state = (state[0].detach(), state[1].detach())
                if valid == 0:
                    continue
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
    """(agreement, balanced agreement) of the greedy policy with the expert's actions, fed the
    recorded observations: the share of steps where it picks the expert's action, and the
    mean of that share over the actions the expert took (which "hold" cannot dominate)."""
    policy.eval()
    hits = np.zeros(policy.num_actions)
    totals = np.zeros(policy.num_actions)
    for first in range(0, len(episodes), batch_size):
        obs, labels = batch(episodes[first:first + batch_size])
        logits, _ = policy(obs)
        valid = is_labelled(labels)
        chosen = logits.argmax(-1)[valid].numpy()
        expected = label_actions(obs, labels)[valid].numpy()
        totals += np.bincount(expected, minlength=policy.num_actions)
        hits += np.bincount(expected[chosen == expected], minlength=policy.num_actions)
    if totals.sum() == 0:
        return math.nan, math.nan
    taken = totals > 0
    return float(hits.sum() / totals.sum()), float(np.mean(hits[taken] / totals[taken]))
