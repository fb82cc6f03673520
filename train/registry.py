"""The trainers `[algorithm] name` chooses from.

Each entry names the Trainer subclass (train/trainer.py) that implements the algorithm, and the
config sections that are its own: a run validates, prints and logs those beside the shared ones
([run], [links], [model], [optimizer], [eval], [algorithm]) and no other trainer's. The class is
imported only when a run starts, so reading a config never pays for torch or Ray.

A new trainer is one module and one entry here (plus its section in train/sections.py, and its
field in TrainConfig there, if it has keys of its own; docs/extending.md).
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
    # "module:Class" of its variant for shared links ([links] competitors other than "none");
    # "": the trainer runs one flow alone.
    shared_target: str = ""


TRAINERS: dict[str, Registration] = {
    "dagger": Registration("ccgym.train.dagger:Dagger", ("dagger",),
                           "imitation of the oracle (train/dagger.py; on shared links every "
                           "learned flow labelled by the shared expert, oracle/shared.py)",
                           shared_target="ccgym.train.dagger:Dagger"),
    "ppo": Registration("ccgym.train.ppo:Ppo", ("ppo",),
                        "RLlib's PPO on the environment's reward (train/ppo.py; on shared "
                        "links multi-agent, train/ppo_multi.py)",
                        shared_target="ccgym.train.ppo_multi:PpoMulti"),
}


def trainer_class(name: str, shared: bool = False) -> Any:
    """The Trainer subclass registered under name (config validation has checked the name);
    shared: its variant for shared links (validation has checked there is one)."""
    registration = TRAINERS[name]
    target = registration.shared_target if shared else registration.target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def algorithm_sections() -> set[str]:
    """Every section some trainer owns: a run uses only its own trainer's."""
    return {s for registration in TRAINERS.values() for s in registration.sections}
