"""LinkEnv: gymnasium's checker, determinism, the info the DAgger trainer reads, config errors."""

import pickle
import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import ccgym.envs  # noqa: F401  (registers ccgym/Link-v0)
from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import UNBOUNDED, observation_space
from ccgym.envs.link_env import LinkEnv
from ccgym.oracle.ideal import ideal_window
from scalar_link_env import ScalarLinkEnv

LINK_12 = "rate_mbps=12,delay_ms=20"
BDP_12 = 40.0
LINKS = [LINK_12, "rate_mbps=24,delay_ms=10",
         "rate_mbps=8,delivery=poisson,delay_ms=15,loss=0.01"]
# Short searches for the Poisson link's oracle keep the tests fast.
FAST = {"links": LINKS, "episode_ms": 300, "oracle_duration_ms": 2000}
INFO_KEYS = {"ideal_window", "expert_action", "window", "link", "delivered_mbps", "delay_ms"}


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
    env = LinkEnv(FAST)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    assert [str(w.message) for w in caught] == []


def test_same_seed_same_rollout_different_seed_differs():
    a = rollout(LinkEnv(FAST), seed=3, steps=100)
    b = rollout(LinkEnv(FAST), seed=3, steps=100)
    c = rollout(LinkEnv(FAST), seed=4, steps=100)
    for (oa, ra, ia), (ob, rb, ib) in zip(a, b, strict=True):
        np.testing.assert_array_equal(oa, ob)
        assert ra == rb and ia == ib
    assert any(not np.array_equal(oa, oc) or ia["link"] != ic["link"]
               for (oa, _, ia), (oc, _, ic) in zip(a, c))


def test_info_carries_the_oracle_and_the_step():
    env = LinkEnv(links=[LINK_12], episode_ms=1000, initial_window=15)
    obs, info = env.reset(seed=1)
    assert set(info) == INFO_KEYS
    assert env.observation_space.contains(obs)
    assert info["ideal_window"] == pytest.approx(40) and info["window"] == 15
    # Before the first ACK (the RTT is 40 ms) the window may not grow, and the expert, which
    # would take 15 closest to 40 by x2, asks for no growth it cannot get.
    assert info["expert_action"] == _core.HOLD_ACTION
    _, _, _, _, info = env.step(_core.ACTION_NAMES.index("x2"))
    assert info["window"] == 15 and info["link"] == LINK_12
    _, _, _, _, info = env.step(_core.ACTION_NAMES.index("/2"))  # but it may shrink
    assert info["window"] == 7.5
    for _ in range(4):  # 50 ms: the first ACKs are in
        _, _, _, _, info = env.step(_core.HOLD_ACTION)
    # Then it grows, to at most twice the flight the ACKs have shown (or the initial window).
    for _ in range(30):
        ceiling = env.engine.vec.growth_ceiling(0)
        before = info["window"]
        _, _, _, _, info = env.step(_core.ACTION_NAMES.index("x2"))
        assert info["window"] == max(before, min(2 * before, ceiling))
    assert info["window"] > 40  # past the BDP within 300 ms (7 RTTs)


def test_first_rewards_worked_out_by_hand():
    # 10 packets leave at 0, take the opportunities at 1..10 ms and arrive 20 ms later:
    # nothing arrives in the first two steps (the delay grows from 20 ms by 10 ms a step,
    # throughput sits at its floor), then all 10 in (20, 30] ms: 12 Mbit/s, the link's
    # rate, at a mean one-way delay of 25.5 ms.
    env = LinkEnv(links=[LINK_12], initial_window=10)
    env.reset(seed=0)
    rewards, infos = zip(*[(r, info) for _, r, _, _, info in (env.step(_core.HOLD_ACTION) for _ in range(3))])
    floor = np.log(0.01)
    assert rewards[0] == pytest.approx(floor - np.log(30 / 20))
    assert rewards[1] == pytest.approx(floor - np.log(40 / 20))
    assert rewards[2] == pytest.approx(-np.log(25.5 / 20))
    assert [i["delay_ms"] for i in infos] == pytest.approx([30, 40, 25.5])
    assert [i["delivered_mbps"] for i in infos] == pytest.approx([0, 0, 12])


