"""The four schemes added after the classic ten, on the real simulator: does each do what
its paper or RFC says it does?

- PCC Vivace fills a constant link and converges to a fair share among Vivace flows;
- LEDBAT (RFC 6817) holds its queueing delay near its 100 ms target alone and yields to CUBIC;
- BBR v3 loses far less than BBR v1 behind a shallow buffer at about the same throughput;
- C2TCP keeps the delay near its target on a cellular-like trace where CUBIC bloats the queue.

Measurements skip each run's first seconds (startup) and count packets by send time.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ccgym.emulators import _core
from ccgym.emulators.generate import generate_cellular_trace, write_trace

PACKET_BITS = 12_000


class Run:
    """One simulation's packet log: loss and delays over packets sent in [from_ms, to_ms)."""

    def __init__(self, link: str, flows: list[tuple[str, float]], duration_ms: float,
                 seed: int = 1) -> None:
        sim = _core.Simulator(link, [(s, start, -1.0) for s, start in flows], seed)
        sim.run_until(duration_ms)
        log = sim.log()
        self.flow = np.asarray(log["flow"])
        self.send = np.asarray(log["send_ms"])
        self.arrival = np.asarray(log["arrival_ms"])
        self.dropped = np.asarray(log["dropped"]).astype(bool)

    def _sent(self, flow: int | None, from_ms: float, to_ms: float) -> np.ndarray:
        mask = (self.send >= from_ms) & (self.send < to_ms)
        return mask if flow is None else mask & (self.flow == flow)

    def mbps(self, flow: int | None, from_ms: float, to_ms: float) -> float:
        """Throughput over packets that arrived in [from_ms, to_ms)."""
        arrived = ~self.dropped & (self.arrival >= from_ms) & (self.arrival < to_ms)
        if flow is not None:
            arrived &= self.flow == flow
        return float(arrived.sum()) * PACKET_BITS / (to_ms - from_ms) / 1000

    def loss(self, flow: int | None, from_ms: float, to_ms: float) -> float:
        sent = self._sent(flow, from_ms, to_ms)
        return float((sent & self.dropped).sum()) / max(int(sent.sum()), 1)

    def one_way_ms(self, flow: int | None, from_ms: float, to_ms: float) -> np.ndarray:
        arrived = self._sent(flow, from_ms, to_ms) & ~self.dropped & np.isfinite(self.arrival)
        return self.arrival[arrived] - self.send[arrived]


def jain(rates: list[float]) -> float:
    return sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))


LINK_24 = "rate_mbps=24,delay_ms=20,queue=droptail:packets=200"


def test_vivace_fills_a_constant_link_without_a_standing_queue() -> None:
    run = Run(LINK_24, [("vivace", 0)], 30_000)
    assert run.mbps(0, 10_000, 30_000) > 0.9 * 24
    # Its latency gradient stops it before a queue builds: the 200-packet buffer is 100 ms.
    assert np.median(run.one_way_ms(0, 10_000, 30_000)) < 21 + 10


def test_vivace_flows_converge_to_a_fair_share() -> None:
    run = Run(LINK_24, [("vivace", 0), ("vivace", 5_000)], 60_000)
    rates = [run.mbps(i, 20_000, 60_000) for i in (0, 1)]
    assert jain(rates) > 0.98, rates
    assert sum(rates) > 0.85 * 24


def test_ledbat_holds_its_target_queueing_delay_alone() -> None:
    # 12 Mbit/s, 20 ms each way: the base one-way delay is 21 ms; 400 packets hold 400 ms.
    run = Run("rate_mbps=12,delay_ms=20,queue=droptail:packets=400", [("ledbat", 0)], 60_000)
    queueing = np.median(run.one_way_ms(0, 40_000, 60_000)) - 21
    assert 80 < queueing < 115, queueing
    assert run.mbps(0, 40_000, 60_000) > 0.95 * 12
    target_50 = Run("rate_mbps=12,delay_ms=20,queue=droptail:packets=400",
                    [("ledbat:target_ms=50", 0)], 60_000)
    assert 35 < np.median(target_50.one_way_ms(0, 40_000, 60_000)) - 21 < 60


