"""Genet's curriculum in training ([curriculum]): rounds of `ccgym search` with the current
policy whose worst links join the training mix, logged to TensorBoard, resumed exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from ccgym.cli import main
from ccgym.emulators.links import load_link_set
from ccgym.train.config import load_config, parse_config, to_toml
from ccgym.train.curriculum import mix, share
from ccgym.train.loop import load_checkpoint, train

SPACE = """
rate_mbps = { min = 4, max = 48, log = true }
delay_ms = 20
buffer_bdp = 1
loss = 0
delivery = ["constant"]
competitors = ["bbr"]  # dropped: a training link is trained on as [links] competitors say
"""


def doc(space: Path, **curriculum: Any) -> dict[str, dict[str, Any]]:
    return {
        "run": {"name": "tiny", "seed": 3, "workers": 0, "iterations": 4, "num_envs": 4,
                "episode_ms": 2000.0, "patience": 10},
        "links": {"train": ["rate_mbps=12,delay_ms=20"],
                  "validation": ["name=held-out,rate_mbps=18,delay_ms=15"]},
        "model": {"hidden_size": 8},
        "dagger": {"rollouts_per_iteration": 4, "epochs": 2, "batch_size": 4, "bptt_len": 50},
        "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
        "curriculum": {"every": 1, "space": str(space), "trials": 2, "seeds": 1, "keep": 1,
                       "weight": 0.5, "baselines": ["vegas"], "duration_s": 2.0, **curriculum},
    }


def quiet(_: str) -> None:
    pass


def test_the_mix_gives_the_found_links_their_weight() -> None:
    base = [f"rate_mbps={r},delay_ms=20" for r in range(1, 31)]
    found = ["rate_mbps=99,delay_ms=5", "rate_mbps=98,delay_ms=5"]
    assert mix(base, [], 0.3) == base
    mixed = mix(base, found, 0.3)
    assert mixed[:30] == base and set(mixed[30:]) == set(found)
    assert share(base, found, 0.3) == pytest.approx(0.3, abs=0.03)


def test_rounds_add_the_found_links_and_a_resumed_run_equals_a_straight_one(tmp_path: Path) -> None:
    space = tmp_path / "space.toml"
    space.write_text(SPACE)
    config_path = tmp_path / "tiny.toml"
    config_path.write_text(to_toml(parse_config(doc(space, every=2))))
    out = tmp_path / "runs"
    common = ["--out", str(out), "--no-progress", "--no-leaderboard"]
    assert main(["train", str(config_path), "--iterations", "3", *common]) == 0
    [run_dir] = out.iterdir()
    first = load_checkpoint(run_dir / "checkpoint.pt", load_config(run_dir / "config.toml"))
    # One round, before iteration 3: its one kept link is trained on, as the round wrote it.
    [found] = load_link_set(run_dir / "curriculum" / "round-1.toml")
    assert first.curriculum == [found.spec] and found.competitors == ()
    # Resumed for iteration 4, which no round precedes: it trains on the mix all the same.
    assert main(["train", "--resume", str(run_dir), "--iterations", "4", *common]) == 0
    resumed = load_checkpoint(run_dir / "checkpoint.pt", load_config(run_dir / "config.toml"))
    assert resumed.curriculum == first.curriculum

    straight = train(parse_config(doc(space, every=2), "tiny"), tmp_path / "straight",
                     progress=False, say=quiet)
    assert straight.iteration == 4 and straight.curriculum == resumed.curriculum
    for a, b in zip(resumed.trainer.policy.state_dict().values(),
                    straight.trainer.policy.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # The found links are trained on: without rounds the same seed gives another policy.
    alone = train(parse_config(doc(space, every=0), "tiny"), tmp_path / "alone", progress=False,
                  say=quiet)
    assert any(not torch.equal(a, b) for a, b in zip(alone.trainer.policy.state_dict().values(),
                                                     straight.trainer.policy.state_dict().values()))

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    [gap] = events.Scalars("curriculum/gap")
    assert gap.step == 3 and gap.value > 0  # three iterations in, vegas is ahead somewhere
    assert [e.value for e in events.Scalars("curriculum/links")] == [1]


@pytest.mark.parametrize("space, curriculum, message", [
    ("missing.toml", {}, "missing.toml"),
    ("space.toml", {"baselines": ["westwood"]}, "[curriculum] baselines: 'westwood'"),
])
def test_a_bad_space_or_baseline_fails_before_training(space: str, curriculum: dict,
                                                       message: str, tmp_path: Path,
                                                       capsys) -> None:
    (tmp_path / "space.toml").write_text(SPACE)
    config_path = tmp_path / "tiny.toml"
    config_path.write_text(to_toml(parse_config(doc(tmp_path / space, **curriculum))))
    out = tmp_path / "runs"
    assert main(["train", str(config_path), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not out.exists() or not any(out.rglob("checkpoint.pt"))


def test_a_space_file_is_found_beside_the_config(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "space.toml").write_text(SPACE)
    config_path = tmp_path / "configs" / "mine.toml"
    config_path.write_text('extends = "quick"\n[curriculum]\nevery = 2\nspace = "space.toml"\n')
    monkeypatch.chdir(tmp_path)  # not where the space is
    assert load_config(config_path).curriculum.space == str(tmp_path / "configs" / "space.toml")
    config_path.write_text('extends = "quick"\n[curriculum]\nevery = 2\n')
    assert load_config(config_path).curriculum.space == "default"  # a packaged space
