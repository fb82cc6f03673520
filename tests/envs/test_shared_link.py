"""ccgym/SharedLink-v0 and the multi-agent env: gymnasium's checker, determinism, Link-v0's
episodes when nothing competes, competitors' starts and stops, the fair share, config errors."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ccgym.envs  # noqa: F401  (registers the envs)
from ccgym.emulators import _core
from ccgym.envs.competitors import draw_scenario, parse_entry
from ccgym.envs.config import EnvConfig
from ccgym.envs.link_env import LinkEnv
from ccgym.envs.multi_agent import SharedLinkMultiAgentEnv
from ccgym.envs.shared_link import SharedLinkEnv

LINK = "rate_mbps=24,delay_ms=20,queue=droptail:packets=80"
CONFIG = {"links": [LINK, "rate_mbps=12,delivery=poisson,delay_ms=10"], "episode_ms": 2000,
          "competitors": ["none", "cubic", "bbr+vegas", "copa"],
          "competitor_starts": ["before", "with", "after"], "competitor_stagger_ms": 500.0,
          "competitor_stop": 0.5, "oracle_duration_ms": 2000}
MULTI = {**CONFIG, "competitors": ["self", "self:2+cubic", "bbr"]}


def rollout(env, seed, steps, policy_seed=0):
    actions = np.random.default_rng(policy_seed).integers(_core.NUM_ACTIONS, size=steps)
    obs, info = env.reset(seed=seed)
    out = [(obs, 0.0, info)]
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs, reward, info))
        if terminated or truncated:
            obs, info = env.reset()
            out.append((obs, 0.0, info))
    return out


def test_passes_gymnasiums_checker_without_warnings():
    env = gymnasium.make("ccgym/SharedLink-v0", config=CONFIG).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [str(w.message) for w in caught] == []


def test_same_seed_same_rollout_different_seed_differs():
    a = rollout(SharedLinkEnv(CONFIG), seed=3, steps=450)   # over two episodes
    b = rollout(SharedLinkEnv(CONFIG), seed=3, steps=450)
    c = rollout(SharedLinkEnv(CONFIG), seed=4, steps=450)
    for (oa, ra, ia), (ob, rb, ib) in zip(a, b, strict=True):
        np.testing.assert_array_equal(oa, ob)
        assert ra == rb and ia == ib
    assert any(ia != ic for (_, _, ia), (_, _, ic) in zip(a, c))


def test_alone_it_runs_link_v0s_episodes():
    alone = {**CONFIG, "competitors": ["none"], "random_start": 0.5}
    shared = rollout(SharedLinkEnv(alone), seed=5, steps=420)
    single = rollout(LinkEnv({k: v for k, v in alone.items()
                              if not k.startswith("competitor")}), seed=5, steps=420)
    for (os_, rs, is_), (ol, rl, il) in zip(shared, single, strict=True):
        np.testing.assert_array_equal(os_, ol)
        assert rs == rl
        assert (is_["window"], is_["delay_ms"]) == (il["window"], il["delay_ms"])


def test_competitors_start_and_stop_as_drawn_and_the_fair_share_follows():
    config = {**CONFIG, "links": [LINK], "competitors": ["cubic+vegas"]}
    env = SharedLinkEnv(config)
    seen = set()
    for seed in range(6):
        env.reset(seed=seed)
        scenario = env.engine.scenarios[0]
        now = scenario.begin_ms
        for _ in range(200):
            _, _, _, _, info = env.step(_core.HOLD_ACTION)
            now += _core.STEP_MS
            expected = sum(f.start_ms <= now and (f.stop_ms < 0 or now < f.stop_ms)
                           for f in scenario.flows)
            assert info["active_flows"] == expected
            assert info["capacity_mbps"] == pytest.approx(24.0, abs=1.3)
            assert info["fair_share_mbps"] == pytest.approx(info["capacity_mbps"] / expected)
            seen.add(expected)
    assert seen == {1, 2, 3}


def test_scenarios_place_starts_before_with_and_after_the_learned_flow():
    rng = np.random.default_rng(0)
    for mode in ("before", "with", "after"):
        s = draw_scenario(rng, "cubic+self", parse_entry("cubic+self"), [mode], 500.0, 0.0,
                          1000.0)
        learned, cubic, other = s.flows[0], s.flows[1], s.flows[2]
        assert learned.learned and other.learned and not cubic.learned
        gap = cubic.start_ms - learned.start_ms
        assert {"before": -500 <= gap < 0, "with": gap == 0, "after": 0 < gap <= 500}[mode]
        assert min(f.start_ms for f in s.flows) == 0.0
        assert s.begin_ms == min(learned.start_ms, other.start_ms)
        assert s.end_ms == s.begin_ms + 1000.0


@pytest.mark.parametrize("bad", [["cubics"], ["self:0"], ["external"], [], "cubic",
                                 ["cubic+nope"]])
def test_bad_competitors_are_one_precise_error(bad):
    with pytest.raises(ValueError, match="EnvConfig: competitors"):
        EnvConfig.build(CONFIG, competitors=bad)


def test_link_v0_and_the_single_agent_env_refuse_what_they_cannot_run():
    with pytest.raises(ValueError, match="competitors: ccgym/Link-v0 runs one flow"):
        LinkEnv(CONFIG)
    with pytest.raises(ValueError, match="'self' needs the multi-agent env"):
        SharedLinkEnv(MULTI)
    with pytest.raises(ValueError, match="competitor_starts"):
        EnvConfig.build(CONFIG, competitor_starts=["later"])


def acting(obs, terminated):
    return [a for a in obs if not terminated.get(a, False)]


def multi_rollout(env, seed, steps):
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=seed)
    terminated = {}
    out = [(obs, {}, infos)]
    for _ in range(steps):
        obs, rewards, terminated, truncated, infos = env.step(
            {a: int(rng.integers(_core.NUM_ACTIONS)) for a in acting(obs, terminated)})
        out.append((obs, rewards, infos))
        if truncated["__all__"]:
            obs, infos = env.reset()
            out.append((obs, {}, infos))
    return out


def test_multi_agent_env_is_deterministic_under_a_seed():
    a = multi_rollout(SharedLinkMultiAgentEnv(MULTI), seed=2, steps=450)
    b = multi_rollout(SharedLinkMultiAgentEnv(MULTI), seed=2, steps=450)
    for (oa, ra, ia), (ob, rb, ib) in zip(a, b, strict=True):
        assert oa.keys() == ob.keys() and ra == rb and ia == ib
        for agent in oa:
            np.testing.assert_array_equal(oa[agent], ob[agent])


def test_agents_join_when_their_flow_starts_and_leave_when_it_stops():
    env = SharedLinkMultiAgentEnv(MULTI, competitors=["self:2"])
    assert env.possible_agents == ["flow_0", "flow_1", "flow_2"]
    for seed in range(4):
        obs, _ = env.reset(seed=seed)
        flows = env.engine.scenarios[0].flows
        now = env.engine.scenarios[0].begin_ms
        assert set(obs) == {f"flow_{k}" for k, f in enumerate(flows) if f.start_ms <= now}
        present, done, terminated, left = list(obs), False, {}, set()
        while not done:
            obs, rewards, terminated, truncated, _ = env.step({a: 3 for a in present})
            now += _core.STEP_MS
            done = truncated["__all__"]
            assert set(rewards) == set(present)  # those that acted, and only they
            assert not set(obs) & left           # who left stays away
            for agent in obs:
                flow = flows[int(agent.removeprefix("flow_"))]
                assert flow.start_ms <= now
                assert terminated[agent] == (0 <= flow.stop_ms <= now)
            assert set(env.agents) == set(obs)
            left |= {a for a in obs if terminated[a]}
            present = acting(obs, terminated)
        assert set(truncated) - {"__all__"} <= set(obs)
        assert "flow_0" in obs and truncated["flow_0"]


def test_passes_rllibs_multi_agent_checker():
    from ray.rllib.utils.pre_checks.env import check_multiagent_environments

    check_multiagent_environments(SharedLinkMultiAgentEnv(MULTI))


def test_each_agent_observes_its_own_flow():
    env = SharedLinkMultiAgentEnv(MULTI, competitors=["self"], competitor_starts=["with"],
                                  competitor_stop=0.0)
    env.reset(seed=1)
    for _ in range(50):  # flow_0 halves its window, flow_1 doubles it: they differ
        obs, _, _, _, infos = env.step({"flow_0": 0, "flow_1": 6})
    assert infos["flow_0"]["window"] < infos["flow_1"]["window"]
    assert not np.array_equal(obs["flow_0"], obs["flow_1"])
    window = _core.OBS_WINDOW_INDEX
    assert obs["flow_0"][window] < obs["flow_1"][window]
