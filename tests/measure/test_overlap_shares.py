"""Shares while all flows send, after the ramp (measure.metrics.overlap_shares), on logs
built by hand and on the simulator's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ccgym.emulators import _core
from ccgym.measure import metrics
from ccgym.measure.logs import PacketLog

# 40 packets per minimum RTT: windows of 20 and 60 together fill it twice, so the queue
# stands and each flow carries its window's part of the link.
CONSTANT = "rate_mbps=12,delay_ms=20"
DURATION_MS = 20_000.0


def log_of(flow, send_ms, arrival_ms) -> PacketLog:
    n = len(flow)
    return PacketLog.from_columns({"flow": flow, "seq": np.arange(n), "bytes": np.full(n, 1500),
                                   "send_ms": send_ms, "arrival_ms": arrival_ms,
                                   "dropped": np.isnan(arrival_ms).astype(np.uint8)})


def fixed_pair(late_start_ms: float) -> dict[str, np.ndarray]:
    sim = _core.Simulator(CONSTANT, [("fixed:window=20", 0.0, -1.0),
                                     ("fixed:window=60", late_start_ms, -1.0)], 1)
    sim.run_until(DURATION_MS)
    return sim.log()


def test_windows_of_20_and_60_share_a_quarter_and_three_quarters():
    shares = metrics.overlap_shares(fixed_pair(0.0), DURATION_MS)
    assert [shares[0], shares[1]] == pytest.approx([0.25, 0.75], abs=0.01)


def test_a_flow_that_starts_later_is_not_charged_for_its_absence():
    log = fixed_pair(5000.0)
    flows = metrics.summarize(log, [], DURATION_MS).flows
    # Over the run the window of 60 gets less than 3/4 (it missed the first 5 s) ...
    assert flows[1]["share"] < 0.7
    # ... and while both send, after the ramp, its 3/4 as when both start together.
    assert flows[1]["share_overlap"] == pytest.approx(0.75, abs=0.01)
    assert metrics.overlap_ms(log, DURATION_MS) == pytest.approx((10_000.0, DURATION_MS), abs=50)


def test_the_overlap_ends_at_the_first_flow_to_stop():
    # Flow 1 sends from 0 to 10 ms, flow 0 to 20 ms; no ramp: the overlap is [0, 10).
    send = np.array([0.0, 5.0, 10.0, 15.0, 20.0, 0.0, 10.0])
    flow = np.array([0, 0, 0, 0, 0, 1, 1])
    log = log_of(flow, send, send + 1.0)
    assert metrics.overlap_ms(log, 100.0, ramp_ms=0.0) == (0.0, 10.0)
    # Arrivals in [0, 10): flow 0's at 1 and 6, flow 1's at 1.
    assert metrics.overlap_shares(log, 100.0, ramp_ms=0.0) == pytest.approx({0: 2 / 3, 1: 1 / 3})


def test_lost_packets_count_for_no_one_and_an_empty_overlap_is_nan():
    log = log_of(np.array([0, 1, 1]), np.array([0.0, 0.0, 1.0]), np.array([2.0, 3.0, np.nan]))
    assert metrics.shares_between(log, 0.0, 10.0) == pytest.approx({0: 0.5, 1: 0.5})
    # A run that ends within the ramp after the last start measures no overlap.
    assert all(math.isnan(v) for v in metrics.overlap_shares(log, 10.0).values())
    [row] = [f for f in metrics.summarize(log, [], 10.0).to_dict()["flows"] if f["flow"] == 0]
    assert row["share_overlap"] is None
