"""PPO on shared links ([links] competitors): the multi-agent trainer end to end on tiny links,
its one shared module, its fair-share reward, exact resuming, and the config's checks."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tqdm import tqdm

from ccgym.cli import main
from ccgym.emulators import _core
from ccgym.policies.lstm import LstmPolicy
from ccgym.emulators.link_names import link_from_spec
from ccgym.envs.config import EnvConfig
from ccgym.train.config import TrainConfig, env_config, parse_config
from ccgym.train.loop import train
from ccgym.train.pool import RolloutPool
from ccgym.train import ppo
from ccgym.train.ppo_multi import (MODULE_ID, FairShare, FairShareEnv, PpoMulti, fair_share_bonus,
                                   multi_algorithm_config, multi_env_config)
from ccgym.train.registry import trainer_class
from ccgym.train.trainer import Progress

# 6 Mbit/s at a 40 ms RTT: a BDP of 20 packets, twice the initial window.
LINK = "rate_mbps=6,delay_ms=20,queue=droptail:packets=40"


def multi_doc(**sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    doc = {
        "run": {"name": "tiny-multi", "seed": 1, "workers": 0, "iterations": 4, "num_envs": 8,
                "episode_ms": 2000.0, "patience": 100},
        "links": {"train": [LINK], "validation": [f"name=held-out,{LINK}"],
                  "competitors": ["self"]},
        "model": {"hidden_size": 16},
        "algorithm": {"name": "ppo"},
        "ppo": {"minibatch_size": 400, "num_epochs": 8, "entropy_coeff": 0.0, "gamma": 0.9},
        "optimizer": {"lr": 0.01},
        "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    for name, values in sections.items():
        doc.setdefault(name, {}).update(values)
    return doc


def multi_config(**sections: dict[str, Any]) -> TrainConfig:
    return parse_config(multi_doc(**sections), "tiny-multi")


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    with RolloutPool(2):
        yield


@pytest.mark.parametrize("seed", [1, 2])
def test_two_learned_flows_learn_to_grow_on_a_link_they_cannot_fill(tmp_path: Path,
                                                                    seed: int) -> None:
    # At 500 Mbit/s neither flow fills the pipe in a 2 s episode, so the optimum of each is
    # known: grow as fast as the actions allow. Random windows score about -19.5 per flow
    # and episode; four iterations reach -16.5 (measured at seeds 1 and 2).
    config = multi_config(run={"seed": seed}, links={"train": ["rate_mbps=500,delay_ms=20"]})
    state = train(config, tmp_path / "run", progress=False, say=quiet)
    returns = [h["episode_return"] for h in state.history]
    assert len(returns) == 4
    assert max(returns[2:]) > returns[0] + 2, returns


def test_ppo_learns_its_share_beside_a_competitor(tmp_path: Path) -> None:
    # A fixed window of 5 packets takes a quarter of the BDP; the learned flow, starting at
    # 10 packets and moving at random, scores about -12 an episode; near the rest of the
    # pipe (15 packets) and holding, about -7 (measured at seeds 1 and 2).
    config = multi_config(links={"competitors": ["fixed:window=5"]})
    state = train(config, tmp_path / "run", progress=False, say=quiet)
    returns = [h["episode_return"] for h in state.history]
    assert len(returns) == 4
    assert max(returns[2:]) > returns[0] + 2, returns


def test_learned_flows_are_agents_of_one_module() -> None:
    config = multi_config(links={"competitors": ["self:2"]}, run={"num_envs": 2})
    assert trainer_class("ppo", config.links.shared) is PpoMulti
    trainer = PpoMulti(config)
    with trainer.session([link_from_spec(LINK)]):
        rollouts = trainer.collect(1, Progress(tqdm(disable=True)))
        episodes = rollouts.data  # one per learned flow, tagged as a multi-agent episode's
        assert len(episodes) == 2 * 3 and rollouts.env_steps == 2 * 200
        simulations = {e.multi_agent_episode_id for e in episodes}
        assert len(simulations) == 2
        for simulation in simulations:
            flows = [e for e in episodes if e.multi_agent_episode_id == simulation]
            assert sorted(e.agent_id for e in flows) == ["flow_0", "flow_1", "flow_2"]
        assert {e.module_id for e in episodes} == {MODULE_ID}
        mean_return = np.mean([e.get_return() for e in episodes])
        figures = trainer.learn(1, rollouts, Progress(tqdm(disable=True)))
        assert np.isfinite(figures.scalars["losses/policy"])
        assert figures.scalars["charts/episode_return"] == pytest.approx(mean_return)
    assert trainer.policy.hidden_size == 16


def test_warm_start_puts_the_policy_in_every_copy_of_the_module(tmp_path: Path) -> None:
    torch.manual_seed(5)
    start = LstmPolicy(hidden_size=16)  # what a DAgger run's policy.pt holds
    start.save(tmp_path / "policy.pt")
    expected = start.state_dict()
    config = multi_config(run={"workers": 1}, model={"init_from": str(tmp_path)})
    algo = multi_algorithm_config(config, env_config(config, [link_from_spec(LINK)])).build_algo()
    try:
        learner = ppo._learner_call(
            algo, lambda lr: ppo._module(lr, MODULE_ID).policy.state_dict())
        runners = algo.env_runner_group.foreach_env_runner(
            lambda r: {k: v.clone() for k, v in r.module[MODULE_ID].policy.state_dict().items()},
            local_env_runner=False)
    finally:
        algo.stop()
    assert len(runners) == 1
    for weights in (learner, runners[0]):
        assert weights.keys() == expected.keys()
        for key in expected:
            torch.testing.assert_close(weights[key], expected[key], rtol=0, atol=0)


def test_resume_continues_exactly(tmp_path: Path) -> None:
    small = {"run": {"iterations": 2, "num_envs": 2, "episode_ms": 500.0},
             "ppo": {"minibatch_size": 100, "fair_share_weight": 1.0}}
    straight = train(multi_config(**small), tmp_path / "straight", progress=False, say=quiet)
    first = multi_config(**{**small, "run": {**small["run"], "iterations": 1}})
    train(first, tmp_path / "resumed", progress=False, say=quiet)
    resumed = train(multi_config(**small), tmp_path / "resumed", resume=True,
                    progress=False, say=quiet)
    assert resumed.iteration == straight.iteration == 2
    assert resumed.history == straight.history
    a = _weights(tmp_path / "straight" / "checkpoint.pt")
    b = _weights(tmp_path / "resumed" / "checkpoint.pt")
    assert a.keys() == b.keys() and "value_head.weight" in a
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)


def test_the_fair_share_bonus_peaks_at_the_fair_share() -> None:
    assert fair_share_bonus(3.0, 3.0, 2.0, 0.25) == 2.0
    assert fair_share_bonus(3.0 * 1.25, 3.0, 2.0, 0.25) == pytest.approx(2.0 / np.e)
    assert fair_share_bonus(0.0, 3.0, 2.0, 0.25) < 1e-6
    assert fair_share_bonus(1.0, 0.0, 2.0, 0.25) == 0.0  # nothing to share
    assert fair_share_bonus(1.0, 3.0, 0.0, 0.25) == 0.0


def test_the_env_adds_the_bonus_to_each_flows_own_reward() -> None:
    base = EnvConfig(links=[LINK], episode_ms=300.0, competitors=["self"])
    plain = FairShareEnv({"config": base, "fair_share": FairShare()})
    fair = FairShareEnv({"config": base, "fair_share": FairShare(0.5, 0.5)})
    plain.reset(seed=4)
    fair.reset(seed=4)
    rng = np.random.default_rng(0)
    added = []
    for _ in range(30):
        actions = {a: int(rng.integers(_core.NUM_ACTIONS)) for a in plain.agents}
        _, r0, _, _, _ = plain.step(actions)
        _, r1, _, _, info = fair.step(actions)
        for agent, reward in r1.items():
            bonus = fair_share_bonus(info[agent]["delivered_mbps"],
                                     info[agent]["fair_share_mbps"], 0.5, 0.5)
            assert reward == pytest.approx(r0[agent] + bonus)
            added.append(bonus)
    assert max(added) > 0.1  # the bonus is not always nothing


def test_competitors_are_config_keys_passed_to_the_env() -> None:
    config = multi_config(links={"competitors": ["none", "cubic", "bbr+self", "self:2"],
                                 "competitor_starts": ["before", "after"],
                                 "competitor_stagger_ms": 500.0, "competitor_stop": 0.5})
    assert config.links.shared
    env = FairShareEnv(multi_env_config(config, env_config(config, [link_from_spec(LINK)])))
    assert env.config.competitors == ["none", "cubic", "bbr+self", "self:2"]
    assert env.config.competitor_starts == ["before", "after"]
    assert env.possible_agents == ["flow_0", "flow_1", "flow_2"]
    alone = multi_config(links={"competitors": ["none"]})
    assert not alone.links.shared and trainer_class("ppo", False).__name__ == "Ppo"


@pytest.mark.parametrize(("links", "algorithm", "message"), [
    ({"competitors": ["cubic", "cubik"]}, "ppo", r"\[links\] competitors: competitor 'cubik'"),
    ({"competitors": ["self:0"]}, "ppo", r"\[links\] competitors: .*'self:N' must be >= 1"),
    ({"competitors": []}, "ppo", r"\[links\] competitors: must be a non-empty list"),
    ({"competitor_starts": ["later"]}, "ppo", r"\[links\] competitor_starts: must be"),
    ({"competitor_stop": 2.0}, "ppo", r"\[links\] competitor_stop: must be in \[0, 1\]"),
])
def test_a_bad_competitors_config_is_one_line_naming_the_key(
        tmp_path: Path, capsys: pytest.CaptureFixture, links: dict[str, Any], algorithm: str,
        message: str) -> None:
    doc = multi_doc(links=links, algorithm={"name": algorithm})
    if algorithm == "dagger":
        del doc["ppo"]
    path = tmp_path / "bad.toml"
    path.write_text(_toml(doc))
    out = tmp_path / "out"
    assert main(["train", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err), err
    assert not out.exists()


def _toml(doc: dict[str, dict[str, Any]]) -> str:
    """TOML of the doc (its values are strings, numbers, booleans and lists of them, which
    JSON writes as TOML does)."""
    return "".join(f"[{name}]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
                   for name, keys in doc.items())


def _weights(path: Path) -> dict[str, torch.Tensor]:
    data = torch.load(path, weights_only=True)
    return data["trainer"]["learner"]["rl_module"][MODULE_ID]
