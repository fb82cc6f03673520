"""DAgger end to end on tiny link sets: learning, checkpoints, resume, TensorBoard, Ray."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from ccgym.cli import main
from ccgym.emulators import _core
from ccgym.envs.engine import Engine
from ccgym.emulators.link_names import link_from_spec
from ccgym.train.config import TrainConfig, env_config, load_config, parse_config, to_toml
from ccgym.policies.lstm import LstmPolicy, action_log_changes
from ccgym.train.dagger import beta_for, make_tasks, run_rollout
from ccgym.train.imitation import IGNORE_LABEL, imitation_loss
from ccgym.train.loop import RunState, load_checkpoint, save_checkpoint, train

TRAIN_LINKS = ["rate_mbps=12,delay_ms=20", "rate_mbps=24,delay_ms=10"]
VALIDATION_LINKS = ["name=held-out,rate_mbps=18,delay_ms=15"]


def tiny_doc(**sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    doc = {
        "run": {"name": "tiny", "seed": 3, "workers": 0, "iterations": 3, "num_envs": 4,
                "episode_ms": 3000.0, "patience": 10},
        "links": {"train": TRAIN_LINKS, "validation": VALIDATION_LINKS},
        "model": {"hidden_size": 16},
        "dagger": {"rollouts_per_iteration": 8, "epochs": 6, "batch_size": 4, "bptt_len": 50,
                   "holdout_fraction": 0.25, "beta_decay": 0.5},
        "optimizer": {"lr": 0.01},
        "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    for name, values in sections.items():
        doc[name].update(values)
    return doc


def tiny_config(**sections: dict[str, Any]) -> TrainConfig:
    return parse_config(tiny_doc(**sections), "tiny")


def train_links() -> list:
    return [link_from_spec(spec) for spec in TRAIN_LINKS]


def quiet(_: str) -> None:
    pass


def test_beta_schedule() -> None:
    assert beta_for(1, 0.3, 0.5) == 1.0  # iteration 1 follows the expert whatever beta0 is
    assert beta_for(2, 1.0, 0.5) == 0.5
    assert beta_for(4, 0.8, 0.5) == pytest.approx(0.8 * 0.125)


def test_tasks_carry_the_links_the_driver_resolved_and_workers_use_them_as_they_are() -> None:
    config = tiny_config()
    env = env_config(config, train_links())
    # Names no spec would parse to: what a worker shows tells which links it used.
    profiles = tuple(dataclasses.replace(link, name=f"driver-{i}")
                     for i, link in enumerate(env.profiles or ()))
    renamed = dataclasses.replace(env, links=profiles)
    task = pickle.loads(pickle.dumps(make_tasks(config, renamed, 1, None)[0]))  # as a worker gets it
    assert task.env_config.profiles == profiles
    shared = Engine(task.num_envs, task.env_config, task.threads)
    shared.reset_sim(0, np.random.default_rng(0))
    assert shared.episode(0)[0].name.startswith("driver-")
    # The same rollouts as a worker that resolves the specs itself.
    named = dataclasses.replace(task.env_config, links=list(TRAIN_LINKS))
    given, resolved = run_rollout(task), run_rollout(dataclasses.replace(task, env_config=named))
    np.testing.assert_array_equal(given.obs, resolved.obs)
    np.testing.assert_array_equal(given.labels, resolved.labels)


def test_rollout_labels_every_state_with_the_expert_and_follows_it_at_beta_1() -> None:
    config = tiny_config()
    tasks = make_tasks(config, env_config(config, train_links()), 1, None)
    assert len(tasks) == 2 and tasks[0].seed + 4 == tasks[1].seed  # disjoint env seeds
    result = run_rollout(tasks[0])
    steps = int(config.run.episode_ms / 10)
    assert result.obs.shape[:2] == result.labels.shape == (4, steps)
    assert (result.lengths == steps).all() and result.env_steps == 4 * steps
    assert ((result.labels >= 0) & (result.labels < _core.NUM_ACTIONS)).all()
    # At beta = 1 with no exploration noise, the executed action (the previous-action
    # one-hot of step t+1) is the label of step t.
    tasks[0].exploration = 0.0
    result = run_rollout(tasks[0])
    previous = result.obs[:, 1:, _core.OBS_ACTION_OFFSET:].argmax(-1)
    np.testing.assert_array_equal(previous, result.labels[:, :-1])
    # With noise, some executed actions differ from the labels (which stay the expert's).
    tasks[0].exploration = 0.5
    noisy = run_rollout(tasks[0])
    assert (noisy.obs[:, 1:, _core.OBS_ACTION_OFFSET:].argmax(-1) != noisy.labels[:, :-1]).mean() > 0.2
    # Different workers draw different episodes.
    assert not np.array_equal(run_rollout(tasks[1]).obs, result.obs)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunState]:
    run_dir = tmp_path_factory.mktemp("dagger") / "run"
    # With the reference lines: the oracle and one baseline on the validation link. Ten
    # epochs: the expert's labels while the growth ceiling holds the window take more to learn.
    config = tiny_config(eval={"baselines": ["fixed:20"], "oracle": True}, dagger={"epochs": 10})
    state = train(config, run_dir, progress=False, say=quiet)
    return run_dir, state


def test_dagger_reaches_high_expert_agreement(trained: tuple[Path, RunState]) -> None:
    from ccgym.analysis.evaluate import run_scheme
    from ccgym.emulators.link_names import link_from_spec

    run_dir, state = trained
    assert state.iteration == 3
    last = state.history[-1]
    assert last["agreement"] > 0.8, state.history
    # Not only "hold", the expert's most common action: every action is mostly imitated.
    assert last["balanced_agreement"] > 0.6, state.history
    # And it acts on it: on the held-out link it beats holding the initial window.
    [hold] = run_scheme(link_from_spec(VALIDATION_LINKS[0]), "fixed:10", [3], 2000.0)
    assert last["score"] > hold.metrics.score + 1.0, (last, hold.metrics.score)
    # The dataset aggregates: 8 episodes of 300 steps per iteration.
    assert state.trainer.dataset_size == 3 * 8 * 300
    assert (run_dir / "policy.pt").is_file() and (run_dir / "checkpoint.pt").is_file()


def test_tensorboard_events_hold_the_expected_tags(trained: tuple[Path, RunState]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, state = trained
    events = EventAccumulator(str(run_dir))
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    expected = {"losses/loss", "losses/learning_rate", "dagger/expert_agreement",
                "dagger/balanced_agreement", "dagger/beta", "dagger/dataset_size", "eval/score",
                "eval/validation/score", "eval/validation/throughput_mbps",
                "eval/validation/e2e_delay_ms",
                "eval/oracle_score", "eval/best_baseline_score", "charts/SPS"}
    assert expected <= scalars, expected - scalars
    # The oracle's line is above the baseline's (BDP window versus 20 packets at 18 Mbit/s,
    # 15 ms, where the BDP is 45 packets).
    oracle = events.Scalars("eval/oracle_score")[-1].value
    baseline = events.Scalars("eval/best_baseline_score")[-1].value
    assert oracle > baseline
    beta = [(e.step, e.value) for e in events.Scalars("dagger/beta")]
    assert beta == [(1, 1.0), (2, 0.5), (3, 0.25)]
    sizes = [e.value for e in events.Scalars("dagger/dataset_size")]
    assert sizes == [2400, 4800, 7200]
    assert all(e.value > 0 for e in events.Scalars("charts/SPS"))
    assert "hyperparameters/text_summary" in events.Tags()["tensors"]


def test_checkpoint_round_trip(trained: tuple[Path, RunState], tmp_path: Path) -> None:
    run_dir, state = trained
    config = tiny_config()
    loaded = load_checkpoint(run_dir / "checkpoint.pt", config)
    path = tmp_path / "again.pt"
    save_checkpoint(path, loaded)
    again = load_checkpoint(path, config)
    for a, b in ((state, loaded), (loaded, again)):
        assert a.iteration == b.iteration and a.history == b.history
        assert a.early_stopping == b.early_stopping and a.reference == b.reference
        ta, tb = a.trainer, b.trainer
        for (pa, pb) in zip(ta.policy.state_dict().values(), tb.policy.state_dict().values()):
            torch.testing.assert_close(pa, pb, rtol=0, atol=0)
        assert len(ta.train_episodes) == len(tb.train_episodes)
        for (oa, ya), (ob, yb) in zip(ta.train_episodes, tb.train_episodes):
            np.testing.assert_array_equal(oa, ob)
            np.testing.assert_array_equal(ya, yb)
        assert ta.optimizer.state_dict()["state"].keys() == tb.optimizer.state_dict()["state"].keys()


def tiny_toml(tmp_path: Path, **sections: dict[str, Any]) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(to_toml(parse_config(tiny_doc(**sections))))
    return path


def test_resume_continues_after_the_last_finished_iteration(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    # The learning rate halves each iteration: the resumed iteration must pick up the third.
    sections = {"dagger": {"epochs": 2}, "optimizer": {"lr": 0.01, "lr_decay": 0.5}}
    config_path = tiny_toml(tmp_path, **sections)
    out = tmp_path / "runs"
    common = ["--out", str(out), "--no-progress", "--no-leaderboard"]
    # A run "killed" after iteration 2: its config says 2 iterations.
    assert main(["train", str(config_path), "--iterations", "2", *common]) == 0
    [run_dir] = out.iterdir()
    assert run_dir.name.startswith("tiny__3__")
    first = load_checkpoint(run_dir / "checkpoint.pt", load_config(run_dir / "config.toml"))
    assert first.iteration == 2

    capsys.readouterr()
    assert main(["train", "--resume", str(run_dir), "--iterations", "3", *common]) == 0
    printed = capsys.readouterr()
    assert "resuming" in printed.out + printed.err
    config = load_config(run_dir / "config.toml")
    assert config.run.iterations == 3  # the resolved config records the new target
    resumed = load_checkpoint(run_dir / "checkpoint.pt", config)
    assert resumed.iteration == 3
    assert resumed.history[:2] == first.history  # iterations 1-2 were not run again
    assert resumed.trainer.dataset_size == 3 * 8 * 300
    assert resumed.trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.0025)

    # The resumed run equals an uninterrupted one: all randomness derives from (seed, iteration).
    straight = train(parse_config(tiny_doc(**sections)), tmp_path / "straight",
                     progress=False, say=quiet)
    for pa, pb in zip(resumed.trainer.policy.state_dict().values(),
                      straight.trainer.policy.state_dict().values()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=0)

    # TensorBoard: each iteration's scalars appear once across the two event files.
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(run_dir))
    events.Reload()
    assert [e.step for e in events.Scalars("losses/loss")] == [1, 2, 3]
    rates = [e.value for e in events.Scalars("losses/learning_rate")]
    assert rates == pytest.approx([0.01, 0.005, 0.0025])


def test_cli_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[dagger]\nepochz = 3\n")
    assert main(["train", str(bad), "--out", str(tmp_path)]) == 2
    assert "unknown key 'epochz'" in capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path / "nothing")]) == 2
    typo = tiny_toml(tmp_path, eval={"baselines": ["cubc"]})
    assert main(["train", str(typo), "--out", str(tmp_path / "runs")]) == 2
    assert "[eval] baselines: 'cubc'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # no run folder was made
    # A flag's value is checked as the config key it overrides.
    assert main(["train", str(typo), "--seed", "-1", "--out", str(tmp_path / "runs")]) == 2
    assert "argument --seed: a seed is an integer in 0.." in capsys.readouterr().err
    assert main(["train", str(typo), "--iterations", "0", "--out", str(tmp_path / "runs")]) == 2
    assert "argument --iterations: must be an integer at least 1" in capsys.readouterr().err
    assert main(["train", "--resume", str(tmp_path), "--seed", "2"]) == 2
    assert "cannot change a resumed run" in capsys.readouterr().err


def test_cli_seed_overrides_the_config(tmp_path: Path) -> None:
    config_path = tiny_toml(tmp_path, run={"iterations": 1})
    out = tmp_path / "runs"
    for seed in (3, 5):  # the config's seed, then another
        assert main(["train", str(config_path), "--seed", str(seed), "--out", str(out),
                     "--no-progress", "--no-leaderboard"]) == 0
    runs = {int(d.name.split("__")[1]): d for d in out.iterdir()}
    assert sorted(runs) == [3, 5]
    assert load_config(runs[5] / "config.toml").run.seed == 5
    # A different seed is a different run: other rollouts, other weights.
    first, second = (load_checkpoint(runs[s] / "checkpoint.pt",
                                     load_config(runs[s] / "config.toml")) for s in (3, 5))
    weights = [state.trainer.policy.state_dict().values() for state in (first, second)]
    assert any(not torch.equal(a, b) for a, b in zip(*weights))


def test_ray_rollouts(tmp_path: Path) -> None:
    """The Ray path: one worker, one short iteration. Ray is shut down afterwards if the
    trainer started it, and left running if it was already up (someone else's)."""
    import ray

    config = tiny_config(run={"workers": 1, "iterations": 1, "episode_ms": 1000.0},
                         dagger={"epochs": 1})
    was_running = ray.is_initialized()
    try:
        state = train(config, tmp_path / "ray", progress=False, say=quiet)
    finally:
        running = ray.is_initialized()
        if running and not was_running:  # the test's own guard; train() must have done it
            ray.shutdown()
    assert running == was_running
    assert state.iteration == 1 and state.trainer.dataset_size == 8 * 100


def test_final_leaderboard_has_each_link_and_a_summary(tmp_path: Path) -> None:
    config_path = tiny_toml(
        tmp_path, run={"iterations": 1},
        links={"validation": [*VALIDATION_LINKS, "name=other,rate_mbps=6,delay_ms=30"]},
        eval={"leaderboard": True, "baselines": ["vegas"], "final_duration_s": 1.0})
    out = tmp_path / "runs"
    assert main(["train", str(config_path), "--out", str(out), "--no-progress"]) == 0
    [run_dir] = out.iterdir()
    text = (run_dir / "leaderboard.txt").read_text()
    assert "link: held-out" in text and "link: other" in text
    summary = text.split("summary over 2 links\n")[1]
    assert [line.split()[0] for line in summary.splitlines()[2:]][0] == "omniscient"
    assert any(line.startswith("vegas ") for line in summary.splitlines())


def test_log_change_loss_is_the_squared_error_to_the_experts_change() -> None:
    policy = LstmPolicy(hidden_size=8, head="log_change")
    obs = torch.rand(2, 5, _core.OBS_DIM)
    labels = torch.tensor([[0, 3, 6, IGNORE_LABEL, 5], [1, 2, 4, 3, IGNORE_LABEL]])
    with torch.no_grad():
        logits, _ = policy(obs)
        loss = imitation_loss(policy, None)(logits.reshape(-1, _core.NUM_ACTIONS),
                                            labels.reshape(-1))
        change = policy.head(policy.lstm(obs)[0])[..., 0]
    expert = action_log_changes(obs).gather(-1, labels.clamp(min=0).unsqueeze(-1))[..., 0]
    labelled = labels != IGNORE_LABEL
    expected = ((change - expert)[labelled] ** 2).sum()
    assert float(loss) == pytest.approx(float(expected), rel=1e-5)


def test_dagger_with_the_log_change_head_learns_the_expert(tmp_path: Path) -> None:
    from ccgym.analysis.evaluate import run_scheme
    from ccgym.emulators.link_names import link_from_spec

    config = tiny_config(model={"head": "log_change"}, dagger={"epochs": 10})
    state = train(config, tmp_path / "run", progress=False, say=quiet)
    assert state.trainer.policy.head_kind == "log_change"
    assert LstmPolicy.load(tmp_path / "run" / "policy.pt").head_kind == "log_change"
    losses = [row["loss"] for row in state.history]
    assert losses[-1] < losses[0], state.history
    [hold] = run_scheme(link_from_spec(VALIDATION_LINKS[0]), "fixed:10", [3], 2000.0)
    assert state.history[-1]["score"] > hold.metrics.score + 1.0, (state.history, hold.metrics)
