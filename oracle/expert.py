"""The expert a policy imitates: the oracle's window, or on trace links a smoothed one.

On a trace link the oracle counts the delivery opportunities of one RTT around now
(oracle.ideal.TraceIdealWindow). Part of that count is noise no sender can foresee (on a
Poisson trace, most of it), and imitating it asks the policy for windows that jump from
step to step. A span of k RTTs averages the counts of k consecutive RTTs centred on the
oracle's own, keeping the trace's trend (what an ACK stream can reveal) and its margin.
"""

from __future__ import annotations

import numpy as np

from ccgym.emulators import _core
from ccgym.oracle.ideal import IdealWindow, TraceIdealWindow


class SmoothedTraceWindow:
    """margin x the mean of the oracle's counts of `span` consecutive RTTs, centred on its
    own RTT; span 1 is the oracle's window."""

    def __init__(self, ideal: TraceIdealWindow, span: int) -> None:
        if span < 1:
            raise ValueError(f"span must be at least 1, got {span}")
        self.ideal = ideal
        self.span = int(span)
        # Whole RTTs, so that each count is one the oracle itself makes (folded into the
        # trace's period and clipped at 0 as it does).
        self._offsets_ms = (np.arange(self.span) - (self.span - 1) / 2) * ideal.horizon_ms

    def windows(self, now_ms: np.ndarray | float) -> np.ndarray:
        now = np.asarray(now_ms, dtype=np.float64)
        counted = sum(self.ideal.opportunities_counted(now + offset)
                      for offset in self._offsets_ms) / self.span
        return np.clip(self.ideal.margin * counted, _core.MIN_WINDOW, _core.MAX_WINDOW)

    def window(self, now_ms: float) -> float:
        return float(self.windows(now_ms))

    def __repr__(self) -> str:
        return f"SmoothedTraceWindow({self.ideal!r}, span={self.span})"


def expert_window(ideal: IdealWindow, span: int) -> IdealWindow:
    """The expert's window: the oracle's, smoothed over `span` RTTs on trace links."""
    if span > 1 and isinstance(ideal, TraceIdealWindow):
        return SmoothedTraceWindow(ideal, span)
    return ideal
