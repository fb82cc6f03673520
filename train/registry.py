"""The trainers `[algorithm] name` chooses from.

Each entry names the Trainer subclass (train/trainer.py) that implements the algorithm, and the
config sections that are its own: a run validates, prints and logs those beside the shared ones
([run], [links], [model], [optimizer], [eval], [algorithm]) and no other trainer's. The class is
imported only when a run starts, so reading a config never pays for torch or Ray.

A new trainer is one module and one entry here (plus its section in train/config.py if it has
keys of its own).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Registration:
    target: str  # "module:Class" of the Trainer subclass
    sections: tuple[str, ...]  # the config sections only this trainer reads
    summary: str  # one line for the config reference


TRAINERS: dict[str, Registration] = {
    "dagger": Registration("ccgym.train.dagger:Dagger", ("dagger",),
                           "imitation of the oracle (train/dagger.py)"),
    "ppo": Registration("ccgym.train.ppo:Ppo", ("ppo",),
                        "RLlib's PPO on the environment's reward (train/ppo.py)"),
}


def trainer_class(name: str) -> Any:
    """The Trainer subclass registered under name (config validation has checked the name)."""
    module, _, attribute = TRAINERS[name].target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def algorithm_sections() -> set[str]:
    """Every section some trainer owns: a run uses only its own trainer's."""
    return {s for registration in TRAINERS.values() for s in registration.sections}
