"""What a link is, in numbers: its mean rate, its BDP, how long a run of it lasts, whether its
ideal window is simply the BDP, the statistics of its deliveries (`ccgym links show`). Read off
the spec (and its trace) by the C++ parser; the oracle, the environments, `ccgym eval` and link
variants all ask here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.link_names import spec_fields

# One delivery opportunity carries this many bytes (mahimahi's MTU accounting), as the C++ core
# counts them (common/cpp/packet.hh): a BDP counts packets of this size too.
PACKET_BYTES = _core.OPPORTUNITY_BYTES
BITS_PER_BYTE = 8
MS_PER_S = 1000.0
BITS_PER_MBIT = 1e6
# A non-trace link runs this long unless told otherwise (the contest ran its trace once).
DEFAULT_DURATION_MS = 30_000.0
# Links without a constant rate or a trace (burst delivery) are measured over this long.
RATE_ESTIMATE_MS = 10_000.0
# The data direction has no shaping beyond its rate, and the ACK direction at most a
# constant rate: the only ACK keys a canonical spec then prints.
_PLAIN_ACK_KEYS = frozenset({"ack_rate_mbps"})


def bdp_packets(rate_mbps: float, delay_ms: float) -> float:
    """rate x min RTT (2 x one-way delay) in 1500-byte packets."""
    bytes_per_ms = rate_mbps * BITS_PER_MBIT / BITS_PER_BYTE / MS_PER_S
    return bytes_per_ms * 2.0 * delay_ms / PACKET_BYTES


def rate_mbps(opportunities: int, duration_ms: float) -> float:
    """The rate of so many delivery opportunities over duration_ms."""
    return opportunities * PACKET_BYTES * BITS_PER_BYTE / BITS_PER_MBIT / (duration_ms / MS_PER_S)


def parsed_link(link: str | _core.LinkSpec) -> _core.LinkSpec:
    """A link spec parsed: as it is if it was already, else parsed now. The functions here take
    either, so that a caller holding the parse (envs/config.py's profiles) parses no more."""
    return link if isinstance(link, _core.LinkSpec) else _core.parse_link_spec(link)


def mean_rate_mbps(link: str | _core.LinkSpec, seed: int = 1) -> float:
    """The data direction's mean delivery rate: its rate, else a trace's lines per period,
    else measured over RATE_ESTIMATE_MS (burst delivery). Cached per spec string; a parsed
    link is worked out each time (a link's profile asks once)."""
    if isinstance(link, str):
        return _spec_mean_rate_mbps(link, seed)
    if link.rate_mbps > 0:
        return float(link.rate_mbps)
    if link.data_trace:
        stamps = _core.load_trace(link.data_trace)
        return rate_mbps(len(stamps), float(stamps[-1]))
    return rate_mbps(len(_core.opportunities(link.to_string(), RATE_ESTIMATE_MS, seed)),
                     RATE_ESTIMATE_MS)


@lru_cache(maxsize=1024)
def _spec_mean_rate_mbps(link_spec: str, seed: int) -> float:
    return mean_rate_mbps(_core.parse_link_spec(link_spec), seed)


def is_plain_constant_link(link: str | _core.LinkSpec) -> bool:
    """Constant-rate data direction, infinite queue, no loss, and an ACK direction that
    is at most a constant rate: the links whose ideal window is the BDP."""
    parsed = parsed_link(link)
    ack_keys = {key for key in spec_fields(parsed.to_string()) if key.startswith("ack_")}
    return (not parsed.data_trace and parsed.delivery == "constant"
            and parsed.queue == "infinite" and parsed.loss == 0
            and ack_keys <= _PLAIN_ACK_KEYS)


def default_duration_ms(link: str | _core.LinkSpec) -> float:
    """How long `ccgym eval` (and the oracle's searches) run a link: its data trace once,
    else DEFAULT_DURATION_MS."""
    parsed = parsed_link(link)
    if parsed.data_trace:
        return float(_core.load_trace(parsed.data_trace)[-1])
    return DEFAULT_DURATION_MS


# ---------------------------------------------------------------- statistics (`ccgym links show`)

WINDOW_MS = 500.0           # the window of the throughput percentiles and outage fraction
PERCENTILES = (5, 50, 95)


def delivery_statistics(times_ms: Any, duration_ms: float, delay_ms: float) -> dict[str, Any]:
    """Statistics of a delivery process from its opportunity times in [0, duration_ms].

    Windows are whole WINDOW_MS intervals from 0 (a partial last one is left out); with a
    duration shorter than one window, the whole duration is one window.
    """
    times = np.asarray(times_ms, dtype=np.float64)
    if not duration_ms > 0:
        raise ValueError(f"duration_ms must be > 0, got {duration_ms}")
    mbit_per_opportunity = PACKET_BYTES * BITS_PER_BYTE / 1e6
    mean_mbps = len(times) * mbit_per_opportunity / (duration_ms / 1000)
    window_ms = min(WINDOW_MS, duration_ms)
    n_windows = int(duration_ms // window_ms)
    index = np.floor(times / window_ms).astype(np.int64)
    counts = np.bincount(index[(index >= 0) & (index < n_windows)], minlength=n_windows)
    window_mbps = counts * mbit_per_opportunity / (window_ms / 1000)
    min_rtt_ms = 2 * delay_ms
    return {
        "mean_mbps": float(mean_mbps),
        "window_ms": float(window_ms),
        "window_mbps_percentiles": {f"p{q}": float(v) for q, v in
                                    zip(PERCENTILES, np.percentile(window_mbps, PERCENTILES))},
        "outage_fraction": float(np.mean(counts == 0)),
        "min_rtt_ms": float(min_rtt_ms),
        "bdp_packets": float(bdp_packets(mean_mbps, delay_ms)),
        "duration_ms": float(duration_ms),
    }


def trace_statistics(timestamps: Any, delay_ms: float) -> dict[str, Any]:
    """delivery_statistics of one period of a mahimahi trace (period = its last timestamp)."""
    stamps = np.asarray(timestamps, dtype=np.int64)
    if len(stamps) == 0 or stamps[-1] <= 0:
        raise ValueError("a trace needs a last timestamp > 0")
    period = int(stamps[-1])
    # An opportunity at the period is the one at 0 of the next repetition: folding it there
    # puts each of the trace's opportunities exactly once in [0, period).
    return delivery_statistics(stamps % period, float(period), delay_ms)
