"""`ccgym train --resume` on run folders that cannot be resumed: each is one clear line, exit 2,
and the folder is left as it was (no new event file, policy.pt untouched)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ccgym.cli import main
from ccgym.train.config import parse_config, to_toml

ONE_ITERATION = {
    "run": {"name": "tiny", "seed": 3, "workers": 0, "iterations": 1, "num_envs": 4,
            "episode_ms": 1000.0},
    "links": {"train": ["rate_mbps=12,delay_ms=20"],
              "validation": ["name=held-out,rate_mbps=18,delay_ms=15"]},
    "model": {"hidden_size": 8},
    "dagger": {"rollouts_per_iteration": 4, "epochs": 1, "batch_size": 4,
               "holdout_fraction": 0.25},
    "eval": {"duration_s": 1.0, "baselines": [], "oracle": False, "leaderboard": False},
}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder whose one iteration finished."""
    base = tmp_path_factory.mktemp("resume")
    config = base / "tiny.toml"
    config.write_text(to_toml(parse_config(ONE_ITERATION)))
    out = base / "runs"
    assert main(["train", str(config), "--out", str(out), "--no-progress"]) == 0
    [run_dir] = out.iterdir()
    return run_dir


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def damage_checkpoint(run: Path, how: str) -> None:
    checkpoint = run / "checkpoint.pt"
    data = checkpoint.read_bytes()
    if how == "empty":
        checkpoint.write_bytes(b"")
    elif how == "truncated":
        checkpoint.write_bytes(data[:len(data) // 2])
    elif how == "garbage":
        checkpoint.write_bytes(bytes(range(256)) * 8)
    elif how == "missing":
        checkpoint.unlink()


@pytest.mark.parametrize("how, expected", [
    ("empty", "checkpoint.pt: empty file"),
    ("truncated", "checkpoint.pt: not a readable ccgym checkpoint"),
    ("garbage", "checkpoint.pt: not a readable ccgym checkpoint"),
    ("missing", "holds policy.pt but no checkpoint.pt"),
])
def test_a_damaged_or_missing_checkpoint_is_a_clear_error(finished_run: Path, tmp_path: Path,
                                                          capsys, how: str,
                                                          expected: str) -> None:
    run = tmp_path / finished_run.name
    shutil.copytree(finished_run, run)
    damage_checkpoint(run, how)
    before = snapshot(run)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    [line] = err.strip().splitlines()
    assert line.startswith("ccgym train: error: ")
    assert expected in line
    assert snapshot(run) == before  # policy.pt, events and config as they were


def test_resuming_a_finished_run_says_how_to_extend_it(finished_run: Path, tmp_path: Path,
                                                       capsys) -> None:
    run = tmp_path / finished_run.name
    shutil.copytree(finished_run, run)
    before = snapshot(run)
    capsys.readouterr()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "has finished its 1 iterations" in line
    assert "--iterations" in line
    assert snapshot(run) == before  # no new event file
