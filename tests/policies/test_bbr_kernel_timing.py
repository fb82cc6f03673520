"""bbr's sending as kernel bbr's through the link shell (docs/results.md, "Shared links: the
simulator against kernel TCP"): a send quantum back to back at each paced send, and an
estimate that PROBE_RTT's low samples do not age out; and pairs of flows that share a link
as the kernel's do. On the real simulator."""

import numpy as np

from ccgym.emulators import _core
from ccgym.measure.metrics import overlap_shares

PACKET_BITS = 12_000


def log(link: str, flows: list[str], duration_ms: float) -> dict[str, np.ndarray]:
    sim = _core.Simulator(link, [(scheme, 0.0, -1.0) for scheme in flows], 1)
    sim.run_until(duration_ms)
    return {key: np.asarray(values) for key, values in sim.log().items()}


def sent_right_behind(scheme: str) -> float:
    """The fraction of bbr's packets after its startup sent at the same instant as its
    previous one, alone on 12 Mbit/s, 40 ms."""
    send = log("rate_mbps=12,delay_ms=40", [scheme], 10_000)["send_ms"]
    send = send[send > 3_000]
    return float(np.mean(np.diff(send) == 0))


def test_bbr_sends_its_quantum_back_to_back() -> None:
    # At 12 Mbit/s a millisecond is one packet, so the quantum is the kernel's least TSO
    # burst, two: every paced send is a pair (kernel bbr sends 98% of its packets in pairs
    # there), less the sends the window lets out one at a time.
    assert 0.3 < sent_right_behind("bbr") < 0.55
    assert sent_right_behind("bbr:quantum_ms=0") == 0


def test_probe_rtt_leaves_the_estimate_at_a_short_rtt() -> None:
    # At a 20 ms RTT the 200 ms of PROBE_RTT (around 10 s) are ten round trips: were its
    # samples of a 4-packet window to enter the 10-round max filter, the estimate would fall
    # to a few Mbit/s and the flow take a second or more to climb back (kernel bbr beside
    # kernel cubic on this link kept its 41-44 Mbit/s estimate through PROBE_RTT).
    arrival = log("rate_mbps=48,delay_ms=10", ["bbr"], 12_000)["arrival_ms"]
    after_probe = (arrival >= 10_000) & (arrival < 11_000)
    mbps = after_probe.sum() * PACKET_BITS / 1_000 / 1_000
    assert mbps > 0.6 * 48, mbps


def second_flows_shares(link: str, first: str, second: str) -> list[float]:
    """The second flow's share beside the first, both from 0 for 20 s, at seeds 1-8."""
    shares = []
    for seed in range(1, 9):
        sim = _core.Simulator(link, [(first, 0.0, -1.0), (second, 0.0, -1.0)], seed)
        sim.run_until(20_000)
        shares.append(overlap_shares(sim.log(), 20_000)[1])
    return shares


def cubic_shares_beside_bbr(link: str) -> list[float]:
    """Linux's cubic's share beside bbr."""
    return second_flows_shares(link, "bbr", "cubic:hystart=2")


def test_cubic_keeps_a_fifth_of_a_slow_path_beside_bbr() -> None:
    # 12 Mbit/s, 40 ms, a 1-BDP DropTail buffer (80 packets): kernel cubic keeps 0.34 and 0.32
    # of the link on average beside kernel bbr on a quiet host (two sets of 6 runs), here 0.22:
    # the one pair of docs/results.md's table outside 0.05 of the kernel. Both slow starts
    # overflow the buffer together; kernel bbr leaves startup at 5.2 Mbit/s and stays there for
    # seconds, ccgym's at 6.9 and climbs to 8 as cubic recovers (cause not found). Who takes a
    # full queue's drops is a phase effect: with 2 ms of ACK noise cubic keeps 0.13, without
    # any 0.27.
    shares = cubic_shares_beside_bbr("rate_mbps=12,delay_ms=40,queue=droptail:packets=80")
    assert 0.17 < np.mean(shares) < 0.28, shares


def test_cubic_keeps_four_fifths_of_a_deep_buffer_beside_bbr() -> None:
    # 24 Mbit/s, 20 ms, a 4-BDP DropTail buffer (320 packets): kernel cubic keeps 0.82 ± 0.01
    # beside kernel bbr on a quiet host (6 runs). bbr's probes last until its in-flight
    # reaches tcp_bbr.c's target (the BDP at the gain with the quantization budget) or a loss;
    # ended at the bare BDP, cubic kept 0.855 here.
    shares = cubic_shares_beside_bbr("rate_mbps=24,delay_ms=20,queue=droptail:packets=320")
    assert 0.79 < np.mean(shares) < 0.84, shares


def test_reno_shares_a_link_with_cubic_and_yields_to_bbr_as_the_kernels_do() -> None:
    # 24 Mbit/s, 20 ms, a 1-BDP DropTail buffer (80 packets), on a quiet host over 5 runs:
    # kernel cubic keeps 0.552 ± 0.037 beside kernel reno, kernel reno 0.119 ± 0.009 beside
    # kernel bbr (docs/results.md, "Reno"). Here 0.52 and 0.10: nothing was fitted to them.
    link = "rate_mbps=24,delay_ms=20,queue=droptail:packets=80"
    assert 0.50 < np.mean(second_flows_shares(link, "reno", "cubic:hystart=2")) < 0.60
    assert 0.07 < np.mean(second_flows_shares(link, "bbr", "reno")) < 0.17
