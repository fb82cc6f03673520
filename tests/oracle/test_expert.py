"""The expert's window: the oracle's, or its count averaged over a few RTTs, by hand."""

from pathlib import Path

import numpy as np
import pytest

from ccgym.envs.link_env import EnvConfig
from ccgym.envs.vector import VecLinkEnv
from ccgym.oracle.expert import SmoothedTraceWindow, expert_window
from ccgym.oracle.ideal import ConstantIdealWindow, TraceIdealWindow


def tiny_trace(tmp_path: Path) -> str:
    # Period 10 ms: opportunities at 1 2 3 3 5 10 11 12 13 13 15 20 ...
    path = tmp_path / "tiny.trace"
    path.write_text("".join(f"{t}\n" for t in [1, 2, 3, 3, 5, 10]))
    return str(path)


def test_span_3_averages_the_counts_of_the_rtts_before_during_and_after(tmp_path):
    # A 2 ms one-way delay: the oracle counts [now, now + 4); span 3 also counts the RTT
    # before and the one after, and margin 2 doubles the mean.
    ideal = TraceIdealWindow.for_link(f"trace={tiny_trace(tmp_path)},delay_ms=2", margin=2.0)
    smoothed = SmoothedTraceWindow(ideal, 3)
    # [2, 6): 2 3 3 5; [6, 10): none; [10, 14): 10 11 12 13 13
    assert smoothed.window(6) == pytest.approx(2 * (4 + 0 + 5) / 3)
    # [0, 4): 1 2 3 3 (from -4, clipped to 0, as the oracle does); [4, 8): 5; [8, 12): 10 11
    assert smoothed.window(4) == pytest.approx(2 * (4 + 1 + 2) / 3)
    assert ideal.window(6) == 1  # the oracle itself sees the empty RTT (one packet at least)


def test_span_1_and_constant_ideals_are_the_oracles_own(tmp_path):
    ideal = TraceIdealWindow.for_link(f"trace={tiny_trace(tmp_path)},delay_ms=2")
    assert expert_window(ideal, 1) is ideal
    constant = ConstantIdealWindow(40.0, "bdp")
    assert expert_window(constant, 5) is constant
    assert isinstance(expert_window(ideal, 3), SmoothedTraceWindow)
    with pytest.raises(ValueError, match="span"):
        SmoothedTraceWindow(ideal, 0)


def test_a_smoothed_expert_moves_less_from_step_to_step(tmp_path):
    # A noisy trace: 6 Mbit/s on average, deliveries at random instants. The smoothed
    # expert keeps the mean window and jumps less between 10 ms steps.
    rng = np.random.default_rng(1)
    stamps = np.sort(rng.integers(1, 4000, size=2000))
    path = tmp_path / "noisy.trace"
    path.write_text("".join(f"{t}\n" for t in stamps))
    windows = {}
    for span in (1, 5):
        env = VecLinkEnv(1, EnvConfig(links=[f"trace={path},delay_ms=20"], episode_ms=2000,
                                      seed=1, expert_span=span), 1)
        env.reset(seed=1)
        seen = []
        for _ in range(200):
            _, _, _, _, infos = env.step(np.array([3]))
            seen.append(infos["ideal_window"][0])
        windows[span] = np.array(seen)
        env.close()
    assert windows[5].mean() == pytest.approx(windows[1].mean(), rel=0.15)
    assert np.abs(np.diff(windows[5])).mean() < 0.5 * np.abs(np.diff(windows[1])).mean()


@pytest.mark.parametrize("span", [0, 2.5, True])
def test_env_config_refuses_a_span_that_is_not_a_whole_number_of_rtts(span):
    with pytest.raises(ValueError, match="expert_span"):
        EnvConfig(expert_span=span)
