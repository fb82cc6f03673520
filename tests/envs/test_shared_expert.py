"""The DAgger expert on the shared-link envs (oracle/shared.py's definition, vectorized):
its window on known answers, and flows that follow it sharing the link fairly."""

import numpy as np
import pytest

from ccgym.measure.metrics import jain_index
from ccgym.emulators import _core
from ccgym.envs.multi_agent import SharedLinkMultiAgentEnv
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import Engine
from ccgym.envs.link_env import LinkEnv
from ccgym.envs.shared_link import SharedLinkEnv

CONSTANT = "rate_mbps=24,delay_ms=20"   # BDP 80 packets
BDP = 80.0
RAMP_STEPS = 300                        # 3 s: slow start and the growth ceiling


def expert_episode(env, steps):
    """Drives every agent by the expert; per step, each agent's delivered Mbit/s and the
    expert's windows."""
    env.reset(seed=1)
    delivered, windows = [], []
    for _ in range(steps):
        windows.append(env.engine.expert_windows().copy())
        _, _, _, _, infos = env.step(env.expert_actions())
        delivered.append([infos[a]["delivered_mbps"] if a in infos else 0.0
                          for a in env.possible_agents])
    return np.array(delivered), np.array(windows)


@pytest.mark.parametrize("entry", ["self", "self:2"])
def test_learned_flows_on_a_constant_link_converge_to_equal_shares(entry):
    env = SharedLinkMultiAgentEnv({"links": [CONSTANT], "episode_ms": 12_000,
                                   "competitors": [entry], "competitor_starts": ["after"],
                                   "competitor_stagger_ms": 2000.0})
    delivered, windows = expert_episode(env, 1200)
    totals = delivered[RAMP_STEPS + 200:].sum(axis=0)   # the later flows have ramped up too
    assert jain_index(totals) >= 0.95
    # Each the BDP (the constant link's ideal window) over the flows, once all send.
    flows = len(env.possible_agents)
    np.testing.assert_allclose(windows[-1], [BDP / flows] * flows)


def test_with_nothing_competing_it_labels_as_link_v0s_expert():
    config = {"links": ["rate_mbps=24,delay_ms=20,queue=droptail:packets=80",
                        "rate_mbps=12,delivery=poisson,delay_ms=10"], "episode_ms": 2000,
              "random_start": 0.5, "oracle_duration_ms": 2000}
    shared = SharedLinkEnv({**config, "competitors": ["none"]})
    single = LinkEnv(config)
    shared.reset(seed=4)
    _, info = single.reset(seed=4)
    for step in range(450):   # over two episodes
        assert shared.expert_action() == info["expert_action"], step
        action = (step * 5) % _core.NUM_ACTIONS
        _, _, _, truncated, _ = shared.step(action)
        _, _, _, _, info = single.step(action)
        if truncated:
            shared.reset()
            _, info = single.reset()


def test_the_ideals_margin_is_shared_on_a_droptail_link():
    link = "rate_mbps=24,delay_ms=20,queue=droptail:packets=80"
    config = EnvConfig.build({"links": [link], "competitors": ["self"],
                              "oracle_duration_ms": 5000})
    engine = Engine(1, config)
    engine.reset_sim(0, np.random.default_rng(1))
    engine.first_step()
    ideal = engine.ideal_windows()[0]
    assert ideal != BDP   # a searched window, not the BDP
    np.testing.assert_allclose(engine.expert_windows(), [ideal / 2, ideal / 2])


@pytest.mark.parametrize(("fixed", "expected"), [(120, 120.0), (20, 20.0)])
def test_against_a_fixed_window_the_expert_keeps_as_many_in_flight(fixed, expected):
    env = SharedLinkEnv({"links": [CONSTANT], "competitors": [f"fixed:window={fixed}"],
                         "competitor_starts": ["with"]})
    env.reset(seed=1)
    for _ in range(RAMP_STEPS):
        env.step(env.expert_action())
    # fixed:window=W keeps W packets in flight, above the BDP's half (120) or below (20).
    assert env.engine.expert_windows()[0] == pytest.approx(expected)


def test_an_expert_flow_holds_its_share_against_cubic_on_a_one_bdp_droptail():
    env = SharedLinkEnv({"links": ["rate_mbps=24,delay_ms=20,queue=droptail:packets=80"],
                         "competitors": ["cubic"], "competitor_starts": ["before"],
                         "competitor_stagger_ms": 3000.0, "episode_ms": 15_000,
                         "oracle_duration_ms": 5000})
    env.reset(seed=2)
    delivered = capacity = 0.0
    for step in range(1500):
        _, _, _, _, info = env.step(env.expert_action())
        if step >= RAMP_STEPS:
            delivered += info["delivered_mbps"]
            capacity += info["capacity_mbps"]
    # cubic keeps a 1-BDP buffer's link busy: what the link carried is its capacity.
    assert 0.35 <= delivered / capacity <= 0.65


def test_two_learned_flows_beside_cubic_each_hold_about_a_third():
    env = SharedLinkMultiAgentEnv({"links": ["rate_mbps=24,delay_ms=20,queue=droptail:packets=80"],
                                   "competitors": ["cubic+self"], "competitor_starts": ["with"],
                                   "episode_ms": 15_000, "oracle_duration_ms": 5000})
    env.reset(seed=1)
    delivered, capacity = np.zeros(2), 0.0
    for step in range(1500):
        _, _, _, _, infos = env.step(env.expert_actions())
        if step >= RAMP_STEPS:
            delivered += [infos["flow_0"]["delivered_mbps"], infos["flow_1"]["delivered_mbps"]]
            capacity += infos["flow_0"]["capacity_mbps"]
    shares = delivered / capacity   # cubic keeps the link busy: it carried its capacity
    assert np.all((shares >= 0.2) & (shares <= 0.45)), shares


def test_multi_agent_expert_labels_exactly_the_acting_agents():
    env = SharedLinkMultiAgentEnv({"links": [CONSTANT], "competitors": ["self:2+cubic"],
                                   "competitor_starts": ["after"],
                                   "competitor_stagger_ms": 1000.0})
    env.reset(seed=3)
    seen = set()
    for _ in range(150):
        actions = env.expert_actions()
        assert set(actions) == set(env.agents)
        assert all(0 <= a < _core.NUM_ACTIONS for a in actions.values())
        seen |= set(actions)
        env.step(actions)
    assert seen == {"flow_0", "flow_1", "flow_2"}
