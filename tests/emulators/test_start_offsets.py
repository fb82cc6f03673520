"""Flows started together start apart by chance (simulator.hh, kTogetherStartSpreadMs): over
seeds either leads, a seed repeats, and flows started alone or apart run as before. On a deep
buffer under HyStart the order decides the split, as for kernel TCP."""

import numpy as np

from ccgym.emulators import _core
from ccgym.measure.metrics import overlap_shares

# bench_fidelity's cubic+cubic@24/20/4: 24 Mbit/s, 20 ms each way, a DropTail buffer of 4 BDPs.
DEEP = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320"
HYSTART = "cubic:hystart=2"


def run(starts: list[float], seed: int, duration_ms: float, **options: float) -> _core.Simulator:
    sim = _core.Simulator(DEEP, [(HYSTART, start, -1.0) for start in starts], seed, **options)
    sim.run_until(duration_ms)
    return sim


def log(sim: _core.Simulator) -> dict[str, np.ndarray]:
    return {key: np.asarray(value) for key, value in sim.log().items()}


def test_either_flow_leads_over_seeds_and_a_seed_repeats() -> None:
    starts = [(run([0.0, 0.0], seed, 1.0).start_ms(0), run([0.0, 0.0], seed, 1.0).start_ms(1))
              for seed in range(1, 13)]
    assert all(0 <= a < _core.TOGETHER_START_SPREAD_MS and 0 <= b < _core.TOGETHER_START_SPREAD_MS
               for a, b in starts), starts
    flow1_first = sum(b < a for a, b in starts)
    assert 3 <= flow1_first <= 9, starts
    again = run([0.0, 0.0], 5, 3000.0)
    first = run([0.0, 0.0], 5, 3000.0)
    for key, column in log(first).items():
        np.testing.assert_array_equal(column, log(again)[key])


def test_a_staggered_pair_and_a_lone_flow_run_as_without_offsets() -> None:
    for starts in ([0.0, 2000.0], [0.0]):
        sim = run(starts, 2, 6000.0)
        assert [sim.start_ms(i) for i in range(len(starts))] == starts
        unmoved = log(run(starts, 2, 6000.0, start_spread_ms=0.0))
        for key, column in log(sim).items():
            np.testing.assert_array_equal(column, unmoved[key])


def test_the_leader_keeps_most_of_a_deep_buffer_under_hystart() -> None:
    # Kernel cubic pairs on 24 Mbit/s, 20 ms, 4 BDPs: the flow that reaches the link second
    # leaves slow start on HyStart's delay test at 28-49 packets and keeps 0.25-0.37; the
    # leader 0.63-0.75 (docs/results.md). Without offsets flow 1 follows at every seed.
    shares = []
    for seed in range(1, 9):
        sim = run([0.0, 0.0], seed, 20_000.0)
        second = overlap_shares(sim.log(), 20_000.0)[1]
        shares.append(second)
        leads = sim.start_ms(1) < sim.start_ms(0)
        assert (second > 0.5) == leads, (seed, sim.start_ms(0), sim.start_ms(1), second)
    assert np.std(shares) > 0.1, shares
