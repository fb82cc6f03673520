"""Metrics from packet logs, against hand computations and a by-the-definition reference."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

from ccgym.measure import metrics
from ccgym.measure.logs import PacketLog
from ccgym.errors import UserError

PACKET_BYTES = 1500
MBIT = 1e6
MS_PER_S = 1e3


def make_log(send_ms, arrival_ms, flow=None, dropped=None, packet_bytes=PACKET_BYTES) -> PacketLog:
    send = np.asarray(send_ms, dtype=float)
    n = len(send)
    return PacketLog.from_columns({
        "flow": np.zeros(n) if flow is None else flow,
        "seq": np.arange(n),
        "bytes": np.full(n, packet_bytes),
        "send_ms": send,
        "arrival_ms": arrival_ms,
        "dropped": np.zeros(n) if dropped is None else dropped,
    })


def reference_signal_delay(send_ms, arrival_ms, duration_ms: int, start_ms: float = 0.0) -> list[float]:
    """The definition, one sample at a time, for comparison with the vectorized version."""
    samples = []
    for t in range(math.ceil(start_ms), duration_ms):
        known = [s for s, a in zip(send_ms, arrival_ms)
                 if not math.isnan(a) and a <= t and a < duration_ms]
        samples.append(t - max([start_ms] + known))
    return samples


# --- a fixed-rate flow: one packet every 2 ms, each arriving 10 ms after it was sent

FIXED_GAP_MS = 2
FIXED_DELAY_MS = 10
FIXED_DURATION_MS = 100


@pytest.fixture
def fixed_rate_log() -> PacketLog:
    send = np.arange(0, FIXED_DURATION_MS, FIXED_GAP_MS)  # 0, 2, ..., 98
    return make_log(send, send + FIXED_DELAY_MS)


def test_fixed_rate_throughput(fixed_rate_log):
    # Arrivals at 10, 12, ..., 108; those before 100 ms are 10..98: 45 packets.
    delivered_bits = 45 * PACKET_BYTES * 8
    expected = delivered_bits / (FIXED_DURATION_MS / MS_PER_S) / MBIT  # 5.4 Mbit/s
    assert metrics.throughput_mbps(fixed_rate_log, FIXED_DURATION_MS) == pytest.approx(expected)


def test_fixed_rate_per_packet_delay(fixed_rate_log):
    assert metrics.delay_p95_ms(fixed_rate_log, FIXED_DURATION_MS) == pytest.approx(FIXED_DELAY_MS)


def test_fixed_rate_e2e_delay(fixed_rate_log):
    # t = 0..9: nothing has arrived, the delay is t (0..9), 10 samples.
    # t = 10..99: the newest packet heard of was sent at the even time <= t - 10,
    # so the delay alternates 10 (t even) and 11 (t odd): 45 samples each.
    # Sorted: 0..9 at ranks 0-9, 10 at ranks 10-54, 11 at ranks 55-99. The 95th
    # percentile sits at rank 0.95 * 99 = 94.05, between two 11s.
    assert metrics.e2e_delay_p95_ms(fixed_rate_log, FIXED_DURATION_MS) == pytest.approx(11)


def test_fixed_rate_series(fixed_rate_log):
    times, delays = metrics.signal_delay_series(fixed_rate_log, FIXED_DURATION_MS)
    assert list(times) == list(range(FIXED_DURATION_MS))
    expected = [t if t < 10 else 10 + t % 2 for t in range(FIXED_DURATION_MS)]
    assert list(delays) == expected


def test_fixed_rate_score(fixed_rate_log):
    tput = 45 * PACKET_BYTES * 8 / 0.1 / MBIT
    summary = metrics.summarize(fixed_rate_log, np.arange(FIXED_DURATION_MS), FIXED_DURATION_MS)
    assert summary.score == pytest.approx(math.log(tput) - math.log(11))
    # One opportunity per ms: 1500 bytes per ms is 12 Mbit/s.
    assert summary.capacity_mbps == pytest.approx(12.0)
    assert summary.utilization == pytest.approx(tput / 12.0)


# --- signal delay semantics

def test_signal_delay_rises_one_ms_per_ms_in_a_gap():
    # Packets sent at 0 and 40 arrive at 5 and 45: between them nothing arrives.
    log = make_log([0.0, 40.0], [5.0, 45.0])
    times, delays = metrics.signal_delay_series(log, 60)
    in_gap = (times >= 5) & (times < 45)
    assert np.all(np.diff(delays[in_gap]) == 1)
    assert delays[times == 5][0] == 5      # just heard of the packet sent at 0
    assert delays[times == 44][0] == 44    # still only that one
    assert delays[times == 45][0] == 5     # the packet sent at 40 arrives


def test_signal_delay_counts_from_the_start_before_any_arrival():
    log = make_log([30.0], [50.0])
    times, delays = metrics.signal_delay_series(log, 60)
    assert list(delays[:50]) == list(range(50))


def test_signal_delay_uses_most_recently_sent_not_last_arrived():
    # Sent at 10, arrives at 20; sent at 0, arrives late at 50.
    log = make_log([0.0, 10.0], [50.0, 20.0])
    times, delays = metrics.signal_delay_series(log, 60)
    assert delays[times == 30][0] == 30 - 10
    # At 60 - 1 the late packet (sent at 0) has arrived too; the newest is still 10.
    assert delays[times == 59][0] == 59 - 10


def test_signal_delay_ignores_dropped_and_late_packets():
    nan = float("nan")
    # The packet sent at 10 is lost; the one sent at 20 arrives after the end.
    log = make_log([0.0, 10.0, 20.0], [5.0, nan, 70.0], dropped=[0, 1, 0])
    _, delays = metrics.signal_delay_series(log, 60)
    assert delays[-1] == 59 - 0


def test_signal_delay_matches_the_definition_on_a_random_log():
    rng = np.random.default_rng(7)
    n, duration = 300, 400
    send = np.sort(rng.uniform(0, duration, n))
    arrival = send + rng.exponential(30, n)  # reordered: later packets can arrive first
    dropped = rng.random(n) < 0.1
    arrival[dropped] = np.nan
    log = make_log(send, arrival, dropped=dropped.astype(int))
    _, fast = metrics.signal_delay_series(log, duration)
    np.testing.assert_allclose(fast, reference_signal_delay(send, arrival, duration))


def test_signal_delay_from_a_later_start():
    log = make_log([20.0, 30.0], [25.0, 40.0])
    times, delays = metrics.signal_delay_series(log, 50, start_ms=20.0)
    assert times[0] == 20
    np.testing.assert_allclose(delays, reference_signal_delay([20, 30], [25, 40], 50, start_ms=20))


def test_e2e_delay_is_fast_on_a_long_busy_run():
    rng = np.random.default_rng(3)
    n, duration = 100_000, 30_000
    send = np.sort(rng.uniform(0, duration, n))
    log = make_log(send, send + rng.uniform(20, 200, n), flow=rng.integers(0, 3, n))
    start = time.perf_counter()
    metrics.summarize(log, np.arange(0, duration, 0.5), duration)
    # Seconds would mean a Python loop crept in; the vectorized path takes ~50 ms.
    assert time.perf_counter() - start < 2.0


# --- omniscient bound

def test_omniscient_on_a_tiny_trace():
    opportunities = [1, 2, 3, 10, 25]  # 25 is past the end and does not count
    delay, duration = 5, 20
    bound = metrics.omniscient(opportunities, duration, delay)
    # 4 opportunities of 1500 bytes in 20 ms.
    capacity = 4 * PACKET_BYTES * 8 / (duration / MS_PER_S) / MBIT  # 2.4 Mbit/s
    assert bound.capacity_mbps == pytest.approx(capacity)
    assert bound.throughput_mbps == pytest.approx(capacity)
    assert bound.utilization == pytest.approx(1.0)
    assert bound.delay_p95_ms == delay
    # Packets sent at 1, 2, 3, 10 arrive at 6, 7, 8, 15. Signal delay per ms:
    # t 0..5: t (nothing yet)            -> 0 1 2 3 4 5
    # t 6, 7: newest sent 1, 2           -> 5 5
    # t 8..14: newest sent 3             -> 5 6 7 8 9 10 11
    # t 15..19: newest sent 10           -> 5 6 7 8 9
    samples = sorted([0, 1, 2, 3, 4, 5] + [5, 5] + list(range(5, 12)) + list(range(5, 10)))
    assert len(samples) == duration
    rank = 0.95 * (duration - 1)  # 18.05
    low = samples[int(rank)]
    expected_e2e = low + (rank - int(rank)) * (samples[int(rank) + 1] - low)  # 10.05
    assert bound.e2e_delay_p95_ms == pytest.approx(expected_e2e)
    assert bound.score == pytest.approx(math.log(capacity) - math.log(expected_e2e))
    assert bound.loss == 0


def test_omniscient_bounds_a_scheme_on_the_same_link():
    rng = np.random.default_rng(11)
    duration, delay = 2000, 20
    opportunities = np.sort(rng.uniform(0, duration, 1500))
    # A scheme that queues: each packet is sent, then served by a later opportunity.
    served = opportunities[::2]
    send = served - rng.uniform(0, 50, len(served))
    scheme = make_log(np.clip(send, 0, None), served + delay)
    bound = metrics.omniscient(opportunities, duration, delay)
    run = metrics.summarize(scheme, opportunities, duration)
    assert run.throughput_mbps <= bound.throughput_mbps
    assert run.e2e_delay_p95_ms >= bound.e2e_delay_p95_ms
    assert run.score <= bound.score


def data_dir() -> Path:
    default = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    return Path(os.environ.get("CCGYM_DATA", default))


def test_omniscient_on_the_contest_link():
    trace = data_dir() / "traces" / "cellular" / "Verizon-LTE-short.down"
    if not trace.exists():
        pytest.skip(f"contest trace not found at {trace} (set CCGYM_DATA)")
    opportunities = np.loadtxt(trace, dtype=np.int64)
    duration = float(opportunities[-1])  # the trace's period: 140 s
    delay = 20.0
    bound = metrics.omniscient(opportunities, duration, delay)
    in_run = opportunities[opportunities < duration]
    assert bound.capacity_mbps == pytest.approx(len(in_run) * PACKET_BYTES * 8 / duration / 1e3)
    # Independently: delay + time since the last opportunity at or before t - delay.
    t = np.arange(duration)
    last = np.searchsorted(in_run, t - delay, side="right") - 1
    since_start = t  # before the first arrival the signal delay counts from 0
    signal = np.where(last >= 0, t - in_run[np.clip(last, 0, None)], since_start)
    assert bound.e2e_delay_p95_ms == pytest.approx(np.percentile(signal, 95))
    # The contest published -2.31 (two decimals). This gives -2.317 (51 ms at
    # 5.027 Mbit/s); the 95th percentile sits at the 50/51 ms step (94.98% of
    # samples are <= 50 ms), so the published value is within its own rounding
    # of a tool that truncated or sampled a slightly different window.
    assert bound.score == pytest.approx(-2.31, abs=0.01)


# --- the other metrics

def test_score():
    assert metrics.score(10.0, 100.0) == pytest.approx(math.log(0.1))
    assert metrics.score(0.0, 100.0) == -math.inf
    assert math.isnan(metrics.score(1.0, float("nan")))
    with pytest.raises(ValueError):
        metrics.score(-1.0, 10.0)


def test_jain_index_on_known_values():
    assert metrics.jain_index([3, 3, 3, 3]) == pytest.approx(1.0)
    assert metrics.jain_index([5, 0, 0, 0]) == pytest.approx(1 / 4)
    assert metrics.jain_index([1, 2, 3]) == pytest.approx((1 + 2 + 3) ** 2 / (3 * (1 + 4 + 9)))
    assert metrics.jain_index([0, 0]) == 1.0
    with pytest.raises(ValueError):
        metrics.jain_index([])


def test_loss_rate_leaves_out_packets_in_flight():
    nan = float("nan")
    # 10 packets: 7 arrived, 2 lost, 1 still in flight.
    arrival = [1, 2, 3, 4, 5, 6, 7, nan, nan, nan]
    dropped = [0] * 7 + [1, 1, 0]
    log = make_log(np.zeros(10), arrival, dropped=dropped)
    assert metrics.loss_rate(log) == pytest.approx(2 / 9)


def test_capacity_counts_only_the_run():
    # 3 opportunities in [0, 10); -1 and 10 are outside. 4500 bytes in 10 ms.
    assert metrics.capacity_mbps([-1, 0, 0, 9.5, 10], 10) == pytest.approx(4500 * 8 / 0.01 / MBIT)


def test_throughput_of_one_flow():
    log = make_log([0, 0, 0], [1, 2, 3], flow=[0, 1, 1])
    assert metrics.throughput_mbps(log, 10, flow=1) == pytest.approx(2 * PACKET_BYTES * 8 / 0.01 / MBIT)


def test_summarize_two_flows():
    # Flow 0 delivers 3 packets, flow 1 delivers 1, all with 4 ms one-way delay.
    send = [0, 1, 2, 3]
    log = make_log(send, np.add(send, 4), flow=[0, 0, 0, 1])
    summary = metrics.summarize(log, np.arange(10), 10)
    shares = [f["share"] for f in summary.flows]
    assert [f["flow"] for f in summary.flows] == [0, 1]
    assert shares == pytest.approx([3 / 4, 1 / 4])
    # Throughput counts from each flow's first send: 3 packets over 10 ms, 1 over 7 ms.
    rates = np.array([3 / 10, 1 / 7])
    assert summary.jain_index == pytest.approx(rates.sum() ** 2 / (2 * (rates ** 2).sum()))
    assert summary.delay_p95_ms == pytest.approx(4)
    data = summary.to_dict()
    assert set(data) == {"throughput_mbps", "capacity_mbps", "utilization", "delay_p95_ms",
                         "e2e_delay_p95_ms", "score", "loss", "flows", "jain_index"}
    assert set(data["flows"][0]) == {"flow", "throughput_mbps", "share", "share_overlap",
                                     "delay_p95_ms", "e2e_delay_p95_ms", "score"}


def test_late_flow_throughput_counts_from_its_first_send():
    # Both flows deliver one packet; flow 1 exists only for the last half.
    log = make_log([0, 50], [5, 55], flow=[0, 1])
    flows = metrics.summarize(log, [], 100).flows
    assert flows[1]["throughput_mbps"] == pytest.approx(2 * flows[0]["throughput_mbps"])
    assert [f["share"] for f in flows] == pytest.approx([0.5, 0.5])


def test_flow_signal_delay_starts_at_its_first_send():
    # Flow 1 joins at 50 ms; it is not charged for the 50 ms before.
    log = make_log([0, 50], [5, 55], flow=[0, 1])
    flows = metrics.summarize(log, [], 60).flows
    late = reference_signal_delay([50], [55], 60, start_ms=50)
    assert flows[1]["e2e_delay_p95_ms"] == pytest.approx(np.percentile(late, 95))


def test_single_flow_dict_is_strict_json():
    nothing = make_log([0.0], [float("nan")], dropped=[1])
    data = metrics.summarize(nothing, [], 10).to_dict()
    assert set(data) == {"throughput_mbps", "capacity_mbps", "utilization", "delay_p95_ms",
                         "e2e_delay_p95_ms", "score", "loss"}
    assert data["score"] is None and data["utilization"] is None
    json.dumps(data, allow_nan=False)


def test_log_accepts_a_plain_dict_and_rejects_contradictions():
    columns = {"flow": [0], "seq": [0], "bytes": [1500], "send_ms": [0.0],
               "arrival_ms": [3.0], "dropped": [0]}
    assert metrics.throughput_mbps(columns, 10) > 0
    with pytest.raises(UserError, match="dropped"):
        PacketLog.from_columns({**columns, "dropped": [1]})
    with pytest.raises(UserError, match="missing"):
        PacketLog.from_columns({k: v for k, v in columns.items() if k != "seq"})
    with pytest.raises(UserError, match="length"):
        PacketLog.from_columns({**columns, "seq": [0, 1]})
