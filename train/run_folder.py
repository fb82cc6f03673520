"""A training run's folder, runs/<name>__<seed>__<YYYYmmdd-HHMMSS>/, and what it holds.

The one module that knows the layout (CleanRL's): every trainer, `ccgym train` and
`ccgym report` find the files through it. Only the policy's name is kept below the trainer, in
policies/policy_path.py, where `lstm:RUN_DIR`, `ccgym export RUN_DIR` and `ccgym run` resolve a
run folder to its policy.

    config.toml      the resolved config (`--resume` reads it back)
    checkpoint.pt    the trainer's state after its last finished iteration (written atomically)
    policy.pt        the best policy so far (what `lstm:RUN_DIR` and `ccgym export RUN_DIR` load)
    leaderboard.txt  the final table on the validation links
    events.out.*     TensorBoard events (`tensorboard --logdir runs`)

Imports stay light (no torch): `ccgym report` reads run folders through here.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ccgym.errors import UserError
from ccgym.files import atomic_write_json, atomic_write_text
from ccgym.policies.policy_path import POLICY_FILE
from ccgym.train.config import load_config, to_toml

CONFIG_FILE = "config.toml"
CHECKPOINT_FILE = "checkpoint.pt"
LEADERBOARD_FILE = "leaderboard.txt"
MACHINE_FILE = "machine.json"
# Libraries whose numerics reach the policy: a different version can change the weights.
NUMERIC_LIBRARIES = ("torch", "numpy", "ray", "gymnasium")


@dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def config(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT_FILE

    @property
    def policy(self) -> Path:
        return self.path / POLICY_FILE

    @property
    def leaderboard(self) -> Path:
        return self.path / LEADERBOARD_FILE

    @classmethod
    def create(cls, out: Path, name: str, seed: int) -> RunFolder:
        """A new folder out/<name>__<seed>__<YYYYmmdd-HHMMSS>, with a suffix if that second is
        taken (two runs started together)."""
        base = out / f"{name}__{seed}__{time.strftime('%Y%m%d-%H%M%S')}"
        path, n = base, 1
        while True:
            try:
                path.mkdir(parents=True)
                return cls(path)
            except FileExistsError:
                n += 1
                path = base.with_name(f"{base.name}-{n}")

    @classmethod
    def existing(cls, path: str | os.PathLike, flag: str = "--resume") -> RunFolder:
        """A run folder given on the command line: it must hold its config."""
        folder = cls(Path(path))
        if not folder.config.is_file():
            raise UserError(f"{flag} {folder.path}: not a run folder (no {CONFIG_FILE})")
        return folder

    def check_resumable(self) -> None:
        """A folder with a policy but no checkpoint lost its trainer's state: resuming would start
        over at iteration 1 and overwrite the policy. With neither, no iteration finished, and
        starting over is what resuming means."""
        if self.policy.is_file() and not self.checkpoint.is_file():
            raise UserError(f"--resume {self.path}: holds {POLICY_FILE} but no {CHECKPOINT_FILE}, "
                            "so the run cannot continue where it stopped; start a new run "
                            f"(from its config: ccgym train {self.config})")

    def write_config(self, config: Any) -> None:
        atomic_write_text(self.config, to_toml(
            config, header="Resolved training config (defaults filled in); "
                           "`ccgym train --resume` reads it."))

    def load_config(self) -> Any:
        return load_config(self.config)

    def write_machine(self) -> None:
        """machine.json: the CPU and the libraries the run trained on. One config and seed
        write the same policy.pt on one machine, but another instruction set (AVX2 against
        AVX-512) changes torch's float sums and so the weights: compare runs whose files match."""
        atomic_write_json(self.path / MACHINE_FILE, machine_description())

    def events_writer(self, purge_step: int) -> Any:
        """TensorBoard's writer on this folder. purge_step drops events that a killed run
        logged after its last checkpoint, so a resumed run logs each iteration once."""
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter(str(self.path), purge_step=purge_step)


def hyperparameter_table(config: Any) -> str:
    """The config as a Markdown table (TensorBoard's text tab renders it), CleanRL style."""
    lines = ["| parameter | value |", "|-|-|"]
    for key, value in config.flat().items():
        lines.append(f"| {key} | {value} |")
    return "\n".join(lines)


def source_commit() -> str | None:
    """The git commit of the ccgym source tree this runs from (an editable install), with
    "-dirty" when it has uncommitted changes; None outside a git checkout of ccgym (an
    installed wheel, also one inside another project's repository), or without git."""
    source = Path(__file__).resolve().parents[1]  # the checkout's root: train/ lies in it
    try:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "--show-toplevel", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        lines = head.stdout.splitlines()
        if head.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != source:
            return None
        status = subprocess.run(["git", "-C", str(source), "status", "--porcelain",
                                 "--untracked-files=no"], capture_output=True, text=True,
                                timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    dirty = "-dirty" if status.returncode == 0 and status.stdout.strip() else ""
    return lines[1] + dirty


def machine_description() -> dict[str, Any]:
    """The CPU model, the instruction-set extensions that change float results, the core count,
    the commit of ccgym's source (None: not a git checkout) and the numeric libraries'
    versions."""
    model, flags = "", set[str]()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    versions: dict[str, str | None] = {}
    for name in NUMERIC_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"cpu": model or platform.processor(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "commit": source_commit(),
            "simd": sorted(f for f in flags if f.startswith(("avx", "fma", "sse4"))),
            "python": platform.python_version(), "libraries": versions}
