"""The virtual-time simulator against numbers worked out by hand."""

import numpy as np
import pytest

from ccgym.measure.metrics import summarize
from ccgym.emulators import _core

# 12 Mbit/s carries one 1500-byte packet per ms; 20 ms each way.
LINK_12 = "rate_mbps=12,delay_ms=20"
PACKET_MBIT = 1500 * 8 / 1e6


def run(link, scheme, duration_ms=10_000, seed=1, flows=None):
    sim = _core.Simulator(link, flows or [(scheme, 0.0, -1.0)], seed)
    sim.run_until(duration_ms)
    return sim, summarize(sim.log(), sim.opportunities(), duration_ms)


def test_fixed_window_below_bdp_gives_window_over_rtt():
    # A packet sent at t is served by the opportunity at t+1 (the one at t is
    # used before it arrives, as in mahimahi), arrives at t+21, is ACKed at t+41.
    window, rtt_ms = 10, 41
    _, m = run(LINK_12, f"fixed:{window}")
    expected_mbps = window * PACKET_MBIT / (rtt_ms / 1000)
    assert m.throughput_mbps == pytest.approx(expected_mbps, rel=0.01)
    assert m.delay_p95_ms == pytest.approx(21, abs=0.5)


def test_fixed_window_above_bdp_fills_the_link_and_queues_the_excess():
    window, bdp = 60, 41
    _, m = run(LINK_12, f"fixed:{window}")
    assert m.utilization == pytest.approx(1.0, abs=0.01)
    # The standing queue of window - BDP packets adds one ms each.
    assert m.delay_p95_ms == pytest.approx(21 + (window - bdp), abs=1.5)


def test_droptail_caps_the_queue_and_drops():
    _, m = run(LINK_12 + ",queue=droptail:packets=10", "fixed:100")
    assert m.loss > 0
    assert m.delay_p95_ms <= 21 + 10 + 1


def test_same_seed_same_log_different_seed_differs():
    link = "rate_mbps=10,delivery=poisson,delay_ms=15,loss=0.01"
    a, _ = run(link, "cubic", 5000, seed=3)
    b, _ = run(link, "cubic", 5000, seed=3)
    c, _ = run(link, "cubic", 5000, seed=4)
    for key in ("seq", "send_ms", "arrival_ms", "dropped"):
        np.testing.assert_array_equal(a.log()[key], b.log()[key])
    assert len(a.log()["seq"]) != len(c.log()["seq"]) or not np.array_equal(
        a.log()["arrival_ms"], c.log()["arrival_ms"], equal_nan=True)


def test_stepping_equals_one_long_run():
    whole, _ = run(LINK_12, "cubic", 3000)
    stepped = _core.Simulator(LINK_12, [("cubic", 0.0, -1.0)], 1)
    for t in range(10, 3001, 10):
        stepped.run_until(t)
    np.testing.assert_array_equal(whole.log()["send_ms"], stepped.log()["send_ms"])


def test_flows_start_late_and_share():
    flows = [("fixed:30", 0.0, -1.0), ("fixed:30", 2000.0, -1.0)]
    sim, m = run(LINK_12, None, 10_000, flows=flows)
    log = sim.log()
    assert log["send_ms"][log["flow"] == 1].min() >= 2000
    assert len(m.flows) == 2 and m.jain_index > 0.8


def test_external_window_is_set_from_outside():
    sim = _core.Simulator(LINK_12, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1)
    sim.set_window(5.0)
    sim.run_until(1000)
    assert sim.in_flight() <= 5
    sim.set_window(_core.apply_action(sim.window(), _core.ACTION_NAMES.index("x2")))
    assert sim.window() == 10


def test_only_a_learned_flow_has_features():
    sim = _core.Simulator(LINK_12, [("cubic", 0.0, -1.0), (_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1)
    sim.run_until(1000)
    assert sim.features(1)["min_rtt_ms"] >= 40
    assert sim.observation(_core.HOLD_ACTION, 1).shape == (_core.OBS_DIM,)
    for read in (lambda: sim.features(0), lambda: sim.observation(_core.HOLD_ACTION, 0)):
        with pytest.raises(ValueError, match="flow 0 runs a classic scheme"):
            read()


def test_vector_simulator_matches_single_simulators():
    links = [LINK_12, "rate_mbps=24,delay_ms=10", "rate_mbps=6,delay_ms=40"]
    vec = _core.VecSimulator(len(links), 2)
    singles = []
    for i, link in enumerate(links):
        vec.reset(i, link, 5, 10.0)
        singles.append(_core.Simulator(link, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 5, False))
        singles[-1].set_window(10.0)
    actions = np.array([3, 4, 0], dtype=np.int32)
    for step in range(50):
        vec.step(actions)
        for i, sim in enumerate(singles):
            sim.take_action(int(actions[i]))
            sim.run_until((step + 1) * _core.STEP_MS)
    obs = vec.observations()
    assert obs.shape == (3, _core.OBS_DIM)
    for i, sim in enumerate(singles):
        np.testing.assert_allclose(obs[i], sim.observation(int(actions[i])), rtol=1e-6)


def test_bad_link_spec_names_the_key():
    with pytest.raises(ValueError, match="rate_mbs"):
        _core.Simulator("rate_mbs=12,delay_ms=20", [("cubic", 0.0, -1.0)], 1)


def test_unknown_scheme_lists_valid_ones():
    with pytest.raises(ValueError, match="cubic"):
        _core.Simulator(LINK_12, [("cubc", 0.0, -1.0)], 1)


def test_take_action_does_not_grow_the_window_before_the_first_ack():
    sim = _core.Simulator("rate_mbps=12,delay_ms=20", [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1)
    double = _core.ACTION_NAMES.index("x2")
    assert sim.take_action(double) == 10  # x2 at t=0: nothing acknowledged yet
    assert sim.take_action(_core.ACTION_NAMES.index("/2")) == 5   # shrinking is allowed
    sim.run_until(50)                # past the 40 ms RTT
    assert sim.take_action(double) == 10
    with pytest.raises(ValueError, match="action out of range"):
        sim.take_action(_core.NUM_ACTIONS)
