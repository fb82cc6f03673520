"""Which flow of a link shell's log is which of the run's: by the receiver's port and, for
kernel flows (which share one TCP receiver), by the port each sender reported."""

from __future__ import annotations

from ccgym.deploy.shell import _flow_ids

OUTSIDE = "100.64.0.1"
# Two kernel flows to the TCP receiver's port 4000 (the second one's SYN reached the link
# first) and a ccgym sender to its own receiver's port 4001.
NAMES = {0: f"tcp:100.64.0.2:50001>{OUTSIDE}:4000", 1: f"tcp:100.64.0.2:50000>{OUTSIDE}:4000",
         2: f"udp:100.64.0.2:6000>{OUTSIDE}:4001",
         3: "udp:100.64.0.2:7000>198.51.100.9:53"}  # not to the outside: no flow of the run
PORTS = [4000, 4000, 4001]


def test_kernel_flows_are_told_apart_by_their_source_ports() -> None:
    assert _flow_ids(NAMES, OUTSIDE, PORTS, {0: 50000, 1: 50001}) == {1: 0, 0: 1, 2: 2}


def test_without_source_ports_the_order_of_appearance_decides() -> None:
    assert _flow_ids(NAMES, OUTSIDE, PORTS) == {0: 0, 1: 1, 2: 2}
    # One sender's report missing: the other is placed by its port, the rest by order.
    assert _flow_ids(NAMES, OUTSIDE, PORTS, {1: 50000}) == {1: 1, 0: 0, 2: 2}
