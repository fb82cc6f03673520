"""The contest's metrics, from packet logs: one implementation for simulated and real runs.

Conventions shared by every function here:

- A run covers the half-open interval [0, duration_ms): a packet counts as
  delivered if it arrived before duration_ms, and an opportunity counts as
  capacity if it falls in the same interval, so throughput <= capacity.
- Percentiles use numpy's default (linear interpolation between order statistics).
- End-to-end ("signal") delay at time t is t minus the send time of the most
  recently *sent* packet among those that have arrived by t (arrival <= t). It
  is sampled every 1 ms at integer times from the start of the measurement
  (0 for a run, a flow's first send for that flow) up to duration_ms.
  Before the first arrival it is the time since that start, as if the receiver
  were up to date at the start: it rises 1 ms per ms from 0. Counting the
  silent start keeps a scheme that delivers nothing for seconds from looking
  good, and makes the omniscient bound a lower bound at every sample.
- score = ln(Mbit/s) - ln(ms). Zero throughput scores -inf (it ranks last and
  sorts correctly); a NaN input gives NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ccgym.emulators.link_facts import PACKET_BYTES
from ccgym.measure.logs import PacketLog, as_packet_log

BYTES_PER_OPPORTUNITY = PACKET_BYTES  # mahimahi's MTU accounting: one trace line carries this much
BITS_PER_BYTE = 8
BITS_PER_KBIT = 1000  # bits per ms / 1000 = Mbit/s
DELAY_PERCENTILE = 95.0
SIGNAL_DELAY_STEP_MS = 1.0  # the contest sampled the signal delay every millisecond
# Shares among flows count from the last flow's start plus this: slow start and a learned
# flow's growth ceiling (it grows only on ACKs) take seconds, and a flow that joins late is
# judged on where it settles, not on its climb nor on the time before it existed.
SHARE_RAMP_MS = 5000.0

LogLike = PacketLog | Mapping[str, ArrayLike]


def _mbps(total_bytes: float, duration_ms: float) -> float:
    return float(total_bytes * BITS_PER_BYTE / duration_ms / BITS_PER_KBIT)


def _check_duration(duration_ms: float) -> None:
    if not duration_ms > 0:
        raise ValueError(f"duration_ms must be positive, got {duration_ms}")


def _p95(values: np.ndarray) -> float:
    return float(np.percentile(values, DELAY_PERCENTILE)) if len(values) else math.nan


def throughput_mbps(log: LogLike, duration_ms: float, flow: int | None = None) -> float:
    """Bytes delivered in [0, duration_ms), of one flow or of all, in Mbit/s."""
    _check_duration(duration_ms)
    log = as_packet_log(log)
    mask = log.arrived(duration_ms)
    if flow is not None:
        mask &= log.flow == flow
    return _mbps(float(np.sum(log.bytes[mask], dtype=np.int64)), duration_ms)


def capacity_mbps(opportunities_ms: ArrayLike, duration_ms: float) -> float:
    """The link's delivery opportunities in [0, duration_ms), 1500 bytes each, in Mbit/s."""
    _check_duration(duration_ms)
    opportunities = np.asarray(opportunities_ms, dtype=np.float64)
    count = int(np.count_nonzero((opportunities >= 0) & (opportunities < duration_ms)))
    return _mbps(count * BYTES_PER_OPPORTUNITY, duration_ms)


def utilization(throughput: float, capacity: float) -> float:
    """throughput / capacity; NaN when the link offered nothing."""
    return throughput / capacity if capacity > 0 else math.nan


def delay_p95_ms(log: LogLike, duration_ms: float | None = None) -> float:
    """95th percentile of per-packet one-way delay (arrival - send) of delivered packets.

    With duration_ms, only packets delivered within the run count. NaN if none arrived.
    """
    log = as_packet_log(log)
    mask = log.arrived(duration_ms)
    return _p95(log.arrival_ms[mask] - log.send_ms[mask])


