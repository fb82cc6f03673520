"""DAgger on shared links: every learned flow labelled by the shared expert, one episode each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from ccgym.emulators import _core
from ccgym.envs.engine import Engine
from ccgym.envs.vector import VecLinkEnv
from ccgym.emulators.link_names import link_from_spec
from ccgym.train.config import TrainConfig, env_config, parse_config
from ccgym.train.dagger import RolloutTask, make_tasks, run_rollout
from ccgym.train.loop import train

TRAIN_LINKS = ["rate_mbps=12,delay_ms=20,queue=droptail:packets=40",
               "rate_mbps=24,delay_ms=10,queue=droptail:packets=40"]
VALIDATION_LINKS = ["name=held-out,rate_mbps=18,delay_ms=15"]


def shared_config(**links: Any) -> TrainConfig:
    doc = {
        "run": {"name": "shared", "seed": 5, "workers": 0, "iterations": 2, "num_envs": 3,
                "episode_ms": 2000.0, "patience": 10},
        "links": {"train": TRAIN_LINKS, "validation": VALIDATION_LINKS,
                  "competitors": ["cubic", "self"], **links},
        "model": {"hidden_size": 8},
        "dagger": {"rollouts_per_iteration": 6, "epochs": 2, "batch_size": 4, "bptt_len": 50,
                   "holdout_fraction": 0.25},
        "eval": {"duration_s": 1.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    return parse_config(doc, "shared")


def rollout_env(config: TrainConfig):
    return env_config(config, [link_from_spec(spec) for spec in TRAIN_LINKS])


def started(task: RolloutTask) -> Engine:
    """The task's simulations, drawn as run_rollout draws them."""
    links = Engine(task.num_envs, task.env_config)
    for i in range(task.num_envs):
        links.reset_sim(i, seeding.np_random(task.seed + i)[0])
    return links


def expert_replay(task: RolloutTask) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each learned flow's (observations, expert actions) while it sends, the expert driving
    every flow: a flow at a time, read from Engine step by step."""
    links = started(task)
    rows = links.first_step()
    seen: list[tuple[list[np.ndarray], list[int]]] = [([], []) for _ in range(links.num_rows)]
    stopped = np.zeros(links.num_rows, dtype=bool)
    for _ in range(task.env_config.episode_steps):
        expert = links.expert_actions()
        for r, (obs, labels) in enumerate(seen):
            stopped[r] |= bool(labels) and not rows.active[r]
            if rows.active[r] and not stopped[r]:
                obs.append(rows.obs[r].copy())
                labels.append(int(expert[r]))
        rows = links.step(np.where(rows.active & ~stopped, expert, _core.HOLD_ACTION))
    return [(np.array(o), np.array(y)) for o, y in seen]


def test_every_learned_flow_is_an_episode_labelled_by_the_shared_expert() -> None:
    config = shared_config(competitor_starts=["with", "after"], competitor_stagger_ms=800.0)
    task = make_tasks(config, rollout_env(config), 1, None)[0]
    task.exploration = 0.0  # the expert drives every flow: the replay can follow it
    result = run_rollout(task)
    replay = expert_replay(task)
    entries = [s.entry for s in started(task).scenarios]
    assert "self" in entries and "cubic" in entries, entries  # both kinds in one batch
    assert len(result.episodes()) == len(replay) == task.num_envs + entries.count("self")
    steps = task.env_config.episode_steps
    assert min(result.lengths) < steps  # a flow that started late has a shorter episode
    for (obs, labels), (want_obs, want_labels) in zip(result.episodes(), replay, strict=True):
        np.testing.assert_array_equal(labels, want_labels)
        np.testing.assert_array_equal(obs, want_obs)
    assert result.env_steps == sum(len(y) for _, y in replay)


def test_dagger_on_shared_links_aggregates_one_episode_per_learned_flow(tmp_path: Path) -> None:
    config = shared_config()
    state = train(config, tmp_path / "run", progress=False, say=lambda _: None)
    dagger = state.trainer
    flows = sum(started(task).num_rows for i in (1, 2)
                for task in make_tasks(config, rollout_env(config), i, dagger.policy))
    assert len(dagger.train_episodes) + len(dagger.holdout_episodes) == flows
    assert flows > 2 * config.dagger.rollouts_per_iteration  # some simulation had "self"
    assert len(state.history) == 2 and np.isfinite(state.history[-1]["score"])
    assert 0.0 <= state.history[-1]["agreement"] <= 1.0


def test_alone_on_the_link_a_rollout_records_what_veclinkenv_steps() -> None:
    """competitors ["none"]: simulation i is VecLinkEnv's sub-environment of seed + i, the
    expert driving, its observations and expert actions recorded step by step."""
    config = shared_config(competitors=["none"])
    task = make_tasks(config, rollout_env(config), 1, None)[0]
    task.exploration = 0.0
    result = run_rollout(task)
    env = VecLinkEnv(task.num_envs, task.env_config, threads=1)
    obs, infos = env.reset(seed=task.seed)
    steps = task.env_config.episode_steps
    assert result.obs.shape[:2] == (task.num_envs, steps) and (result.lengths == steps).all()
    for t in range(steps):
        np.testing.assert_array_equal(result.obs[:, t], obs)
        np.testing.assert_array_equal(result.labels[:, t], infos["expert_action"])
        if t < steps - 1:
            obs, _, _, _, infos = env.step(infos["expert_action"])
