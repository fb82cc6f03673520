"""`ccgym train` as a user calls it: a packaged config by name, --set overrides, the config
reference; every mistake one line, exit 2, no run folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccgym.cli import main
from ccgym.train.config import load_config

# Shrinks the packaged quick config to a one-iteration run of seconds, in-process.
TINY = ["--set", "run.workers=0", "--set", "run.iterations=1", "--set", "run.num_envs=2",
        "--set", "run.episode_ms=500", "--set", "dagger.rollouts_per_iteration=2",
        "--set", "dagger.epochs=1", "--set", "eval.baselines=[]", "--set", "eval.oracle=false",
        "--set", "eval.duration_s=1", "--no-progress", "--no-leaderboard"]


def test_a_packaged_config_by_name_with_overrides(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert main(["train", "quick", "--out", str(out), *TINY]) == 0
    [run_dir] = out.iterdir()
    assert run_dir.name.startswith("quick__1__")
    config = load_config(run_dir / "config.toml")  # the resolved config records the overrides
    assert (config.run.iterations, config.run.num_envs, config.run.episode_ms) == (1, 2, 500.0)
    assert config.eval.baselines == [] and config.eval.oracle is False
    printed = capsys.readouterr().out
    assert "| dagger.epochs | 1 |" in printed and "| ppo." not in printed  # its own sections
    assert (run_dir / "policy.pt").is_file() and (run_dir / "checkpoint.pt").is_file()


@pytest.mark.parametrize("args, expected", [
    (["nosuch"], "nosuch: no such config file or packaged training config; packaged: "
                 "cellular, distill, indigo, mixed, mixed-bbr, mixed-shared, quick"),
    (["quick", "--set", "dagger.epochz=3"], "--set dagger.epochz=3: unknown key 'epochz'"),
    (["quick", "--set", "trainer.lr=3"], "--set trainer.lr=3: unknown section 'trainer'"),
    (["quick", "--set", "run.iterations=many"], "[run] iterations must be an integer"),
    (["quick", "--set", "dagger.beta0=2"], "command line: [dagger] beta0: must be in [0, 1]"),
    (["quick", "--set", "algorithm.name=a2c"], "[algorithm] name: must be one of dagger, ppo"),
])
def test_a_bad_config_name_or_override_is_one_line(args: list[str], expected: str,
                                                   tmp_path: Path,
                                                   capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "runs"
    assert main(["train", *args, "--out", str(out)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert expected in line
    assert not out.exists()


def test_describe_config_prints_the_reference(capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--describe-config"]) == 0
    text = capsys.readouterr().out
    assert "[run]" in text and "[dagger]" in text and "[ppo]" in text
    assert "  patience = 6    (an integer)" in text


def test_resume_refuses_a_new_seed_by_set(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "config.toml").write_text("[run]\nname = \"x\"\n")
    assert main(["train", "--resume", str(tmp_path), "--set", "run.seed=4"]) == 2
    assert "cannot change a resumed run" in capsys.readouterr().err
