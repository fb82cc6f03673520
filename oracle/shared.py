"""The DAgger expert on a shared link: each learned flow's max-min fair window.

On a link shared by N flows sending now (n learned, k classic), a learned flow's expert
window is

    fair_window = max(ideal / N, mean packets in flight of the k classic flows)

- ideal is the single-flow oracle's window of the link (oracle/ideal.py: the BDP on a
  constant link, the best fixed window on a DropTail one, the trace window on a trace): N
  flows that each keep ideal / N in flight carry the link exactly as one flow at the ideal
  would, each an equal share. Two learned flows on a constant link: each half the BDP plus
  its share of the margin; this part has no feedback from the queue, so learned flows alone
  never build one.
- Flows through one FIFO see the same RTT, so their rates stand as their packets in flight:
  a learned flow keeping as many in flight as the average classic competitor carries as much
  as it. Against cubic on a DropTail buffer this is the window that carries the fair rate at
  the queue cubic keeps, fair rate x (min RTT + that queue's delay): cubic fills the buffer
  whatever the learned flow does, and (BDP + queue) / 2 is what cubic has in flight when
  both have the same. The same holds for bbr (whose in-flight cap keeps its queue) and copa.
- The max of the two is max-min fairness: a competitor that keeps less than its share (vegas
  backing off as the queue grows) leaves its rest to the learned flows instead of dragging
  them down with it.

Why not the brief's first form, fair rate x (min RTT + the delay of the whole queue now):
it agrees where a loss-based flow keeps the queue, but among learned flows alone every
standing queue is a fixed point of it (N windows of (BDP + q) / N keep q), so a queue from a
start above the pipe never drains, and any margin grows the queue without bound.

What the expert knows, from the simulator, at each step's start (causal where the
single-flow expert is: it knows the link's trace as that one does): the link's ideal window,
how many flows send now and how many of them are classic, and the classic flows' packets in
flight now (VecSimulator's STAT_CLASSIC_FLOWS and STAT_CLASSIC_IN_FLIGHT). A learned flow
acts on it through the growth ceiling, as a policy does (expert_action).

Measured with benchmarks/bench_shared_expert.py (60 s, 24 Mbit/s, 20 ms, DropTail of 1 and
4 BDPs, the learned flow starting 5 s after its competitor, shares after a 5 s ramp): see
that script's docstring for the table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ccgym.analysis.metrics import jain_index
from ccgym.emulators import _core
from ccgym.emulators.stepping import run_stepped
from ccgym.oracle.ideal import expert_action, ideal_window

EXTERNAL = "external"
# Shares are measured after each flow's start plus this ramp (slow start, the growth ceiling).
RAMP_MS = 5000.0


def fair_windows(ideal: np.ndarray | float, active_flows: np.ndarray | float,
                 classic_flows: np.ndarray | float,
                 classic_in_flight: np.ndarray | float) -> np.ndarray:
    """The expert's window of each learned flow (the module docstring's definition), arrays
    of one value per learned flow, in [MIN_WINDOW, MAX_WINDOW]."""
    share = np.asarray(ideal, dtype=np.float64) / np.maximum(np.asarray(active_flows), 1.0)
    matched = np.where(np.asarray(classic_flows) > 0, np.asarray(classic_in_flight), 0.0)
    return np.clip(np.maximum(share, matched), _core.MIN_WINDOW, _core.MAX_WINDOW)


@dataclass(frozen=True)
class SharedRun:
    """One run of expert-driven flows beside competitors: per flow (learned first), its
    share of the bytes delivered while all flows send (after the last start's ramp)."""

    schemes: tuple[str, ...]
    shares: tuple[float, ...]

    @property
    def jain(self) -> float:
        return jain_index(self.shares)


def simulate_shared(link_spec: str, competitors: Sequence[str], learned: int = 1,
                    duration_ms: float = 60_000.0, learned_start_ms: float = 0.0,
                    seed: int = 1) -> SharedRun:
    """Runs `learned` flows driven by the expert (through the growth ceiling) beside the
    classic competitors, all of which start at 0 and run to the end; the learned flows start
    at learned_start_ms. The reference the envs' vectorized expert is checked against: its
    inputs are read here flow by flow from the simulator."""
    flows = ([(EXTERNAL, learned_start_ms, -1.0)] * learned
             + [(scheme, 0.0, -1.0) for scheme in competitors])
    sim = _core.Simulator(link_spec, flows, seed)
    ideal = ideal_window(link_spec, seed)

    def decide(now_ms: float) -> None:
        if now_ms < learned_start_ms:
            return
        classic = [float(sim.in_flight(f)) for f in range(learned, len(flows))]
        target = fair_windows(ideal.window(now_ms), len(flows), len(classic),
                              float(np.mean(classic)) if classic else 0.0)
        for f in range(learned):
            sim.take_action(expert_action(sim.window(f), float(target),
                                          sim.growth_ceiling(f)), f)

    run_stepped([sim], [duration_ms], decide, threads=1)
    return SharedRun(tuple([EXTERNAL] * learned + list(competitors)),
                     _shares(sim.log(), len(flows), learned_start_ms + RAMP_MS, duration_ms))


def _shares(log: Mapping[str, np.ndarray], num_flows: int, from_ms: float,
            to_ms: float) -> tuple[float, ...]:
    """Each flow's share of the bytes that arrived in [from_ms, to_ms) (a simulator's log)."""
    arrival, flow = log["arrival_ms"], log["flow"]
    size = log["bytes"].astype(np.float64)
    counted = (arrival >= from_ms) & (arrival < to_ms)  # NaN (lost) compares False
    per_flow = np.bincount(flow[counted], weights=size[counted], minlength=num_flows)
    total = float(per_flow.sum())
    return tuple(float(x) / total if total > 0 else 0.0 for x in per_flow)
