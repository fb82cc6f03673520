"""VecSimulator with several external flows per simulation beside classic ones: the flows
stepped in one call against the same flows driven one by one through _core.Simulator (the
single-flow reference path), shares of fixed windows, start and stop times, threads."""

import math

import numpy as np
import pytest

from ccgym.emulators import _core

LINK = "rate_mbps=24,delivery=poisson,delay_ms=15,queue=droptail:packets=80"
CONSTANT = "rate_mbps=12,delay_ms=20"
# Per simulation: (flows, seed); 'external' flows are the rows.
SIMS = [
    ([(_core.EXTERNAL_SCHEME, 0.0, -1.0), ("cubic", 0.0, -1.0), (_core.EXTERNAL_SCHEME, 300.0, 1500.0)], 5),
    ([("bbr", 0.0, -1.0), (_core.EXTERNAL_SCHEME, 200.0, -1.0)], 6),
    ([(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 7),
    ([(_core.EXTERNAL_SCHEME, 0.0, -1.0), (_core.EXTERNAL_SCHEME, 0.0, -1.0), ("vegas", 500.0, 1000.0),
      (_core.EXTERNAL_SCHEME, 100.0, -1.0)], 8),
]


def make_vec(threads):
    vec = _core.VecSimulator(len(SIMS), threads)
    for i, (flows, seed) in enumerate(SIMS):
        vec.reset_flows(i, LINK, seed, flows, 10.0)
    return vec


def reference_rows():
    """(simulator, flow index) of each row, in row order, each simulator built alone."""
    rows = []
    for flows, seed in SIMS:
        # Flows asked to start together start so, as an environment's do (vec_simulator.hh).
        sim = _core.Simulator(LINK, flows, seed, False, start_spread_ms=0.0)
        externals = [f for f, (scheme, _, _) in enumerate(flows) if scheme == _core.EXTERNAL_SCHEME]
        for f in externals:
            sim.set_window(10.0, f)
        rows += [(sim, f) for f in externals]
    return rows


@pytest.mark.parametrize("threads", [1, 2])
def test_flows_stepped_in_one_call_match_the_reference_path(threads):
    vec = make_vec(threads)
    rows = reference_rows()
    assert vec.num_rows == len(rows)
    sims = list(dict.fromkeys(sim for sim, _ in rows))
    previous = [_core.HOLD_ACTION] * len(rows)
    delay = [_core.parse_link_spec(LINK).delay_ms] * len(rows)  # a row's last step's delay
    rng = np.random.default_rng(0)
    actions = rng.integers(-1, _core.NUM_ACTIONS, size=(200, len(rows)))
    for step_actions in actions.astype(np.int32):
        for sim in sims:
            sim.clear_step_stats()
        for r, (sim, f) in enumerate(rows):
            if step_actions[r] >= 0:
                sim.take_action(int(step_actions[r]), f)
                previous[r] = int(step_actions[r])
        for sim in sims:
            sim.run_until(sim.now_ms + _core.STEP_MS)
        # The step's threads write its results into the caller's arrays, as the
        # accessors copy them after it; the experts as closest_actions finds them.
        obs = np.empty((len(rows), _core.OBS_DIM), dtype=np.float32)
        columns = np.empty((_core.STAT_COLUMNS, len(rows)))
        targets, experts = rng.uniform(1, 200, size=len(rows)), np.empty(len(rows), np.int64)
        vec.step(step_actions, obs, columns, targets, experts)
        stats = vec.stats()
        np.testing.assert_array_equal(obs, vec.observations())
        np.testing.assert_array_equal(columns, stats.T)
        np.testing.assert_array_equal(experts, vec.closest_actions(targets))
        for r, (sim, f) in enumerate(rows):
            np.testing.assert_array_equal(obs[r], sim.observation(previous[r], f))
            st = sim.step_stats(f)
            assert stats[r, _core.STAT_DELIVERED_BYTES] == st["delivered_bytes"]
            mean = st["delay_sum_ms"] / st["arrivals"] if st["arrivals"] else math.nan
            np.testing.assert_equal(stats[r, _core.STAT_MEAN_DELAY_MS], mean)
            assert stats[r, _core.STAT_WINDOW] == sim.window(f)
            assert stats[r, _core.STAT_GROWTH_CEILING] == sim.growth_ceiling(f)
            # the engine's reward reads these two (envs/engine.py); the rules, to the bit
            assert stats[r, _core.STAT_DELIVERED_MBPS] == st["delivered_bytes"] * 8 / 10 / 1000
            delay[r] = delay[r] + _core.STEP_MS if math.isnan(mean) else mean
            assert stats[r, _core.STAT_DELAY_MS] == delay[r]


def test_observations_can_fill_a_buffer_of_the_caller():
    vec = make_vec(1)
    vec.step(np.full(vec.num_rows, _core.HOLD_ACTION, dtype=np.int32))
    out = np.empty((vec.num_rows, _core.OBS_DIM), dtype=np.float32)
    assert vec.observations(out) is out
    np.testing.assert_array_equal(out, vec.observations())
    with pytest.raises(ValueError):
        vec.observations(np.empty((1, _core.OBS_DIM), dtype=np.float32))
    with pytest.raises(ValueError):
        vec.step(np.zeros(vec.num_rows + 1, dtype=np.int32))


def test_a_step_writes_only_into_arrays_it_can_fill():
    vec = make_vec(1)
    actions, rows = np.zeros(vec.num_rows, dtype=np.int32), vec.num_rows
    with pytest.raises(ValueError, match="obs has the wrong shape"):
        vec.step(actions, np.empty((rows + 1, _core.OBS_DIM), dtype=np.float32))
    with pytest.raises(ValueError, match="experts need targets"):
        vec.step(actions, experts=np.empty(rows, dtype=np.int64))
    with pytest.raises(TypeError):  # a converted copy would be written, not the caller's
        vec.step(actions, columns=np.empty((_core.STAT_COLUMNS, rows), dtype=np.float32))


def test_two_equal_fixed_windows_share_the_link_evenly():
    sim = _core.Simulator(CONSTANT, [("fixed:window=50", 0.0, -1.0),
                                     ("fixed:window=50", 500.0, -1.0)], 1)
    assert fixed_shares(sim) == pytest.approx([0.5, 0.5], abs=0.02)


def test_unequal_fixed_windows_share_it_in_proportion():
    sim = _core.Simulator(CONSTANT, [("fixed:window=30", 0.0, -1.0),
                                     ("fixed:window=90", 500.0, -1.0)], 1)
    assert fixed_shares(sim) == pytest.approx([0.25, 0.75], abs=0.02)


def fixed_shares(sim, seconds=20.0, warmup_ms=5000.0):
    sim.run_until(seconds * 1000)
    log = sim.log()
    late = log["arrival_ms"] >= warmup_ms
    bytes_by_flow = np.bincount(log["flow"][late], weights=log["bytes"][late], minlength=2)
    return (bytes_by_flow / bytes_by_flow.sum()).tolist()


def test_external_flows_of_equal_windows_share_evenly_in_one_call():
    vec = _core.VecSimulator(1, 1)
    vec.reset_flows(0, CONSTANT, 1, [(_core.EXTERNAL_SCHEME, 0.0, -1.0),
                                     (_core.EXTERNAL_SCHEME, 500.0, -1.0)], 50.0)
    hold = np.full(2, -1, dtype=np.int32)
    delivered = np.zeros(2)
    for k in range(2000):
        vec.step(hold)
        if k * _core.STEP_MS >= 5000:
            delivered += vec.stats()[:, _core.STAT_DELIVERED_BYTES]
    assert (delivered / delivered.sum()).tolist() == pytest.approx([0.5, 0.5], abs=0.02)


def test_competitors_send_only_between_their_start_and_stop():
    vec = _core.VecSimulator(1, 1)
    vec.reset_flows(0, CONSTANT, 2, [(_core.EXTERNAL_SCHEME, 0.0, -1.0), ("cubic", 1000.0, 2000.0)], 40.0)
    hold = np.full(1, -1, dtype=np.int32)
    counts, delivered = [], []
    for _ in range(600):
        vec.step(hold)
        stats = vec.stats()[0]
        counts.append(stats[_core.STAT_ACTIVE_FLOWS])
        delivered.append(stats[_core.STAT_DELIVERED_BYTES])
    now = (np.arange(600) + 1) * _core.STEP_MS
    expected = 1 + ((now >= 1000) & (now < 2000))
    np.testing.assert_array_equal(counts, expected)
    alone = np.mean(delivered[50:100])          # 0.5-1 s: the link to itself
    shared = np.mean(delivered[150:200])        # 1.5-2 s: cubic takes its part
    again = np.mean(delivered[500:600])         # once cubic's queue has drained
    assert shared < 0.8 * alone
    assert again > 0.9 * alone


def test_same_seeds_same_steps_with_any_threads():
    a, b = make_vec(1), make_vec(2)
    actions = np.random.default_rng(3).integers(_core.NUM_ACTIONS, size=(100, a.num_rows))
    for step_actions in actions.astype(np.int32):
        a.step(step_actions)
        b.step(step_actions)
        np.testing.assert_array_equal(a.observations(), b.observations())
        np.testing.assert_array_equal(a.stats(), b.stats())
