"""What a training algorithm implements; train/loop.py runs every one of them the same way.

After stable-baselines3's split of learn() into collect_rollouts() and train(): the loop owns the
iterations, validation, the best policy (policy.pt), early stopping, checkpoints, the progress
bar and TensorBoard; an algorithm only gathers experience and learns from it:

    check_config(config)      checks that need its code, before a run folder exists
    Trainer(config)           a fresh state (weights seeded from [run] seed)
    session(links)            what it holds open for the run (a Ray pool, RLlib's algorithm),
                              on the training links (Link objects; env_config resolves them)
    stages(iteration)         how many progress-bar steps collect and learn advance
    collect(iteration, bar)   the iteration's experience (Rollouts)
    learn(iteration, rollouts, bar) -> Figures   the policy updated on it
    policy                    what validation scores and policy.pt keeps
    validate(links)           validation rows (default: the policy alone on each link)
    state_dict() / load_state_dict(data, where)   its part of checkpoint.pt

Its randomness must derive from ([run] seed, iteration) or travel in state_dict, so that a
resumed run continues exactly as an uninterrupted one. A multi-agent trainer fits the same
shape: its rollouts hold several flows' episodes, its policy is the one shared module, and it
may validate on shared links by overriding validate.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ccgym.emulators.links import Link
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import TrainConfig
from ccgym.train.validation import validate_policy


@dataclass
class Rollouts:
    """One iteration's experience, as collect() hands it to learn()."""

    data: Any  # the trainer's own (episodes, results of rollout tasks)
    env_steps: int  # simulated steps taken, for charts/SPS and the run's total


@dataclass
class Figures:
    """What learn() reports of an iteration, beside the validation score the loop adds."""

    text: str  # the trainer's part of the printed line ("loss 0.1234  agreement 0.812 ...")
    scalars: dict[str, float] = field(default_factory=dict)  # TensorBoard tag -> value
    history: dict[str, float] = field(default_factory=dict)  # the history entry's own keys
    # Figures besides the score whose progress resets the patience count (higher is better).
    watched: dict[str, float] = field(default_factory=dict)


class Progress:
    """An iteration's progress bar (tqdm) as a trainer sees it."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def stage(self, text: str) -> None:
        """Says what runs now."""
        self._bar.set_postfix_str(text)

    def advance(self, text: str | None = None) -> None:
        """One step done; text replaces what the bar says."""
        self._bar.update()
        if text is not None:
            self._bar.set_postfix_str(text)


class Trainer(ABC):
    """An algorithm on the loop (train/loop.py): it implements what the module docstring
    lists; check_config, session and validate have defaults."""

    # "format" of its checkpoint.pt part; a checkpoint of another trainer is refused.
    name: ClassVar[str] = ""

    def __init__(self, config: TrainConfig) -> None:
        self.config = config

    @classmethod
    def check_config(cls, config: TrainConfig) -> None:
        """Raises UserError on what only the trainer's code can check (before a run folder
        exists, so that a bad config leaves nothing behind). By default there is nothing
        beyond the config's own checks."""
        return None

    @contextlib.contextmanager
    def session(self, train_links: Sequence[Link]) -> Iterator[None]:
        """Holds what the iterations share open (workers, pools) around them."""
        yield

    def use_train_links(self, train_links: Sequence[Link]) -> None:
        """Trains on these links from the next collect on (the curriculum's mix). A trainer
        whose workers hold their links from the session's start cannot."""
        raise NotImplementedError(f"the {self.name} trainer keeps its links for the whole run")

    @abstractmethod
    def stages(self, iteration: int) -> int:
        raise NotImplementedError

    @abstractmethod
    def collect(self, iteration: int, progress: Progress) -> Rollouts:
        raise NotImplementedError

    @abstractmethod
    def learn(self, iteration: int, rollouts: Rollouts, progress: Progress) -> Figures:
        raise NotImplementedError

    @property
    @abstractmethod
    def policy(self) -> LstmPolicy:
        raise NotImplementedError

    def validate(self, links: Sequence[Any]) -> list[dict[str, Any]]:
        """Leaderboard rows of the policy on the validation links (as `ccgym eval` scores)."""
        ev = self.config.eval
        return validate_policy(self.policy, links, ev.validation_length_s, ev.runs,
                               self.config.run.seed)

    @abstractmethod
    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    @abstractmethod
    def load_state_dict(self, data: dict[str, Any], where: str) -> None:
        raise NotImplementedError

