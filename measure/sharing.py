"""How flows share a link over time, from a packet log: each flow's rate in windows, and
Astraea's convergence time after each change in the number of flows.

Convergence (Astraea, Liao et al., EuroSys 2024): after a flow joins or leaves, the time until
every flow then sending stays within a tolerance (10%) of its fair share, until the next change.
Rates are by arrival, in windows of window_ms counted from the change. The fair share in a
window is the link's capacity in it over the flows sending (given the link's delivery
opportunities: on a constant link, where a flow below it leaves capacity unused), or the mean
of those flows' rates (without: on a trace, where how much the flows use of a varying link is
another question than how evenly they split what they use). A change that never settles
before the next one has no convergence time (None).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ccgym.measure.logs import as_packet_log
from ccgym.measure.metrics import BYTES_PER_OPPORTUNITY, LogLike, window_edges, window_mbps

CONVERGENCE_TOLERANCE = 0.10  # Astraea's: within 10% of the fair share
CONVERGENCE_WINDOW_MS = 500.0  # rates over windows this long (the throughput plots' default)


@dataclass(frozen=True)
class Convergence:
    """One change in the number of flows: when, how many send after it, how long until all of
    them held their fair share (None: not before the next change), and that span."""

    at_ms: float
    flows: int
    convergence_ms: float | None
    span_ms: float


def flow_rates_mbps(log: LogLike, flows: Sequence[int], edges_ms: np.ndarray) -> np.ndarray:
    """Each flow's delivered Mbit/s in each window between edges: [flow, window]."""
    log = as_packet_log(log)
    arrived = log.arrived()
    rows = []
    for flow in flows:
        mine = arrived & (log.flow == flow)
        rows.append(window_mbps(log.arrival_ms[mine], log.bytes[mine].astype(np.float64),
                                edges_ms))
    return np.array(rows).reshape(len(flows), len(edges_ms) - 1)


def changes_ms(starts_ms: Sequence[float], stops_ms: Sequence[float],
               duration_ms: float) -> list[float]:
    """The times the number of flows changes after the first start, within the run."""
    first = min(starts_ms)
    return sorted({t for t in [*starts_ms, *stops_ms] if first < t < duration_ms})


def convergence(log: LogLike, starts_ms: Sequence[float], stops_ms: Sequence[float | None],
                duration_ms: float, opportunities_ms: ArrayLike | None = None,
                window_ms: float = CONVERGENCE_WINDOW_MS,
                tolerance: float = CONVERGENCE_TOLERANCE) -> list[Convergence]:
    """Astraea's convergence after each join and leave (the module docstring), flow i of the
    log sending from starts_ms[i] to stops_ms[i] (None: to the end)."""
    if len(starts_ms) != len(stops_ms):
        raise ValueError(f"{len(starts_ms)} starts but {len(stops_ms)} stops")
    stops = [duration_ms if s is None else min(s, duration_ms) for s in stops_ms]
    at = changes_ms(starts_ms, stops, duration_ms)
    out = []
    for begin, end in zip(at, [*at[1:], duration_ms]):
        active = [f for f, (a, b) in enumerate(zip(starts_ms, stops)) if a <= begin < b]
        edges = window_edges(end, window_ms, begin)
        rates = flow_rates_mbps(log, active, edges)
        if opportunities_ms is None:
            fair = rates.mean(axis=0)
        else:
            times = np.asarray(opportunities_ms, dtype=np.float64)
            capacity = window_mbps(times, np.full(times.shape, float(BYTES_PER_OPPORTUNITY)),
                                   edges)
            fair = capacity / max(len(active), 1)
        settled = np.all(np.abs(rates - fair) <= tolerance * fair, axis=0)
        unsettled = np.flatnonzero(~settled)
        first = int(unsettled[-1]) + 1 if unsettled.size else 0
        time = float(edges[first] - begin) if first < len(settled) else None
        out.append(Convergence(begin, len(active), time, end - begin))
    return out