def signal_delay_series(log: LogLike, duration_ms: float,
                        start_ms: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The end-to-end (signal) delay sampled every 1 ms: (times_ms, delays_ms).

    See the module docstring for the definition. Vectorized: sort by arrival,
    running maximum of send times, then one searchsorted for all sample times.
    """
    _check_duration(duration_ms)
    log = as_packet_log(log)
    times = np.arange(math.ceil(start_ms), duration_ms, SIGNAL_DELAY_STEP_MS)
    mask = log.arrived(duration_ms)
    order = np.argsort(log.arrival_ms[mask], kind="stable")
    arrivals = log.arrival_ms[mask][order]
    newest_send = np.maximum.accumulate(log.send_ms[mask][order])
    known = np.searchsorted(arrivals, times, side="right")  # packets arrived by each t
    reference = np.full(times.shape, start_ms, dtype=np.float64)
    some = known > 0
    reference[some] = np.maximum(start_ms, newest_send[known[some] - 1])
    return times, times - reference


def e2e_delay_p95_ms(log: LogLike, duration_ms: float, start_ms: float = 0.0) -> float:
    """The contest's 95% end-to-end delay: 95th percentile of the signal delay, ms.

    NaN if there is no sample (start_ms >= duration_ms).
    """
    _, delays = signal_delay_series(log, duration_ms, start_ms)
    return _p95(delays)


def score(throughput: float, e2e_delay_ms: float) -> float:
    """ln(throughput in Mbit/s) - ln(95% end-to-end delay in ms); -inf at zero throughput."""
    if math.isnan(throughput) or math.isnan(e2e_delay_ms):
        return math.nan
    if throughput < 0 or e2e_delay_ms < 0:
        raise ValueError(f"score of negative values: {throughput} Mbit/s, {e2e_delay_ms} ms")
    if throughput == 0:
        return -math.inf
    if e2e_delay_ms == 0:
        return math.inf
    return math.log(throughput) - math.log(e2e_delay_ms)


def loss_rate(log: LogLike) -> float:
    """Dropped / packets whose fate is known (packets still in flight at the end count neither way)."""
    log = as_packet_log(log)
    dropped = np.count_nonzero(log.dropped == 1)
    known = dropped + np.count_nonzero(log.arrived())
    return dropped / known if known else math.nan


def jain_index(values: ArrayLike) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when equal, 1/n when one takes all.

    All zeros counts as equal (1.0).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("jain_index of no values")
    if np.any(x < 0):
        raise ValueError(f"jain_index of negative values: {x}")
    squares = float(np.sum(x * x))
    return float(np.sum(x)) ** 2 / (x.size * squares) if squares > 0 else 1.0


def window_edges(duration_ms: float, window_ms: float, start_ms: float = 0.0) -> np.ndarray:
    """Edges of windows of window_ms from start_ms to duration_ms (the last may be shorter)."""
    if not window_ms > 0:
        raise ValueError(f"window_ms must be positive, got {window_ms}")
    return np.append(np.arange(start_ms, duration_ms, window_ms), duration_ms)


def window_mbps(times_ms: np.ndarray, weights_bytes: np.ndarray, edges_ms: np.ndarray) -> np.ndarray:
    """Mbit/s in each window between edges: the bytes (weights) of the events at times_ms."""
    totals, _ = np.histogram(times_ms, bins=edges_ms, weights=weights_bytes)
    return totals * BITS_PER_BYTE / np.diff(edges_ms) / BITS_PER_KBIT


def overlap_ms(log: LogLike, duration_ms: float,
               ramp_ms: float = SHARE_RAMP_MS) -> tuple[float, float]:
    """The span [from, to) while every flow of the log sends, after the ramp: from the last
    flow's first send plus ramp_ms to the first flow's last send (duration_ms at the latest).
    Empty (from >= to) when the flows never overlap past the ramp."""
    log = as_packet_log(log)
    firsts, lasts = [], []
    for flow in log.flows():
        sends = log.send_ms[log.flow == flow]
        firsts.append(float(np.min(sends)))
        lasts.append(float(np.max(sends)))
    if not firsts:
        return 0.0, 0.0
    return max(firsts) + ramp_ms, min(min(lasts), duration_ms)


def shares_between(log: LogLike, from_ms: float, to_ms: float) -> dict[int, float]:
    """Each flow's share of the bytes that arrived in [from_ms, to_ms), by flow id (every
    flow of the log, NaN for all when none arrived)."""
    log = as_packet_log(log)
    counted = (log.arrival_ms >= from_ms) & (log.arrival_ms < to_ms)  # NaN (lost): False
    flows = log.flows()
    per_flow = {int(f): float(np.sum(log.bytes[counted & (log.flow == f)], dtype=np.int64))
                for f in flows}
    total = sum(per_flow.values())
    return {f: b / total if total > 0 else math.nan for f, b in per_flow.items()}


def overlap_shares(log: LogLike, duration_ms: float,
                   ramp_ms: float = SHARE_RAMP_MS) -> dict[int, float]:
    """Each flow's share of the bytes delivered while all flows send, after the ramp
    (overlap_ms): what a flow holds beside the others, whatever the order they started in."""
    return shares_between(log, *overlap_ms(log, duration_ms, ramp_ms))


def flow_metrics(log: LogLike, duration_ms: float) -> list[dict[str, float]]:
    """Per-flow throughput, shares, delays and score, by ascending flow id.

    A flow's throughput and signal delay are measured from its first send (as
    Pantheon does for staggered flows), so a flow that joins late is not charged
    for the time before it existed. `share` is of all bytes delivered in the run;
    `share_overlap` of those delivered while all flows send (overlap_shares), NaN
    when the run ends within the ramp after the last start.
    """
    log = as_packet_log(log)
    total = throughput_mbps(log, duration_ms)
    overlap = overlap_shares(log, duration_ms)
    rows = []
    for flow in log.flows():
        own = log.for_flow(int(flow))
        start_ms = float(np.min(own.send_ms))
        over_run = throughput_mbps(own, duration_ms)
        active_ms = duration_ms - start_ms
        tput = over_run * duration_ms / active_ms if active_ms > 0 else math.nan
        e2e = e2e_delay_p95_ms(own, duration_ms, start_ms=start_ms)
        rows.append({
            "flow": int(flow),
            "throughput_mbps": tput,
            "share": over_run / total if total > 0 else math.nan,
            "share_overlap": overlap[int(flow)],
            "delay_p95_ms": delay_p95_ms(own, duration_ms),
            "e2e_delay_p95_ms": e2e,
            "score": score(tput, e2e),
        })
    return rows


def _json_number(value: Any) -> Any:
    """JSON has no NaN or infinity (strict parsers reject them): those become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


