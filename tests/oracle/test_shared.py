"""The shared-link expert (oracle/shared.py): its window on cases with a known answer, and
flows driven by it sharing a link fairly with each other and with cubic."""

import numpy as np
import pytest

from ccgym.emulators import _core
from ccgym.oracle.shared import fair_windows, simulate_shared

BDP = 80.0  # 24 Mbit/s x 40 ms min RTT / 1500 bytes


@pytest.mark.parametrize(("ideal", "active", "classic", "in_flight", "expected"), [
    (BDP, 2, 0, 0.0, BDP / 2),          # two learned flows: half the ideal each
    (BDP, 3, 0, 0.0, BDP / 3),
    (81.0, 2, 0, 0.0, 40.5),            # the ideal's margin shared too
    (BDP, 2, 1, 130.0, 130.0),          # cubic with a queue: as much in flight as it
    (BDP, 2, 1, 12.0, 12.0),            # a competitor below the split: matched still
    (BDP, 3, 2, 50.0, 50.0),            # the classic flows' mean
    (BDP, 3, 1, 60.0, 60.0),            # two learned flows beside one classic: each as it
    (BDP, 1, 0, 0.0, BDP),              # alone: the single-flow ideal
])
def test_fair_window_is_the_classic_flows_mean_or_the_ideals_split(ideal, active, classic,
                                                                  in_flight, expected):
    assert fair_windows(ideal, active, classic, in_flight) == pytest.approx(expected)


def test_fair_windows_are_vectorized_and_within_the_senders_range():
    got = fair_windows(np.array([BDP, BDP, 1.0]), np.array([2, 2, 4]), np.array([0, 1, 0]),
                       np.array([0.0, 1e9, 0.0]))   # the last: 1 packet over 4 learned flows
    np.testing.assert_allclose(got, [BDP / 2, _core.MAX_WINDOW, _core.MIN_WINDOW])


def test_an_expert_flow_holds_its_share_against_cubic_on_a_one_bdp_droptail():
    run = simulate_shared("rate_mbps=24,delay_ms=20,queue=droptail:packets=80", ["cubic"],
                          duration_ms=20_000.0, learned_start_ms=2000.0)
    assert run.schemes == (_core.EXTERNAL_SCHEME, "cubic")
    assert 0.35 <= run.shares[0] <= 0.65
    assert sum(run.shares) == pytest.approx(1.0)


def test_two_expert_flows_split_a_constant_link_evenly():
    run = simulate_shared("rate_mbps=24,delay_ms=20", [], learned=2, duration_ms=15_000.0)
    assert run.jain >= 0.95
