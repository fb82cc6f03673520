"""Distillation: DAgger with a trained policy as the expert ([dagger] teacher), on the real
simulator, with the packaged generalist (the ensemble of three 64-unit LSTMs) as the teacher
of a small student."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from ccgym.cli import main
from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.envs.engine import Engine
from ccgym.errors import UserError
from ccgym.policies import packaged_policies
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import env_config, parse_config, to_toml
from ccgym.train.dagger import Dagger, make_tasks, run_rollout
from ccgym.train.imitation import agreement, segment_loss
from ccgym.train.loop import train

TRAIN_LINKS = ["rate_mbps=12,delay_ms=20", "rate_mbps=24,delay_ms=10",
               "rate_mbps=6,delay_ms=40,queue=droptail:packets=20"]
TEACHER = "lstm:generalist"


def rollout_env(config: Any) -> Any:
    """The rollouts' environment as the driver resolves it (train/config.py's env_config)."""
    return env_config(config, [link_from_spec(spec) for spec in TRAIN_LINKS])

def distill_doc(**sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    doc: dict[str, dict[str, Any]] = {
        "run": {"name": "tiny-distill", "seed": 5, "workers": 0, "iterations": 2,
                "num_envs": 3, "episode_ms": 3000.0, "patience": 10},
        "links": {"train": TRAIN_LINKS, "validation": ["name=held-out,rate_mbps=18,delay_ms=15"]},
        "model": {"hidden_size": 16, "head": "log_change"},
        "dagger": {"rollouts_per_iteration": 6, "epochs": 6, "batch_size": 3, "bptt_len": 50,
                   "holdout_fraction": 0.0, "teacher": TEACHER},
        "optimizer": {"lr": 0.01},
        "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    for name, values in sections.items():
        doc[name].update(values)
    return doc


def quiet(_: str) -> None:
    pass


def teacher_episodes(seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Episodes the teacher leads and labels, at seeds no training drew."""
    config = parse_config(distill_doc(run={"seed": seed}), "held-out")
    teacher = LstmPolicy.load(packaged_policies.find("generalist").pt).to_file_dict()
    tasks = make_tasks(config, rollout_env(config), 1, None, teacher)
    return [episode for task in tasks for episode in run_rollout(task).episodes()]


def test_rollouts_carry_the_teachers_log_change_along_each_flow() -> None:
    config = parse_config(distill_doc(), "tiny")
    env = rollout_env(config)
    assert env.profiles and all(link.ideal is None for link in env.profiles)  # no oracle ran
    teacher = LstmPolicy.load(packaged_policies.find("generalist").pt)
    [task, _] = make_tasks(config, env, 1, None, teacher.to_file_dict())
    result = run_rollout(task)
    assert result.labels.dtype == np.float32 and not np.isnan(result.labels).any()
    # Fed each whole episode at once, the teacher gives the labels the rollout recorded step
    # by step: its state was carried along each flow, every row in one call.
    with torch.no_grad():
        changes, _ = teacher.log_changes(torch.from_numpy(result.obs))
    np.testing.assert_allclose(result.labels, changes.numpy(), atol=1e-5)
    # Iteration 1 executes the teacher's action, the one closest to its change (no noise).
    task.exploration = 0.0
    followed = run_rollout(task)
    executed = followed.obs[:, 1:, _core.OBS_ACTION_OFFSET:].argmax(-1)
    with torch.no_grad():
        logits, _ = teacher(torch.from_numpy(followed.obs))
    np.testing.assert_array_equal(executed, logits.argmax(-1)[:, :-1].numpy())
    # The links without an oracle have no expert to ask.
    shared = Engine(1, task.env_config)
    shared.reset_sim(0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="resolved without the oracle"):
        shared.expert_actions()


def test_the_soft_label_loss_is_the_squared_error_to_the_teachers_change() -> None:
    student = LstmPolicy(hidden_size=8, head="log_change")
    obs = torch.rand(2, 5, _core.OBS_DIM)
    labels = torch.tensor([[0.1, -0.2, 0.0, np.nan, np.nan], [0.3, 0.3, -0.5, 0.05, 0.0]])
    with torch.no_grad():
        loss, _ = segment_loss(student, obs, labels, None, lambda *_: torch.tensor(0.0))
        change = student.head(student.lstm(obs)[0])[..., 0]
    labelled = ~torch.isnan(labels)
    expected = ((change - labels)[labelled] ** 2).sum()
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)


def test_a_tiny_distillation_agrees_with_its_teacher_more_than_at_initialisation(
        tmp_path: Path) -> None:
    config = parse_config(distill_doc(), "tiny")
    torch.manual_seed(config.run.seed)  # the student's initial weights, as Dagger draws them
    initial = LstmPolicy(hidden_size=16, head="log_change")
    train(config, tmp_path / "run", progress=False, say=quiet)
    student = LstmPolicy.load(tmp_path / "run" / "policy.pt")
    held_out = teacher_episodes(seed=1000)
    before, after = agreement(initial, held_out)[0], agreement(student, held_out)[0]
    assert after > before + 0.2, (before, after)


def test_same_config_and_seed_give_the_same_student(tmp_path: Path) -> None:
    config = parse_config(distill_doc(run={"iterations": 2}), "tiny")
    digests = []
    for name in ("a", "b"):
        train(config, tmp_path / name, progress=False, say=quiet)
        digests.append(hashlib.sha256((tmp_path / name / "policy.pt").read_bytes()).hexdigest())
    assert digests[0] == digests[1]


def test_the_student_starts_from_init_from(tmp_path: Path) -> None:
    start = LstmPolicy(hidden_size=16, head="log_change")
    start.save(tmp_path / "start.pt")
    config = parse_config(distill_doc(model={"init_from": str(tmp_path / "start.pt")}), "tiny")
    weights = Dagger(config).policy.state_dict()
    for key, value in start.state_dict().items():
        torch.testing.assert_close(weights[key], value, rtol=0, atol=0)


@pytest.mark.parametrize("changes, expected", [
    ({"dagger": {"teacher": "nosuch"}},
     "[dagger] teacher: nosuch: no such run folder, policy file or packaged policy"),
    ({"dagger": {"teacher": "lstm:quick"}},
     "has the classes head, the config's [model] head is log_change"),
    ({"model": {"init_from": "generalist"}},
     "has hidden_size 192, the config's [model] hidden_size is 16"),
])
def test_a_bad_teacher_or_start_is_one_line_and_no_run_folder(
        changes: dict[str, dict[str, Any]], expected: str, tmp_path: Path,
        capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "distill.toml"
    path.write_text(to_toml(parse_config(distill_doc(**changes), "tiny")))
    out = tmp_path / "runs"
    assert main(["train", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert expected in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_ppo_init_from_names_its_new_place_unless_it_is_unset() -> None:
    with pytest.raises(UserError, match=r"init_from is now \[model\] init_from"):
        parse_config({**distill_doc(), "ppo": {"init_from": "x"}}, "old")
    # What every run folder's config.toml written before the move holds: read as absent.
    config = parse_config({**distill_doc(), "ppo": {"init_from": ""}}, "old run")
    assert config.model.init_from == ""
