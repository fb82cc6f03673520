"""The oracle's ideal window against numbers worked out by hand and against the simulator."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ccgym.analysis.evaluate import run_scheme
from ccgym.emulators import _core
from ccgym.emulators.links import Link
from ccgym.oracle import cache
from ccgym.oracle import ideal as oracle
from ccgym.oracle.ideal import (ConstantIdealWindow, TraceIdealWindow, bdp_packets,
                                best_fixed_window, expert_action, fixed_window_scores,
                                ideal_window, summarize_link)

# 12 Mbit/s is one 1500-byte packet per ms; a 40 ms min RTT holds 40 of them.
LINK_12 = "rate_mbps=12,delay_ms=20"
BDP_12 = 40.0
SHORT_MS = 4000.0


def write_trace(path: Path, stamps) -> str:
    path.write_text("".join(f"{int(t)}\n" for t in stamps))
    return str(path)


def square_wave_trace(path: Path) -> str:
    """1 s at 12 Mbit/s (a line every ms), then 1 s at 3 Mbit/s (every 4 ms): period 2 s."""
    fast = np.arange(1, 1001)
    slow = np.arange(1004, 2001, 4)
    return write_trace(path, np.concatenate([fast, slow]))


@pytest.mark.parametrize("link", [LINK_12, LINK_12 + ",ack_rate_mbps=12"])
def test_constant_infinite_queue_link_ideal_is_the_bdp(link):
    ideal = ideal_window(link)
    assert isinstance(ideal, ConstantIdealWindow) and ideal.method == "bdp"
    assert ideal.window(0.0) == pytest.approx(BDP_12, abs=1.0)
    assert ideal.window(12_345.0) == ideal.window(0.0)


def test_search_on_a_constant_link_lands_next_to_the_bdp():
    # The BDP rule is what the search would find: one more packet covers the 1 ms of
    # serialization the min RTT leaves out.
    found = best_fixed_window(LINK_12, duration_ms=SHORT_MS)
    assert abs(found.window - BDP_12) <= 1.0
    assert found.score >= max(fixed_window_scores(LINK_12, [20, 80], duration_ms=SHORT_MS))


@pytest.mark.parametrize("link", [
    "rate_mbps=12,delay_ms=20,queue=droptail:packets=8",
    "rate_mbps=12,delay_ms=20,loss=0.05",
    "rate_mbps=12,delivery=poisson,delay_ms=20",
    "rate_mbps=12,delay_ms=20,ack_burst_packets=10,ack_burst_period_ms=200",
])
def test_search_beats_or_ties_the_bdp_where_the_bdp_is_not_ideal(link):
    ideal = ideal_window(link, duration_ms=SHORT_MS)
    assert isinstance(ideal, ConstantIdealWindow) and ideal.method == "search"
    [bdp_score] = fixed_window_scores(link, [BDP_12], duration_ms=SHORT_MS)
    [ideal_score] = fixed_window_scores(link, [ideal.value], duration_ms=SHORT_MS)
    assert ideal_score == pytest.approx(ideal.score)
    assert ideal.score >= bdp_score


def test_search_with_candidates_scores_exactly_those():
    found = best_fixed_window(LINK_12, duration_ms=SHORT_MS, candidates=[5, 40, 400])
    assert found.window == 40
    assert found.score == pytest.approx(fixed_window_scores(LINK_12, [40], duration_ms=SHORT_MS)[0])


@pytest.mark.parametrize("window", [1.0, 10.0, 35.0, 40.0, 47.0, 100.0, 2000.0])
def test_expert_action_moves_toward_the_ideal(window):
    target = 40.0
    action = expert_action(window, target)
    after = _core.apply_action(window, action)
    assert abs(after - target) <= abs(window - target)
    # +-10 is strictly closer when the gap exceeds 5; at exactly 5 it ties with +0,
    # and ties go to the smaller change.
    if abs(window - target) > 5:
        assert abs(after - target) < abs(window - target)
    assert all(abs(after - target) <= abs(_core.apply_action(window, a) - target)
               for a in range(_core.NUM_ACTIONS))


def test_trace_ideal_window_counts_the_next_min_rtt_of_a_hand_made_trace(tmp_path):
    # Lines 1 2 3 3 5 10: period 10 ms, so opportunities at 1 2 3 3 5 10 11 12 13 13 15
    # 20 ...; a 2 ms one-way delay looks 4 ms ahead; margin 2 doubles the count.
    trace = write_trace(tmp_path / "tiny.trace", [1, 2, 3, 3, 5, 10])
    ideal = TraceIdealWindow.for_link(f"trace={trace},delay_ms=2", margin=2.0)
    expected = {
        0: 2 * 4,    # [0, 4): 1 2 3 3
        2: 2 * 4,    # [2, 6): 2 3 3 5
        4: 2 * 1,    # [4, 8): 5
        6: 1,        # [6, 10): nothing; the window never falls below one packet
        8: 2 * 2,    # [8, 12): 10 11
        13: 2 * 3,   # [13, 17): 13 13 15
        23: 2 * 3,   # the next period: 23 23 25
        1003: 2 * 3,
    }
    for now, window in expected.items():
        assert ideal.window(now) == window, now


def test_trace_ideal_window_with_lookback_counts_part_of_the_rtt_behind(tmp_path):
    # The same trace and 4 ms RTT; lookback 0.5 counts [now - 2, now + 2), lookback 1
    # [now - 4, now), and an RTT that would start before 0 starts at 0.
    trace = write_trace(tmp_path / "tiny.trace", [1, 2, 3, 3, 5, 10])
    half = TraceIdealWindow.for_link(f"trace={trace},delay_ms=2", lookback=0.5)
    assert half.window(4) == 4       # [2, 6): 2 3 3 5
    assert half.window(12) == 5      # [10, 14): 10 11 12 13 13
    behind = TraceIdealWindow.for_link(f"trace={trace},delay_ms=2", lookback=1.0)
    assert behind.window(6) == 4     # [2, 6): 2 3 3 5
    assert behind.window(9) == 1     # [5, 9): 5
    assert behind.window(1) == 4     # [0, 4): 1 2 3 3
    # Beyond 1 the count lags now: 1.5 counts [now - 6, now - 2), what an ACK coming back
    # over the 2 ms one-way delay has told a sender of.
    lagged = TraceIdealWindow.for_link(f"trace={trace},delay_ms=2", lookback=1.5)
    assert lagged.window(8) == 4     # [2, 6): 2 3 3 5
    assert lagged.window(11) == 1    # [5, 9): 5
    with pytest.raises(ValueError, match="lookback"):
        TraceIdealWindow.for_link(f"trace={trace},delay_ms=2", lookback=2.5)


def test_trace_that_runs_once_offers_nothing_after_its_end(tmp_path):
    trace = write_trace(tmp_path / "tiny.trace", [1, 2, 3, 3, 5, 10])
    ideal = TraceIdealWindow.for_link(f"trace={trace},delay_ms=2,once=1", margin=2.0)
    assert ideal.window(8) == 2 * 1   # [8, 12): only the line at 10
    assert ideal.window(13) == 1


def test_trace_oracle_follows_the_rate_and_beats_the_bdp(tmp_path):
    spec = f"trace={square_wave_trace(tmp_path / 'square.trace')},delay_ms=20"
    ideal = ideal_window(spec, duration_ms=SHORT_MS)
    assert isinstance(ideal, TraceIdealWindow)
    # 40 opportunities per 40 ms in the fast second, 10 in the slow one.
    assert ideal.window(500) == pytest.approx(4 * ideal.window(1500))
    assert ideal.window(500) == pytest.approx(ideal.margin * 40)
    summary = summarize_link("square", spec, duration_ms=SHORT_MS)
    assert summary.bdp_packets == pytest.approx(bdp_packets(7.5, 20))
    assert summary.margin == ideal.margin and summary.ideal_window is None
    assert summary.score > summary.bdp_score


def test_trace_oracle_takes_the_better_of_the_counted_and_the_steady_window(tmp_path):
    # Exponential gaps of 1.2 ms (10 Mbit/s): the count of the RTT ahead is mostly noise,
    # and a steady window beats it; the oracle keeps whichever of its searches scored best.
    gaps = np.random.default_rng(1).exponential(1.2, size=4000)
    stamps = np.floor(np.cumsum(gaps)).astype(int)
    spec = f"trace={write_trace(tmp_path / 'poisson.trace', [*stamps[stamps < 4000], 4000])}," \
           "delay_ms=20"
    steady = oracle.best_fixed_window(spec, duration_ms=SHORT_MS)
    steady_window, steady_score = steady.window, steady.score
    [ahead_score] = oracle.schedule_scores(
        spec, [TraceIdealWindow.for_link(spec).window], duration_ms=SHORT_MS)
    assert steady_score > ahead_score
    counted_score = oracle.best_trace_window(spec, duration_ms=SHORT_MS).score
    ideal = ideal_window(spec, duration_ms=SHORT_MS)
    assert ideal.score == max(steady_score, counted_score)
    if steady_score > counted_score:
        assert isinstance(ideal, ConstantIdealWindow) and ideal.value == steady_window
    else:
        assert isinstance(ideal, TraceIdealWindow)


def test_a_schedule_within_the_rules_shrinks_at_once_and_grows_only_on_acks():
    # 12 Mbit/s, 20 ms: a pipe of some 40 packets. Five packets are one halving of the
    # initial window away, so the expert's actions reach them in the first step. 400 are
    # not: set at will, they are all sent at once and queue for a third of a second; through
    # the actions, the window waits for the first ACK and then grows at most to twice the
    # flight measured (so within 400 ms it is still far from 400).
    spec = "rate_mbps=12,delay_ms=20"
    small, large = (lambda now_ms: 5.0), (lambda now_ms: 400.0)
    at_will = oracle.schedule_scores(spec, [small, large], duration_ms=400)
    within = oracle.schedule_scores(spec, [small, large], duration_ms=400, within_rules=True)
    assert within[0] == at_will[0]
    assert within[1] > at_will[1] + 0.5


def test_an_oracle_held_to_the_rtt_behind_now_counts_only_the_past(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path))
    spec = f"trace={square_wave_trace(tmp_path / 'square.trace')},delay_ms=20"
    behind = ideal_window(spec, duration_ms=SHORT_MS, lookbacks=(1.0,))
    assert isinstance(behind, TraceIdealWindow) and behind.lookback == 1.0
    # At 1.01 s the RTT behind, [0.97, 1.01) s, held 31 fast lines and 2 slow ones.
    assert behind.window(1010) == pytest.approx(behind.margin * (31 + 2))
    # Each choice of lookbacks has its own cache entry.
    searched = ideal_window(spec, duration_ms=SHORT_MS)
    assert searched.lookback != 1.0
    assert len(list((tmp_path / "oracle").glob("trace-*.json"))) == 2
    with pytest.raises(ValueError, match="lookbacks"):
        ideal_window(spec, duration_ms=SHORT_MS, lookbacks=(1.5,))


def test_oracle_scheme_in_eval_scores_what_the_search_reported(tmp_path):
    spec = f"trace={square_wave_trace(tmp_path / 'square.trace')},delay_ms=20"
    link = Link(name="square", group="test", spec=spec, source="test")
    # eval runs a trace link once: the search's default duration is the same.
    ideal = ideal_window(spec)
    [run] = run_scheme(link, "oracle", seeds=[1], duration_ms=oracle.default_duration_ms(spec))
    assert run.metrics.score == pytest.approx(ideal.score, abs=1e-9)


def test_searches_are_cached_in_memory_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path))
    link = "rate_mbps=6,delay_ms=30,queue=droptail:packets=4"
    first = ideal_window(link, duration_ms=2000)
    assert ideal_window(link, duration_ms=2000) is first
    files = list((tmp_path / "oracle").glob("fixed-*.json"))
    assert len(files) == 1
    oracle._MEMORY.clear()
    again = ideal_window(link, duration_ms=2000)
    assert again is not first and again == first


def test_a_change_to_the_oracle_code_misses_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path))
    link = "rate_mbps=6,delay_ms=30,queue=droptail:packets=4"
    oracle._MEMORY.clear()  # earlier tests' searches of the same link
    ideal_window(link, duration_ms=2000)
    assert len(list((tmp_path / "oracle").glob("fixed-*.json"))) == 1
    # The same search after an edit to the code it depends on (here: one more file of it).
    edited = tmp_path / "edited.py"
    edited.write_text("# a change\n")
    files = cache.code_files()
    monkeypatch.setattr(cache, "code_files", lambda: [*files, edited])
    cache.code_digest.cache_clear()
    oracle._MEMORY.clear()
    try:
        ideal_window(link, duration_ms=2000)
    finally:
        cache.code_digest.cache_clear()
    assert len(list((tmp_path / "oracle").glob("fixed-*.json"))) == 2  # searched again


def test_the_code_digest_covers_every_module_a_search_uses() -> None:
    # A module the search reaches but the digest missed would let a full cache keep windows
    # that an empty one, under the edited code, would not choose: two trainings would differ.
    from ccgym.measure import logs, metrics
    from ccgym.emulators import link_facts, stepping

    files = cache.code_files()
    for module in (oracle, cache, metrics, logs, link_facts, stepping, _core):
        assert Path(module.__file__) in files, module.__name__


def test_the_code_digest_does_not_depend_on_what_else_was_imported() -> None:
    # A Ray worker imports the environments and torch before its first search, the CLI of
    # `ccgym oracle` does not: both must find each other's cache entries.
    def digest(first_imports: str) -> str:
        script = (f"{first_imports}\nfrom ccgym.oracle import cache, ideal\n"
                  "print(cache.code_digest())")
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True).stdout.strip()

    alone = digest("")
    assert alone == cache.code_digest()
    assert digest("import torch, ccgym.envs.vector, ccgym.train.dagger") == alone
