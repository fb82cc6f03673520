"""Observation version 6 beside version 4: one C++ computation read by the simulator, a
policy's file, `ccgym eval` and its ONNX export alike (policies/cpp/features.hh)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from ccgym.deploy.export import export_policy, max_difference, recorded_observations
from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.envs.scoring import simulate_scheme
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.onnx_policy import OnnxPolicy

V4, V6 = _core.OBSERVATION_VERSION, _core.COMPETITION_OBSERVATION_VERSION
# 24 Mbit/s, 20 ms one-way: a BDP of 80 packets, a buffer of 4.
LINK = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320"
DRAIN = _core.OBS_SCALED  # feature 10 of version 6: Copa's drain test


def observations_at(sim: _core.Simulator, flow: int, previous: int) -> dict[int, np.ndarray]:
    return {v: sim.observation(previous, flow, v) for v in (V4, V6)}


def test_version_6_is_version_4_with_three_readings_more() -> None:
    assert _core.OBS_DIMS == {V4: _core.OBS_DIM, V6: _core.OBS_DIM + 3}
    sim = _core.Simulator(LINK, [("cubic", 0.0, -1.0), (_core.EXTERNAL_SCHEME, 0.0, -1.0)], 3)
    sim.run_until(3000.0)
    obs = observations_at(sim, 1, previous=2)
    assert obs[V6].shape == (_core.OBS_DIMS[V6],)
    np.testing.assert_array_equal(obs[V6][:_core.OBS_SCALED], obs[V4][:_core.OBS_SCALED])
    np.testing.assert_array_equal(obs[V6][_core.OBS_SCALED + 3:], obs[V4][_core.OBS_SCALED:])
    assert obs[V6][_core.OBS_SCALED + 3 + 2] == 1.0  # the previous action's one-hot
    with pytest.raises(ValueError, match="observation version"):
        sim.observation(0, 1, 99)


def test_the_drain_test_tells_a_competitors_standing_queue_from_an_empty_link() -> None:
    # A flow holding 20 packets, far below the 80-packet pipe: alone, no queue ever stands;
    # beside bbr (which keeps about a BDP queued in its own flight), one stands throughout.
    def drain_reading(competitors: list[str]) -> float:
        flows = [(c, 0.0, -1.0) for c in competitors] + [(_core.EXTERNAL_SCHEME, 0.0, -1.0)]
        sim = _core.Simulator(LINK, flows, 1)
        mine = len(competitors)
        sim.set_window(20.0, mine)
        readings = []
        for k in range(1, 1001):  # 10 s, the last 5 read
            sim.run_until(k * float(_core.STEP_MS))
            if k > 500:
                readings.append(sim.observation(_core.HOLD_ACTION, mine, V6)[DRAIN])
        return float(np.mean(readings))

    alone, beside_bbr = drain_reading([]), drain_reading(["bbr"])
    assert alone < 0.1, alone
    assert beside_bbr > 0.6, beside_bbr


def test_a_policy_file_keeps_its_version_and_a_version_4_file_still_loads(tmp_path: Path) -> None:
    torch.manual_seed(0)
    for version in (V4, V6):
        LstmPolicy(hidden_size=8, observation_version=version).save(tmp_path / f"v{version}.pt")
        loaded = LstmPolicy.load(tmp_path / f"v{version}.pt")
        assert (loaded.observation_version, loaded.obs_dim) == (version, _core.OBS_DIMS[version])
    data = torch.load(tmp_path / f"v{V6}.pt", weights_only=True)
    data["observation_version"] = V4  # a version-6 network claiming version 4: wrong sizes
    torch.save(data, tmp_path / "claims.pt")
    with pytest.raises(ValueError, match=f"made for {_core.OBS_DIMS[V6]} inputs"):
        LstmPolicy.load(tmp_path / "claims.pt")
    with pytest.raises(ValueError, match="observation version 9"):
        LstmPolicy(observation_version=9)


def test_a_version_6_policy_evaluates_and_exports_as_it_trains(tmp_path: Path) -> None:
    torch.manual_seed(1)
    policy = LstmPolicy(hidden_size=16, observation_version=V6)
    policy.save(tmp_path / "v6.pt")
    exported = export_policy(policy, tmp_path / "v6.onnx")
    observations = recorded_observations("rate_mbps=12,delay_ms=20", 300, version=V6)
    assert observations.shape == (300, _core.OBS_DIMS[V6])
    assert np.ptp(observations[:, DRAIN + 1]) > 0  # the rate ratio moves: inputs exercised
    assert max_difference(policy, exported, observations) < 1e-5
    onnx = OnnxPolicy(exported)
    assert (onnx.observation_version, onnx.obs_dim) == (V6, _core.OBS_DIMS[V6])
    # `ccgym eval --schemes lstm:FILE` runs the .pt and the .onnx to the same run.
    link = link_from_spec("rate_mbps=12,delay_ms=20")
    [from_pt] = simulate_scheme(link, f"lstm:{tmp_path / 'v6.pt'}", [2], 3000.0)
    [from_onnx] = simulate_scheme(link, f"lstm:{exported}", [2], 3000.0)
    assert from_pt.metrics.throughput_mbps > 0
    assert from_pt.metrics.throughput_mbps == pytest.approx(from_onnx.metrics.throughput_mbps)


def test_training_rollouts_observe_the_version_asked_for() -> None:
    from ccgym.envs.config import EnvConfig
    from ccgym.envs.engine import Engine
    from gymnasium.utils import seeding

    runs = {}
    for version in (V4, V6):
        config = EnvConfig(links=[LINK], episode_ms=2000.0, competitors=["bbr"],
                           observation_version=version)
        links = Engine(2, config)
        for i in range(2):
            links.reset_sim(i, seeding.np_random(7 + i)[0])
        steps = [links.first_step().obs]
        for _ in range(150):
            steps.append(links.step(np.full(links.num_rows, _core.HOLD_ACTION + 1,
                                            dtype=np.int32)).obs)
        runs[version] = np.stack(steps)
    assert runs[V6].shape[-1] == _core.OBS_DIMS[V6]
    # The same simulations: version 6's first readings and one-hot are version 4's.
    np.testing.assert_array_equal(runs[V6][..., :_core.OBS_SCALED], runs[V4][..., :_core.OBS_SCALED])
    np.testing.assert_array_equal(runs[V6][..., _core.OBS_SCALED + 3:],
                                  runs[V4][..., _core.OBS_SCALED:])
    assert np.ptp(runs[V6][..., DRAIN]) > 0
