"""Genet's curriculum in training ([curriculum]): every few iterations a search of a link space
with the current policy, whose worst links join the training mix at a fixed weight.

A round is `ccgym search` run as its own process on the policy saved beside the run
(curriculum/round-N-policy.pt), seeded by the run's seed and the round, so a resumed run
repeats a round it had not finished exactly. The search is the verb a user runs, not a copy
of it; it sits above the trainer, so the trainer calls it rather than importing it. The round's
found links (curriculum/round-N.toml), every trial (round-N.json) and the space searched (the
configured one less its competitors: space.toml) stay in the run folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ccgym.emulators.link_space import NO_COMPETITOR, find_space, load_space
from ccgym.emulators.links import load_link_set
from ccgym.envs.scoring import validate_simulated_schemes
from ccgym.errors import UserError
from ccgym.files import atomic_write_text, read_toml, toml_value
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.sections import CurriculumSection, TrainConfig

FOLDER = "curriculum"  # inside the run folder
T = TypeVar("T")


@dataclass
class Round:
    specs: list[str]  # the links found, as specs
    gap: float        # the worst kept link's gap (the lesser of its trial and confirmed gaps)


def due(section: CurriculumSection, finished: int) -> bool:
    """Whether a round runs before the iteration after `finished` iterations."""
    return section.every > 0 and finished > 0 and finished % section.every == 0


def check(section: CurriculumSection) -> None:
    """A bad space or baseline fails before training, not at the first round."""
    if not section.every:
        return
    load_space(find_space(section.space))
    for scheme in section.baselines:
        try:
            validate_simulated_schemes([scheme])
        except UserError as e:
            raise UserError(f"[curriculum] baselines: {scheme!r}: {e}") from None


def run_round(config: TrainConfig, run_dir: Path, policy: LstmPolicy, number: int) -> Round:
    """Round `number` (1, 2, ...): `ccgym search` with `policy` (saved beside the run)."""
    section = config.curriculum
    folder = run_dir / FOLDER
    folder.mkdir(exist_ok=True)
    policy_file = folder / f"round-{number}-policy.pt"
    policy.save(policy_file)
    space = alone_space(section.space, folder)
    found, trials = folder / f"round-{number}.toml", folder / f"round-{number}.json"
    argv = [sys.executable, "-m", "ccgym.cli", "search", "--scheme", f"lstm:{policy_file}",
            "--space", str(space), "--baselines", ",".join(section.baselines),
            "--trials", str(section.trials), "--seeds", str(section.seeds),
            "--seed", str(config.run.seed + number), "--keep", str(section.keep),
            "--duration-s", f"{section.duration_s:g}", "-o", str(found), "--json", str(trials),
            "--no-progress"]
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise UserError(f"[curriculum] round {number}: ccgym search failed: {last}")
    document = json.loads(trials.read_text())
    gap = next(t["kept_gap"] for t in document["trials"] if t["trial"] == document["kept"][0])
    return Round([link.spec for link in load_link_set(found)], gap)


def alone_space(name_or_path: str, folder: Path) -> Path:
    """The space as written, less its competitors (folder/space.toml): a training link is a
    spec, which carries no competitor, so a round searches the links as they will be trained
    on ([links] competitors say what shares them in an episode)."""
    doc = read_toml(find_space(name_or_path), "link space")
    doc["competitors"] = [NO_COMPETITOR]
    path = folder / "space.toml"
    atomic_write_text(path, "".join(f"{key} = {toml_value(value)}\n" for key, value in doc.items()))
    return path


def mix(train: Sequence[T], found: Sequence[T], weight: float) -> list[T]:
    """The training links with the found ones repeated so that an episode, which draws a link
    uniformly, draws a found one with about `weight` probability."""
    if not found or weight == 0:
        return list(train)
    repeats = max(1, round(weight * len(train) / ((1 - weight) * len(found))))
    return [*train, *[link for link in found for _ in range(repeats)]]


def share(train: Sequence[Any], found: Sequence[Any], weight: float) -> float:
    """The share of episodes on found links that mix() gives."""
    mixed = mix(train, found, weight)
    return (len(mixed) - len(train)) / len(mixed)  # a run always has training links