@dataclass
class Metrics:
    throughput_mbps: float
    capacity_mbps: float
    utilization: float
    delay_p95_ms: float
    e2e_delay_p95_ms: float
    score: float
    loss: float
    flows: list[dict[str, float]] = field(default_factory=list)
    jain_index: float | None = None  # set when there are several flows

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN and infinities become None; flows and jain_index only when several flows."""
        out: dict[str, Any] = {key: _json_number(getattr(self, key)) for key in (
            "throughput_mbps", "capacity_mbps", "utilization", "delay_p95_ms",
            "e2e_delay_p95_ms", "score", "loss")}
        if len(self.flows) > 1:
            out["flows"] = [{k: _json_number(v) for k, v in row.items()} for row in self.flows]
            out["jain_index"] = _json_number(self.jain_index)
        return out


def summarize(log: LogLike, opportunities_ms: ArrayLike, duration_ms: float) -> Metrics:
    """Every metric of one run over [0, duration_ms)."""
    log = as_packet_log(log)
    tput = throughput_mbps(log, duration_ms)
    capacity = capacity_mbps(opportunities_ms, duration_ms)
    e2e = e2e_delay_p95_ms(log, duration_ms)
    flows = flow_metrics(log, duration_ms)
    several = len(flows) > 1
    return Metrics(
        throughput_mbps=tput,
        capacity_mbps=capacity,
        utilization=utilization(tput, capacity),
        delay_p95_ms=delay_p95_ms(log, duration_ms),
        e2e_delay_p95_ms=e2e,
        score=score(tput, e2e),
        loss=loss_rate(log),
        flows=flows,
        jain_index=jain_index([f["throughput_mbps"] for f in flows]) if several else None,
    )


def omniscient_log(opportunities_ms: ArrayLike, duration_ms: float, delay_ms: float) -> PacketLog:
    """The omniscient sender's log: one 1500-byte packet per opportunity in [0, duration_ms).

    The model is the simulator's (link, then propagation): a packet sent exactly
    at an opportunity is served at once, with no queueing, and arrives delay_ms
    later. Its one-way delay is the propagation delay, and no sender can have
    heard from more recently: any packet that arrived by t left the link at an
    opportunity at or before t - delay_ms, and was sent no later than that.
    """
    _check_duration(duration_ms)
    opportunities = np.sort(np.asarray(opportunities_ms, dtype=np.float64))
    used = opportunities[(opportunities >= 0) & (opportunities < duration_ms)]
    n = len(used)
    return PacketLog.from_columns({
        "flow": np.zeros(n, np.int32),
        "seq": np.arange(n, dtype=np.int64),
        "bytes": np.full(n, BYTES_PER_OPPORTUNITY, np.int32),
        "send_ms": used,
        "arrival_ms": used + delay_ms,
        "dropped": np.zeros(n, np.uint8),
    })


def omniscient(opportunities_ms: ArrayLike, duration_ms: float, delay_ms: float) -> Metrics:
    """The bound: every opportunity in [0, duration_ms) used, each packet delayed only by delay_ms.

    Throughput is the capacity by definition (even the packets of the last
    delay_ms, which arrive after the end); the 95% end-to-end delay is the
    signal delay of omniscient_log(), by the same function as for any scheme.
    """
    capacity = capacity_mbps(opportunities_ms, duration_ms)
    log = omniscient_log(opportunities_ms, duration_ms, delay_ms)
    e2e = e2e_delay_p95_ms(log, duration_ms)
    return Metrics(
        throughput_mbps=capacity,
        capacity_mbps=capacity,
        utilization=utilization(capacity, capacity),
        delay_p95_ms=float(delay_ms) if len(log) else math.nan,
        e2e_delay_p95_ms=e2e,
        score=score(capacity, e2e),
        loss=0.0,
    )

