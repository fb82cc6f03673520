"""Each classic scheme on the real simulator, 12 Mbit/s, 20 ms each way, a 100-packet
DropTail buffer (the 41-packet BDP plus room for a standing queue): is it in the
regime its design promises?"""

import pytest

from ccgym.measure.metrics import summarize
from ccgym.emulators import _core
from ccgym.policies.schemes import baseline_schemes

LINK = "rate_mbps=12,delay_ms=20,queue=droptail:packets=100"
DURATION_MS = 20_000
BASE_ONE_WAY_MS = 21  # propagation plus one serialization
BUFFER_MS = 100       # a full 100-packet queue at one packet per ms


def run(scheme, flows=1, link=LINK, duration_ms=DURATION_MS):
    sim = _core.Simulator(link, [(scheme, 0.0, -1.0)] * flows, 1)
    sim.run_until(duration_ms)
    return summarize(sim.log(), sim.opportunities(), duration_ms)


@pytest.mark.parametrize("scheme", baseline_schemes())
def test_every_scheme_moves_data_without_collapse(scheme):
    m = run(scheme)
    assert m.utilization > 0.4, scheme
    assert m.delay_p95_ms < BASE_ONE_WAY_MS + BUFFER_MS + 5


def test_cubic_fills_the_buffer():
    m = run("cubic")
    assert m.utilization > 0.95
    assert m.delay_p95_ms > BASE_ONE_WAY_MS + 0.8 * BUFFER_MS
    assert m.loss > 0


@pytest.mark.parametrize("scheme", ["vegas", "copa"])
def test_delay_based_schemes_keep_the_queue_short(scheme):
    m = run(scheme)
    assert m.utilization > 0.85
    assert m.delay_p95_ms < BASE_ONE_WAY_MS + 0.15 * BUFFER_MS


def test_bbr_reaches_ninety_percent_of_capacity_without_filling_the_buffer():
    # bbr paces just below the link's rate and keeps the queue short (as kernel bbr on a
    # quiet host); the stalls of a busy host push its estimate above the rate, and its
    # window (2 BDPs and headroom) then holds the queue below the buffer's 100 ms: nothing
    # lost.
    steady = run("bbr")
    assert steady.utilization >= 0.9
    assert steady.delay_p95_ms < BASE_ONE_WAY_MS + 0.5 * BUFFER_MS
    m = run("bbr:host_stalls_per_s=40")
    assert m.utilization >= 0.9
    assert BASE_ONE_WAY_MS + 0.4 * BUFFER_MS < m.delay_p95_ms < BASE_ONE_WAY_MS + 0.9 * BUFFER_MS
    assert m.loss == 0


def test_two_cubic_flows_share_fairly():
    m = run("cubic", flows=2, duration_ms=60_000)
    assert m.jain_index > 0.9
