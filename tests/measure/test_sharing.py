"""Astraea's convergence time (measure/sharing.py), on logs built by hand with known rates
and on the simulator's fixed windows."""

from __future__ import annotations

import numpy as np
import pytest

from ccgym.emulators import _core
from ccgym.measure.logs import PacketLog
from ccgym.measure.sharing import changes_ms, convergence, flow_rates_mbps

PACKET_MBIT_PER_MS = 1500 * 8 / 1000  # one packet per ms is 12 Mbit/s


def paced(flow: int, start_ms: float, stop_ms: float, gap_ms: float) -> dict[str, np.ndarray]:
    """A flow sending one packet every gap_ms, each arriving 10 ms later."""
    send = np.arange(start_ms, stop_ms, gap_ms)
    return {"flow": np.full(len(send), flow), "send_ms": send, "arrival_ms": send + 10.0}


def log_of(*parts: dict[str, np.ndarray]) -> PacketLog:
    columns = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    n = len(columns["flow"])
    return PacketLog.from_columns({**columns, "seq": np.arange(n), "bytes": np.full(n, 1500),
                                   "dropped": np.zeros(n, np.uint8)})


def test_rates_in_windows():
    log = log_of(paced(0, 0.0, 1000.0, 1.0), paced(1, 0.0, 1000.0, 2.0))
    rates = flow_rates_mbps(log, [0, 1], np.array([10.0, 510.0, 1010.0]))
    assert rates == pytest.approx(np.array([[12.0, 12.0], [6.0, 6.0]]))


def test_changes_are_the_starts_and_stops_after_the_first_start():
    assert changes_ms([0.0, 10.0, 20.0], [60.0, 50.0, 40.0], 60.0) == [10.0, 20.0, 40.0, 50.0]


def test_a_flow_that_gives_way_two_seconds_after_a_join():
    # Flow 0 alone at 12 Mbit/s; flow 1 joins at 4 s at 3 Mbit/s; at 6 s both send at 6.
    log = log_of(paced(0, 0.0, 6000.0, 1.0), paced(0, 6000.0, 12_000.0, 2.0),
                 paced(1, 4000.0, 6000.0, 4.0), paced(1, 6000.0, 12_000.0, 2.0))
    [join] = convergence(log, [0.0, 4000.0], [None, None], 12_000.0)
    assert (join.at_ms, join.flows, join.span_ms) == (4000.0, 2, 8000.0)
    # Windows of 500 ms from 4 s: those from 6 s on hold the mean (the 10 ms delay carries
    # a few packets of the old rates into the first, under 10%), the ones before do not.
    assert join.convergence_ms == pytest.approx(2000.0)


def test_the_fair_share_from_the_capacity_counts_what_the_flows_leave_unused():
    # Two equal flows of 6 Mbit/s each on a link of 24: equal to each other, half the fair share.
    log = log_of(paced(0, 0.0, 10_000.0, 2.0), paced(1, 2000.0, 10_000.0, 2.0))
    opportunities = np.arange(0.0, 10_000.0, 0.5)  # 24 Mbit/s
    [evenly] = convergence(log, [0.0, 2000.0], [None, None], 10_000.0)
    [of_capacity] = convergence(log, [0.0, 2000.0], [None, None], 10_000.0, opportunities)
    assert evenly.convergence_ms is not None and evenly.convergence_ms <= 500.0
    assert of_capacity.convergence_ms is None


def test_equal_windows_converge_and_unequal_ones_never_do():
    def run(windows: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        sim = _core.Simulator("rate_mbps=12,delay_ms=20", [
            (f"fixed:window={windows[0]}", 0.0, -1.0),
            (f"fixed:window={windows[1]}", 5000.0, 15_000.0)], 1)
        sim.run_until(20_000.0)
        return sim.log(), sim.opportunities()

    log, opportunities = run((40, 40))
    join, leave = convergence(log, [0.0, 5000.0], [None, 15_000.0], 20_000.0, opportunities)
    assert (join.flows, leave.flows) == (2, 1)
    assert join.convergence_ms is not None and join.convergence_ms <= 1000.0
    assert leave.convergence_ms is not None and leave.convergence_ms <= 1000.0
    log, opportunities = run((20, 60))
    join, _ = convergence(log, [0.0, 5000.0], [None, 15_000.0], 20_000.0, opportunities)
    assert join.convergence_ms is None


def test_starts_and_stops_must_pair_up():
    log = log_of(paced(0, 0.0, 100.0, 1.0))
    with pytest.raises(ValueError, match="2 starts but 1 stops"):
        convergence(log, [0.0, 10.0], [None], 100.0)