def test_following_the_expert_reaches_the_ideal_and_earns_more_than_starving():
    def mean_reward(policy):
        env = LinkEnv(links=[LINK_12], episode_ms=3000)
        _, info = env.reset(seed=0)
        rewards = []
        for _ in range(300):
            _, reward, _, _, info = env.step(policy(info))
            rewards.append(reward)
        return np.mean(rewards[100:]), info

    expert, info = mean_reward(lambda info: info["expert_action"])
    starving, _ = mean_reward(lambda info: 0)  # halve every step: window 1
    assert abs(info["window"] - 40) <= 10
    # At the BDP the link is full and nothing queues: the normalized reward is near 0.
    assert expert > -0.2
    assert starving < expert - 1.0


def test_episode_truncates_after_episode_ms():
    env = LinkEnv(links=[LINK_12], episode_ms=105)  # ceil(105 / 10) = 11 steps
    env.reset(seed=0)
    flags = [env.step(_core.HOLD_ACTION)[3] for _ in range(11)]
    assert flags == [False] * 10 + [True]


def test_gymnasium_make_builds_the_registered_env():
    env = gymnasium.make("ccgym/Link-v0", render_mode=None,
                         config={"links": [LINK_12], "episode_ms": 100})
    obs, info = env.reset(seed=0)
    assert obs.shape == (_core.OBS_DIM,) and obs.dtype == np.float32
    assert env.unwrapped.config.episode_ms == 100


@pytest.mark.parametrize("config, key", [
    ({"episode_ms": -5}, "episode_ms"),
    ({"initial_window": 0}, "initial_window"),
    ({"delay_weight": float("nan")}, "delay_weight"),
    ({"seed": -1}, "seed"),
    ({"episode_len": 100}, "episode_len"),
    ({"links": []}, "links"),
    ({"links": ["rate_mbs=12,delay_ms=20"]}, "rate_mbs"),
    ({"links": "no-such-link-set"}, "no-such-link-set"),
    ({"oracle_lookbacks": []}, "oracle_lookbacks"),
    ({"oracle_lookbacks": [0.5, 1.5]}, "oracle_lookbacks"),
])
def test_bad_config_names_the_key(config, key):
    with pytest.raises(ValueError, match=key):
        LinkEnv(config)


def test_the_expert_follows_the_oracle_of_the_lookbacks_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path))
    # 1 s at 12 Mbit/s, then 1 s at 3 Mbit/s: an oracle counting the RTT ahead shrinks before
    # 1 s, one counting the RTT behind after it.
    stamps = [*range(1, 1001), *range(1004, 2001, 4)]
    (tmp_path / "square.trace").write_text("".join(f"{t}\n" for t in stamps))
    link = f"trace={tmp_path / 'square.trace'},delay_ms=20"
    ideals = {}
    for lookbacks in ([0.0], [1.0]):
        env = LinkEnv(links=[link], episode_ms=2000, oracle_lookbacks=lookbacks,
                      oracle_duration_ms=2000)
        env.reset(seed=1)
        for _ in range(99):   # to 0.99 s
            _, _, _, _, info = env.step(_core.HOLD_ACTION)
        oracle = ideal_window(link, 1, 2000, lookbacks)
        assert oracle.lookback == lookbacks[0]
        assert info["ideal_window"] == pytest.approx(oracle.window(990))
        ideals[lookbacks[0]] = info["ideal_window"]
    assert ideals[1.0] > 1.5 * ideals[0.0]   # 40 opportunities counted against 18


def test_config_object_and_keyword_overrides_agree():
    env = LinkEnv(EnvConfig(links=[LINK_12], episode_ms=500), episode_ms=200)
    assert env.config.episode_ms == 200 and env.config.links == [LINK_12]


def test_random_starts_spread_the_first_window_from_one_packet_to_four_bdps():
    # A BDP of 40 packets, so random starts fall in [1, 160].
    def first_windows(share: float) -> list[float]:
        env = LinkEnv(links=[LINK_12], episode_ms=10, random_start=share)
        windows = []
        for episode in range(200):
            _, info = env.reset(seed=episode)
            windows.append(info["window"])
        return windows

    assert set(first_windows(0.0)) == {_core.INITIAL_WINDOW}
    half = np.array(first_windows(0.5))
    drawn = half[half != _core.INITIAL_WINDOW]
    assert 70 <= len(drawn) <= 130
    assert drawn.min() >= 1.0 and drawn.max() <= 4 * BDP_12
    assert (drawn < 5).any() and (drawn > 80).any()
    assert first_windows(0.5) == half.tolist()  # the seed decides the start


