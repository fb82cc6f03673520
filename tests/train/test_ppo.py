"""PPO on RLlib end to end on tiny links: it learns, warm-starts from DAgger exactly, resumes
exactly, and its policy exports to ONNX like DAgger's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from ccgym.cli import main
from ccgym.deploy.export import max_difference, recorded_observations
from ccgym.emulators import _core
from ccgym.policies.lstm import LstmPolicy
from ccgym.train import ppo
from ccgym.emulators.link_names import link_from_spec
from ccgym.train.config import TrainConfig, env_config, parse_config, to_toml
from ccgym.train.loop import RunState, train
from ccgym.train.pool import RolloutPool
from ccgym.train.ppo_module import LOGIT_RANGE

# The BDP of 3 Mbit/s at a 40 ms RTT is 10 packets, the initial window: holding it is optimal
# (full rate, no queue; a return near 0). The 10-packet buffer bounds the queue, so the delay a
# window causes shows up in the reward within a few RTTs, and a short run can learn from it.
TINY_LINK = "rate_mbps=3,delay_ms=20,queue=droptail:packets=10"


def ppo_doc(**sections: dict[str, Any]) -> dict[str, dict[str, Any]]:
    doc = {
        "run": {"name": "tiny-ppo", "seed": 3, "workers": 0, "iterations": 3, "num_envs": 8,
                "episode_ms": 2000.0, "patience": 100},
        "links": {"train": [TINY_LINK], "validation": [f"name=held-out,{TINY_LINK}"]},
        "model": {"hidden_size": 16},
        "algorithm": {"name": "ppo"},
        "ppo": {"minibatch_size": 400, "num_epochs": 8, "entropy_coeff": 0.0, "gamma": 0.9},
        "optimizer": {"lr": 0.01},
        "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    for name, values in sections.items():
        doc.setdefault(name, {}).update(values)
    return doc


def ppo_config(**sections: dict[str, Any]) -> TrainConfig:
    return parse_config(ppo_doc(**sections), "tiny-ppo")


def quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module", autouse=True)
def ray_instance():
    """One local Ray for the module: RLlib needs it, and starting it is most of a tiny run."""
    with RolloutPool(2):
        yield


@pytest.fixture(scope="module")
def learned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunState]:
    run_dir = tmp_path_factory.mktemp("ppo") / "run"
    return run_dir, train(ppo_config(), run_dir, progress=False, say=quiet)


def test_ppo_improves_the_return_of_a_tiny_link(learned: tuple[Path, RunState]) -> None:
    run_dir, state = learned
    returns = [h["episode_return"] for h in state.history]
    assert state.iteration == 3 and len(returns) == 3
    # A uniformly random first policy scores about -11 per episode; the optimum is near 0.
    assert returns[0] < -8
    assert max(returns[1:]) > returns[0] + 3, returns
    assert all(r <= 0.05 for r in returns)  # the reward's ideal is 0 per step
    assert (run_dir / "policy.pt").is_file() and (run_dir / "checkpoint.pt").is_file()


def test_tensorboard_has_the_ppo_tags(learned: tuple[Path, RunState]) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir, _ = learned
    events = EventAccumulator(str(run_dir))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for tag in ("losses/policy", "losses/value", "losses/entropy", "losses/KL", "eval/score",
                "eval/validation/score", "charts/SPS"):
        assert tag in tags, tag
        assert len(events.Scalars(tag)) == 3
    assert min(e.value for e in events.Scalars("charts/SPS")) > 0
    assert "hyperparameters/text_summary" in events.Tags()["tensors"]


def test_export_of_a_ppo_policy_matches_pytorch(learned: tuple[Path, RunState],
                                                 tmp_path: Path) -> None:
    run_dir, _ = learned
    out = tmp_path / "policy.onnx"
    assert main(["export", str(run_dir), "-o", str(out)]) == 0
    policy = LstmPolicy.load(run_dir / "policy.pt")
    observations = recorded_observations(TINY_LINK, 200, seed=2)
    assert max_difference(policy, out, observations) < 1e-4


def _learner_weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    data = torch.load(checkpoint, map_location="cpu", weights_only=True)
    return data["trainer"]["learner"]["rl_module"]["default_policy"]


def test_resume_continues_exactly(tmp_path: Path) -> None:
    small = {"run": {"iterations": 2, "num_envs": 4, "episode_ms": 500.0},
             "ppo": {"minibatch_size": 100}}
    straight = train(ppo_config(**small), tmp_path / "straight", progress=False, say=quiet)
    first = ppo_config(**{**small, "run": {**small["run"], "iterations": 1}})
    train(first, tmp_path / "resumed", progress=False, say=quiet)
    resumed = train(ppo_config(**small), tmp_path / "resumed", resume=True,
                    progress=False, say=quiet)
    assert resumed.iteration == straight.iteration == 2
    assert resumed.history == straight.history  # returns, losses, scores of both iterations
    a = _learner_weights(tmp_path / "straight" / "checkpoint.pt")
    b = _learner_weights(tmp_path / "resumed" / "checkpoint.pt")
    assert a.keys() == b.keys() and "value_head.weight" in a
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    # The resumed run appended one iteration: nothing finished was lost or repeated.
    assert [h["iteration"] for h in resumed.history] == [1.0, 2.0]


# A curriculum round's space: constant links at 20 ms, of 4-48 Mbit/s.
CURRICULUM_SPACE = """
rate_mbps = { min = 4, max = 48, log = true }
delay_ms = 20
buffer_bdp = 1
loss = 0
delivery = ["constant"]
"""


def test_the_curriculum_trains_ppo_on_the_links_found_and_resumes_exactly(tmp_path: Path) -> None:
    space = tmp_path / "space.toml"
    space.write_text(CURRICULUM_SPACE)

    def config(iterations: int, every: int = 2) -> TrainConfig:
        return ppo_config(run={"iterations": iterations, "num_envs": 4, "episode_ms": 500.0},
                          ppo={"minibatch_size": 100},
                          curriculum={"every": every, "space": str(space), "trials": 2,
                                      "seeds": 1, "keep": 1, "weight": 0.5,
                                      "baselines": ["vegas"], "duration_s": 2.0})

    # A round before iteration 3; the run stops after it and resumes for iteration 4, which no
    # round precedes: its env runners are built on the training links and then on the mix.
    first = train(config(3), tmp_path / "resumed", progress=False, say=quiet)
    assert len(first.curriculum) == 1
    resumed = train(config(4), tmp_path / "resumed", resume=True, progress=False, say=quiet)
    straight = train(config(4), tmp_path / "straight", progress=False, say=quiet)
    assert resumed.curriculum == straight.curriculum == first.curriculum
    assert resumed.history == straight.history
    a = _learner_weights(tmp_path / "straight" / "checkpoint.pt")
    b = _learner_weights(tmp_path / "resumed" / "checkpoint.pt")
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0)
    # The found link is trained on: without rounds the same seed goes alike up to the round,
    # and otherwise after it.
    alone = train(config(4, every=0), tmp_path / "alone", progress=False, say=quiet)
    assert alone.history[:2] == straight.history[:2]
    assert alone.history[2:] != straight.history[2:]


def test_warm_start_loads_dagger_weights_exactly(tmp_path: Path) -> None:
    dagger_doc = {
        "run": {"name": "tiny", "seed": 3, "workers": 0, "iterations": 1, "num_envs": 2,
                "episode_ms": 500.0},
        "links": {"train": [TINY_LINK], "validation": [TINY_LINK]},
        "model": {"hidden_size": 16},
        "dagger": {"rollouts_per_iteration": 2, "epochs": 1},
        "eval": {"duration_s": 1.0, "baselines": [], "oracle": False, "leaderboard": False},
    }
    dagger_run = tmp_path / "dagger"
    train(parse_config(dagger_doc, "dagger"), dagger_run, progress=False, say=quiet)
    expected = LstmPolicy.load(dagger_run / "policy.pt").state_dict()

    # One env runner as a Ray actor: the weights must reach it too, not only the learner.
    config = ppo_config(run={"workers": 1}, model={"init_from": str(dagger_run)})
    algo = ppo.algorithm_config(config, env_config(config, [link_from_spec(TINY_LINK)])).build_algo()
    try:
        learner = ppo._learner_call(algo, lambda lr: ppo._module(lr).policy.state_dict())
        runners = algo.env_runner_group.foreach_env_runner(
            lambda r: {k: v.clone() for k, v in r.module.policy.state_dict().items()},
            local_env_runner=False)
    finally:
        algo.stop()
    assert len(runners) == 1
    for weights in (learner, runners[0]):
        assert weights.keys() == expected.keys()
        for key in expected:
            torch.testing.assert_close(weights[key], expected[key], rtol=0, atol=0)


def test_warm_start_refuses_a_policy_of_another_size(tmp_path: Path) -> None:
    LstmPolicy(hidden_size=8).save(tmp_path / "policy.pt")
    config = ppo_config(model={"init_from": str(tmp_path)})
    with pytest.raises(Exception, match="hidden_size 8"):
        ppo.init_policy(config)


def test_config_errors_name_the_key() -> None:
    with pytest.raises(Exception, match=r"\[algorithm\] name: must be one of dagger, ppo"):
        parse_config(ppo_doc(algorithm={"name": "a2c"}), "c")
    with pytest.raises(Exception, match=r"\[ppo\].*unknown key 'gama'.*valid keys"):
        parse_config(ppo_doc(ppo={"gama": 0.9}), "c")
    with pytest.raises(Exception, match=r"\[run\] episode_ms: must be a multiple"):
        parse_config(ppo_doc(run={"episode_ms": 1005.0}), "c")
    with pytest.raises(Exception, match=r"\[ppo\] minibatch_size: must be at most .* 1600 steps"):
        parse_config(ppo_doc(ppo={"minibatch_size": 1601}), "c")
    with pytest.raises(Exception, match=r"\[optimizer\] lr_decay"):
        parse_config(ppo_doc(optimizer={"lr_decay": 0.5}), "c")


def test_sample_seeds_differ_by_runner_and_iteration() -> None:
    seeds = {ppo.stream_seed(3, k, ppo.SAMPLE_STREAM, w) for k in (1, 2) for w in (0, 1, 2)}
    assert len(seeds) == 6 and all(0 <= s < 2**31 for s in seeds)


def test_cli_refuses_a_missing_init_from_before_making_the_run_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = ppo_config(model={"init_from": str(tmp_path / "runs" / "nope")})
    path = tmp_path / "ppo.toml"
    path.write_text(to_toml(config))
    out = tmp_path / "out"
    assert main(["train", str(path), "--out", str(out)]) == 2
    assert "[model] init_from" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("head", ["log_change", "classes"])
def test_the_actor_samples_from_its_logits_over_the_temperature(head: str) -> None:
    import gymnasium as gym
    from ray.rllib.core.columns import Columns

    from ccgym.train.ppo_module import LstmActorCritic

    module = LstmActorCritic(
        observation_space=gym.spaces.Box(-1, 1, (_core.OBS_DIM,), np.float32),
        action_space=gym.spaces.Discrete(_core.NUM_ACTIONS),
        model_config={"hidden_size": 8, "head": head, "temperature": 0.01})
    obs = torch.rand(2, 4, _core.OBS_DIM)
    state = {"h": torch.zeros(2, 8), "c": torch.zeros(2, 8)}
    with torch.no_grad():
        out = module._forward({Columns.OBS: obs, Columns.STATE_IN: state})
        expected, _ = module.policy(obs)
    # Only the log_change head's squared log changes are scaled; a classifier's logits are
    # trained as they are. The greedy action is the policy's either way.
    temperature = 0.01 if head == "log_change" else 1.0
    scaled = expected / temperature
    floor = scaled.max(dim=-1, keepdim=True).values - LOGIT_RANGE
    torch.testing.assert_close(out[Columns.ACTION_DIST_INPUTS], torch.maximum(scaled, floor))
    assert torch.equal(out[Columns.ACTION_DIST_INPUTS].argmax(-1), expected.argmax(-1))


def test_far_actions_keep_a_probability_so_the_kl_stays_finite() -> None:
    import gymnasium as gym
    from ray.rllib.core.columns import Columns

    from ccgym.train.ppo_module import LstmActorCritic

    module = LstmActorCritic(
        observation_space=gym.spaces.Box(-1, 1, (_core.OBS_DIM,), np.float32),
        action_space=gym.spaces.Discrete(_core.NUM_ACTIONS),
        model_config={"hidden_size": 8, "head": "log_change", "temperature": 0.001})
    obs = torch.rand(64, 1, _core.OBS_DIM)
    state = {"h": torch.zeros(64, 8), "c": torch.zeros(64, 8)}
    with torch.no_grad():
        logits = module._forward({Columns.OBS: obs, Columns.STATE_IN: state})[
            Columns.ACTION_DIST_INPUTS]
    # /2 and x2 are hundreds of logits below the greedy step at this temperature.
    assert float((logits.max(-1).values - logits.min(-1).values).max()) == pytest.approx(LOGIT_RANGE)
    p = torch.distributions.Categorical(logits=logits)
    q = torch.distributions.Categorical(logits=logits.roll(1, dims=-1))
    assert (p.probs > 0).all()
    assert torch.isfinite(torch.distributions.kl_divergence(p, q)).all()


def test_warm_start_refuses_a_policy_with_another_head(tmp_path: Path) -> None:
    LstmPolicy(hidden_size=16, head="log_change").save(tmp_path / "policy.pt")
    config = ppo_config(model={"init_from": str(tmp_path)})
    with pytest.raises(Exception, match="has the log_change head"):
        ppo.init_policy(config)