def test_ledbat_yields_to_cubic() -> None:
    run = Run("rate_mbps=12,delay_ms=20,queue=droptail:packets=300",
              [("ledbat", 0), ("cubic", 10_000)], 60_000)
    assert run.mbps(0, 0, 10_000) > 0.8 * 12  # alone it uses the link
    ledbat, cubic = run.mbps(0, 40_000, 60_000), run.mbps(1, 40_000, 60_000)
    assert ledbat < 0.05 * (ledbat + cubic), (ledbat, cubic)
    assert cubic > 0.95 * 12


@pytest.mark.parametrize("flows", [1, 2])
def test_bbr3_loses_less_than_bbr_behind_a_shallow_buffer(flows: int) -> None:
    # 20 packets are a quarter of the 80-packet BDP: BBR v1's 2-BDP window overflows it (alone
    # its probes do, 2.1% of its packets; two flows lose 6.7%), BBR v2/v3 caps its inflight
    # at what last lost.
    link = "rate_mbps=24,delay_ms=20,queue=droptail:packets=20"
    runs = {s: Run(link, [(s, 2_000 * i) for i in range(flows)], 30_000) for s in ("bbr", "bbr3")}
    loss = {s: r.loss(None, 0, 30_000) for s, r in runs.items()}
    mbps = {s: r.mbps(None, 5_000, 30_000) for s, r in runs.items()}
    assert loss["bbr"] > 0.01, loss
    assert loss["bbr3"] < loss["bbr"] / 3, loss
    assert mbps["bbr3"] > 0.93 * mbps["bbr"], mbps


def test_c2tcp_keeps_its_delay_target_on_a_cellular_trace(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "cell.tr", generate_cellular_trace(12, 60, seed=1))
    link = f"trace={trace},delay_ms=20"  # an unlimited queue: CUBIC fills it
    c2tcp, cubic = Run(link, [("c2tcp", 0)], 60_000), Run(link, [("cubic", 0)], 60_000)
    # Its target is 2 x the min RTT (80 ms): 40 ms of queueing, 61 ms one way.
    c2tcp_delays = c2tcp.one_way_ms(0, 5_000, 60_000)
    assert np.mean(c2tcp_delays < 61) > 0.8
    assert np.median(cubic.one_way_ms(0, 5_000, 60_000)) > 10 * np.median(c2tcp_delays)
    assert c2tcp.mbps(0, 5_000, 60_000) > 0.6 * cubic.mbps(0, 5_000, 60_000)


def test_hystart_leaves_slow_start_before_the_buffer_overflows() -> None:
    # 24 Mbit/s, 20 ms, a 4-BDP buffer: plain cubic doubles its window until the buffer drops
    # packets; with HyStart's delay test it stops once the queue adds 5 ms (an eighth of the
    # 40 ms RTT), so its first second loses nothing.
    deep = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320"
    plain, hystart = Run(deep, [("cubic", 0)], 1000), Run(deep, [("cubic:hystart=1", 0)], 1000)
    assert plain.loss(0, 0, 1000) > 0.05
    assert hystart.loss(0, 0, 1000) == 0


def test_bbr_keeps_the_kernels_share_of_a_deep_buffer_beside_linux_cubic() -> None:
    # bbr and Linux's cubic (HyStart's two tests) together on a 4-BDP buffer, bbr's rate from
    # 5 to 15 s: 2.5-3.2 Mbit/s over seeds 1-6, 2.75 on average (kernel bbr beside kernel
    # cubic: 3.1 and 2.9, two quiet runs). Which of the two slow starts fills the buffer first
    # is chance: beside plain cubic bbr keeps 2.0-3.3.
    deep = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320"
    rates = [Run(deep, [("bbr", 0), ("cubic:hystart=2", 0)], 15_000, seed).mbps(0, 5000, 15_000)
             for seed in range(1, 7)]
    assert 2.5 < np.mean(rates) < 3.2, rates
    assert min(rates) > 0.1 * 24, rates