def test_a_random_start_holds_its_window_for_up_to_three_seconds_whatever_the_policy_asks():
    x2 = _core.ACTION_NAMES.index("x2")
    held_a_second = 0
    for episode in range(12):
        env = LinkEnv(links=[LINK_12], episode_ms=5000, random_start=1.0)
        _, info = env.reset(seed=episode)
        start = info["window"]
        windows = [env.step(x2)[4]["window"] for _ in range(301)]
        if start < BDP_12 / 2:  # below the pipe: once let go, x2 grows it
            held_a_second += windows[99] == start
            assert windows[-1] > start
    assert held_a_second >= 1


def test_observation_space_bounds_every_signed_feature(monkeypatch):
    signed = list(_core.OBS_SIGNED_INDICES)
    assert signed and max(signed) < _core.OBS_SCALED
    low = np.zeros(_core.OBS_DIM, np.float32)
    high = np.array([UNBOUNDED] * _core.OBS_SCALED + [1.0] * _core.NUM_ACTIONS, np.float32)
    low[signed], high[signed] = -1.0, 1.0
    space = observation_space()
    np.testing.assert_array_equal(space.low, low)
    np.testing.assert_array_equal(space.high, high)
    # A second signed feature, as features.hh would declare it, is bounded too.
    monkeypatch.setattr(_core, "OBS_SIGNED_INDICES", (*signed, 8))
    space = observation_space()
    assert (space.low[8], space.high[8]) == (-1.0, 1.0)


def test_a_window_far_below_the_pipe_reads_negative_within_the_space():
    env = LinkEnv(links=[LINK_12], episode_ms=2000, initial_window=40)
    env.reset(seed=1)
    for _ in range(20):  # fills the pipe, then halves the window below it
        obs, *_ = env.step(_core.HOLD_ACTION)
    for _ in range(4):
        obs, *_ = env.step(_core.ACTION_NAMES.index("/2"))
    assert env.observation_space.contains(obs)
    assert all(obs[i] < 0 for i in _core.OBS_SIGNED_INDICES)


def test_runs_the_rules_as_written_out_on_the_scalar_simulator():
    """The engine under LinkEnv against tests/scalar_link_env.py step by step, over episodes
    on several links, with random starts held."""
    config = {"links": [LINK_12, "rate_mbps=8,delivery=poisson,delay_ms=15,loss=0.01",
                        "rate_mbps=6,delay_ms=30,queue=droptail:packets=10"],
              "episode_ms": 300, "random_start": 0.5, "oracle_duration_ms": 2000}
    env, reference = LinkEnv(config), ScalarLinkEnv(config)
    (obs, info), (ref_obs, ref_info) = env.reset(seed=7), reference.reset(seed=7)
    actions = np.random.default_rng(3).integers(_core.NUM_ACTIONS, size=200)
    for action in actions:
        np.testing.assert_array_equal(obs, ref_obs)
        assert info == ref_info
        obs, reward, _, truncated, info = env.step(action)
        ref_obs, ref_reward, _, ref_truncated, ref_info = reference.step(action)
        assert reward == pytest.approx(ref_reward, rel=1e-12, abs=1e-12)
        assert truncated == ref_truncated
        if truncated:
            (obs, info), (ref_obs, ref_info) = env.reset(), reference.reset()


def test_a_resolved_link_is_parsed_once_and_its_profile_runs_the_same_where_it_is_sent(
        monkeypatch):
    # Specs no other test resolves: profiles are cached per link for the process.
    config = EnvConfig.build(FAST, links=["rate_mbps=13,delay_ms=21", "rate_mbps=26,delay_ms=11"])
    links = config.named_links()
    parsed = []
    parse = _core.parse_link_spec
    monkeypatch.setattr(_core, "parse_link_spec", lambda text: parsed.append(text) or parse(text))
    resolved = config.resolved(links)
    assert parsed == [link.spec for link in links]  # rate, delay and ideal window read one parse
    here = rollout(LinkEnv(resolved), seed=3, steps=200)  # 30-step episodes: several resets
    worker = rollout(LinkEnv(pickle.loads(pickle.dumps(resolved))), seed=3, steps=200)
    assert len(parsed) == len(links)  # no parse in Python per episode (C++: one per spec)
    for (obs, reward, info), (obs_w, reward_w, info_w) in zip(here, worker, strict=True):
        np.testing.assert_array_equal(obs, obs_w)
        assert (reward, info["link"]) == (reward_w, info_w["link"])
