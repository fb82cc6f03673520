"""What a link is, in numbers: its mean rate, its BDP, how long a run of it lasts, whether its
ideal window is simply the BDP. Read off the spec (and its trace) by the C++ parser; the oracle,
the environments, `ccgym eval` and link variants all ask here.
"""

from __future__ import annotations

from functools import lru_cache

from ccgym.emulators import _core

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


@lru_cache(maxsize=1024)
def mean_rate_mbps(link_spec: str, seed: int = 1) -> float:
    """The data direction's mean delivery rate: its rate, else a trace's lines per period,
    else measured over RATE_ESTIMATE_MS (burst delivery)."""
    parsed = _core.parse_link_spec(link_spec)
    if parsed.rate_mbps > 0:
        return float(parsed.rate_mbps)
    if parsed.data_trace:
        stamps = _core.load_trace(parsed.data_trace)
        return rate_mbps(len(stamps), float(stamps[-1]))
    return rate_mbps(len(_core.opportunities(link_spec, RATE_ESTIMATE_MS, seed)),
                     RATE_ESTIMATE_MS)


def is_plain_constant_link(link_spec: str) -> bool:
    """Constant-rate data direction, infinite queue, no loss, and an ACK direction that
    is at most a constant rate: the links whose ideal window is the BDP."""
    from ccgym.emulators.links import spec_fields

    parsed = _core.parse_link_spec(link_spec)
    ack_keys = {key for key in spec_fields(parsed.to_string()) if key.startswith("ack_")}
    return (not parsed.data_trace and parsed.delivery == "constant"
            and parsed.queue == "infinite" and parsed.loss == 0
            and ack_keys <= _PLAIN_ACK_KEYS)


def default_duration_ms(link_spec: str) -> float:
    """How long `ccgym eval` (and the oracle's searches) run a link: its data trace once,
    else DEFAULT_DURATION_MS."""
    parsed = _core.parse_link_spec(link_spec)
    if parsed.data_trace:
        return float(_core.load_trace(parsed.data_trace)[-1])
    return DEFAULT_DURATION_MS
