"""VecLinkEnv against Link-v0's rules written out on the scalar Simulator (tests/scalar_link_env.py),
step by step (envpool's reference test), and its autoreset."""

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import ccgym.envs  # noqa: F401  (registers ccgym/Link-v0)
from ccgym.emulators import _core
from ccgym.envs.vector import VecLinkEnv
from scalar_link_env import ScalarLinkEnv

LINKS = ["rate_mbps=12,delay_ms=20", "rate_mbps=24,delay_ms=10",
         "rate_mbps=8,delivery=poisson,delay_ms=15,loss=0.01",
         "rate_mbps=6,delay_ms=30,queue=droptail:packets=10"]
CONFIG = {"links": LINKS, "episode_ms": 200, "oracle_duration_ms": 2000}
COMPARED_INFO = ("ideal_window", "expert_action", "window", "link", "delivered_mbps",
                 "delay_ms")


def random_actions(steps, n, seed=0):
    return np.random.default_rng(seed).integers(_core.NUM_ACTIONS, size=(steps, n))


def test_matches_single_envs_step_by_step_across_autoresets():
    n, seed, steps = 4, 11, 50  # 20-step episodes: two autoresets
    vec = VecLinkEnv(n, CONFIG, threads=2)
    singles = [ScalarLinkEnv(CONFIG) for _ in range(n)]
    obs, infos = vec.reset(seed=seed)
    for i, env in enumerate(singles):
        o, info = env.reset(seed=seed + i)
        np.testing.assert_array_equal(obs[i], o)
        assert infos["expert_action"][i] == info["expert_action"]
    resets = 0
    for actions in random_actions(steps, n):
        obs, rewards, terminated, truncated, infos = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, term, trunc, info = env.step(actions[i])
            assert (term, trunc) == (terminated[i], truncated[i])
            if trunc:
                np.testing.assert_array_equal(infos["final_obs"][i], o)
                for key in COMPARED_INFO:  # the ended episode's, not the next one's
                    assert infos["final_info"][key][i] == info[key], key
                o, info = env.reset()
                resets += 1
            np.testing.assert_array_equal(obs[i], o)
            assert rewards[i] == pytest.approx(r, rel=1e-12, abs=1e-12)
            for key in COMPARED_INFO:
                assert infos[key][i] == info[key], key
        np.testing.assert_array_equal(vec.expert_actions(), infos["expert_action"])
    assert resets == 2 * n


def test_autoreset_starts_new_episodes_on_the_same_step():
    vec = VecLinkEnv(3, CONFIG, threads=1)
    vec.reset(seed=0)
    # x2 every step: the window grows from the initial 10 (as far as the ACKs allow).
    hold = np.full(3, _core.ACTION_NAMES.index("x2"))
    for _ in range(19):
        _, _, _, truncated, infos = vec.step(hold)
        assert not truncated.any() and "final_obs" not in infos
    obs, rewards, terminated, truncated, infos = vec.step(hold)
    assert truncated.all() and not terminated.any()
    assert infos["_final_obs"].all() and infos["final_info"]["window"].min() > 10
    np.testing.assert_array_equal(infos["window"], np.full(3, 10.0))
    assert not np.array_equal(np.stack(infos["final_obs"]), obs)
    _, _, _, truncated, infos = vec.step(hold)
    # A new episode: no ACK yet, so x2 may not grow the window (actions.hh).
    assert not truncated.any() and (infos["window"] == 10).all()


def test_next_step_autoreset_starts_the_new_episodes_on_the_following_call():
    same = VecLinkEnv(3, CONFIG, threads=1)
    nxt = VecLinkEnv(3, CONFIG, threads=1, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert nxt.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    np.testing.assert_array_equal(same.reset(seed=4)[0], nxt.reset(seed=4)[0])
    actions = random_actions(40, 3, seed=1)
    for t in range(20):
        a, b = same.step(actions[t]), nxt.step(actions[t])
        np.testing.assert_array_equal(a[1], b[1])
    # The ending step: the ended episodes' last observations, no final_obs.
    assert b[3].all() and "final_obs" not in b[4]
    np.testing.assert_array_equal(np.stack(a[4]["final_obs"]), b[0])
    # The next call ignores its actions and returns the new episodes' first observations.
    obs, rewards, terminated, truncated, infos = nxt.step(np.full(3, _core.ACTION_NAMES.index("x2")))
    np.testing.assert_array_equal(obs, a[0])
    assert (rewards == 0).all() and not terminated.any() and not truncated.any()
    np.testing.assert_array_equal(infos["link"], a[4]["link"])
    for t in range(20, 39):  # the new episodes, up to their last step
        np.testing.assert_array_equal(same.step(actions[t])[0], nxt.step(actions[t])[0])
    with pytest.raises(ValueError, match="autoreset_mode"):
        VecLinkEnv(1, CONFIG, autoreset_mode=AutoresetMode.DISABLED)


def test_thread_count_does_not_change_results():
    def run(threads):
        vec = VecLinkEnv(4, CONFIG, threads=threads)
        out = [vec.reset(seed=5)[0]]
        for actions in random_actions(30, 4, seed=2):
            out.append(vec.step(actions)[0])
        return np.stack(out)

    np.testing.assert_array_equal(run(1), run(3))


def test_make_vec_uses_the_native_vector_env():
    vec = gymnasium.make_vec("ccgym/Link-v0", num_envs=2, vectorization_mode="vector_entry_point",
                             config={"links": LINKS[:2], "episode_ms": 100})
    obs, infos = vec.reset(seed=1)
    assert isinstance(vec.unwrapped, VecLinkEnv)
    assert obs.shape == (2, _core.OBS_DIM) and obs.dtype == np.float32
    assert vec.observation_space.contains(obs)
    assert infos["expert_action"].dtype == np.int64


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="num_envs"):
        VecLinkEnv(0, CONFIG)
    with pytest.raises(ValueError, match="episode_ms"):
        VecLinkEnv(2, CONFIG, episode_ms=0)
