"""A link's numbers: mean rate, BDP, default run length, whether its ideal window is the BDP."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccgym.emulators import _core
from ccgym.emulators.generate import write_trace
from ccgym.emulators.link_facts import (DEFAULT_DURATION_MS, bdp_packets, default_duration_ms,
                                        is_plain_constant_link, mean_rate_mbps)


def test_bdp_is_rate_times_min_rtt_in_packets() -> None:
    assert bdp_packets(12, 20) == pytest.approx(40.0)  # 12 Mbit/s x 40 ms / 1500 bytes
    assert bdp_packets(24, 40) == pytest.approx(160.0)


def test_mean_rate_of_a_trace_and_of_burst_delivery(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.trace", [2, 4, 6, 8])  # a packet every 2 ms: 6 Mbit/s
    assert mean_rate_mbps(f"trace={trace},delay_ms=10") == pytest.approx(6.0)
    assert mean_rate_mbps("rate_mbps=7.5,delay_ms=10") == 7.5
    # 10 packets every 20 ms, measured from the simulator's own delivery process.
    burst = mean_rate_mbps("delivery=burst,burst_packets=10,burst_period_ms=20,delay_ms=10")
    assert burst == pytest.approx(6.0, rel=0.01)


def test_a_run_lasts_its_trace_once_else_the_default(tmp_path: Path) -> None:
    trace = write_trace(tmp_path / "t.trace", [1, 2, 1500])
    assert default_duration_ms(f"trace={trace},delay_ms=10") == 1500.0
    assert default_duration_ms("rate_mbps=12,delay_ms=20") == DEFAULT_DURATION_MS


@pytest.mark.parametrize("spec, plain", [
    ("rate_mbps=12,delay_ms=20", True),
    ("rate_mbps=12,delay_ms=20,ack_rate_mbps=12", True),
    ("rate_mbps=12,delay_ms=20,queue=droptail:packets=8", False),
    ("rate_mbps=12,delay_ms=20,loss=0.01", False),
    ("rate_mbps=12,delivery=poisson,delay_ms=20", False),
    ("rate_mbps=12,delay_ms=20,ack_loss=0.01", False),
])
def test_plain_constant_links_are_those_whose_ideal_is_the_bdp(spec: str, plain: bool) -> None:
    assert is_plain_constant_link(spec) is plain


def test_a_parsed_link_has_its_specs_facts_without_a_parse_more(tmp_path: Path,
                                                                  monkeypatch) -> None:
    trace = write_trace(tmp_path / "t.trace", [2, 4, 6, 8])
    specs = [f"trace={trace},delay_ms=10", "rate_mbps=7.5,delay_ms=10,queue=droptail:packets=9",
             "delivery=burst,burst_packets=10,burst_period_ms=20,delay_ms=10"]
    facts = [(mean_rate_mbps(s), default_duration_ms(s), is_plain_constant_link(s)) for s in specs]
    parsed = [_core.parse_link_spec(s) for s in specs]

    def refuse(text: str) -> None:
        raise AssertionError(f"parsed again: {text}")

    monkeypatch.setattr(_core, "parse_link_spec", refuse)
    assert [(mean_rate_mbps(p), default_duration_ms(p), is_plain_constant_link(p))
            for p in parsed] == facts
