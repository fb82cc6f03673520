"""Variants of links: the same delivery process under other delays, buffers and ACK paths.

A policy trained on one setup (say every cellular trace at 20 ms with an infinite buffer and
its recorded uplink) meets others when deployed: one-way delays of 5-100 ms, buffers from half a
BDP to seconds, clean ACK paths and stalling ones. `vary_links` crosses each link with the
values a training config lists, so that episodes, which draw a link uniformly, draw each
setting uniformly too. A list left empty keeps each link's own value.

- delay_ms: one-way propagation delay, both directions;
- queue_bdp: a DropTail queue on the data direction of that many BDPs (the link's mean rate
  times its min RTT, at least MIN_QUEUE_PACKETS), 0 for an infinite queue;
- ack: "own" keeps the link's ACK direction, "clean" replaces it by the propagation delay only.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

from ccgym.emulators import _core
from ccgym.emulators.link_facts import bdp_packets, mean_rate_mbps
from ccgym.emulators.link_names import spec_fields
from ccgym.emulators.links import Link

ACK_PATHS = ("own", "clean")
# Fewer than a few packets of buffer is a policer, not a queue (pantheon-pathological has those).
MIN_QUEUE_PACKETS = 4


@dataclasses.dataclass(frozen=True)
class Variation:
    """The values each link is crossed with; empty tuples keep the link's own."""

    delay_ms: tuple[float, ...] = ()
    queue_bdp: tuple[float, ...] = ()
    ack: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for d in self.delay_ms:
            if not (isinstance(d, (int, float)) and 0 <= d <= 10_000):
                raise ValueError(f"delay_ms: {d!r} is not a delay in [0, 10000] ms")
        for q in self.queue_bdp:
            if not (isinstance(q, (int, float)) and 0 <= q <= 1000 and math.isfinite(q)):
                raise ValueError(f"queue_bdp: {q!r} is not a number of BDPs in [0, 1000] "
                                 "(0: infinite)")
        for a in self.ack:
            if a not in ACK_PATHS:
                raise ValueError(f"ack: {a!r} is not one of {', '.join(ACK_PATHS)}")

    @property
    def empty(self) -> bool:
        return not (self.delay_ms or self.queue_bdp or self.ack)


def queue_for_bdps(rate_mbps: float, delay_ms: float, bdps: float) -> str:
    """The queue spec of `bdps` BDPs of DropTail buffer (at least MIN_QUEUE_PACKETS) on a link
    of that mean rate and one-way delay; 0 BDPs: an infinite queue."""
    if bdps == 0:
        return "infinite"
    bdp = bdp_packets(rate_mbps, delay_ms)
    return f"droptail:packets={max(MIN_QUEUE_PACKETS, math.ceil(bdps * bdp))}"


def _queue(spec: str, delay_ms: float, bdps: float) -> str:
    return queue_for_bdps(mean_rate_mbps(spec), delay_ms, bdps)


def _variant(link: Link, delay_ms: float | None, queue_bdp: float | None,
             ack: str | None) -> Link:
    fields = spec_fields(_core.parse_link_spec(link.spec).to_string())
    fields.pop("name", None)
    suffix = []
    if delay_ms is not None:
        fields["delay_ms"] = f"{delay_ms:g}"
        suffix.append(f"{delay_ms:g}ms")
    if ack == "clean":
        fields = {k: v for k, v in fields.items() if not k.startswith("ack_")}
        suffix.append("clean-ack")
    if queue_bdp is not None:
        plain = ",".join(f"{k}={v}" for k, v in fields.items())
        fields["queue"] = _queue(plain, float(fields.get("delay_ms", 0)), queue_bdp)
        suffix.append(f"{queue_bdp:g}bdp" if queue_bdp else "inf-queue")
    spec = ",".join(f"{k}={v}" for k, v in fields.items())
    name = "-".join([link.name, *suffix])
    return dataclasses.replace(link, name=name, spec=_core.parse_link_spec(spec).to_string())


def vary_links(links: Sequence[Link], variation: Variation) -> list[Link]:
    """Every link crossed with every combination of the variation's values."""
    if variation.empty:
        return list(links)
    delays = variation.delay_ms or (None,)
    queues = variation.queue_bdp or (None,)
    acks = variation.ack or (None,)
    return [_variant(link, d, q, a)
            for link in links for d, q, a in itertools.product(delays, queues, acks)]
