"""The DAgger expert on a shared link: each learned flow's fair window.

On a link shared by N flows sending now, n learned and k classic, a learned flow's expert
window is

    fair_window = mean packets in flight of the k classic flows,   if k > 0
                = ideal / n,                                        if k = 0

- Flows through one FIFO see the same RTT, so their rates stand as their packets in flight:
  a learned flow that keeps as many in flight as the average classic competitor carries as
  much as it. Against cubic on a DropTail buffer this is the window that carries the fair
  rate at the queue cubic keeps, fair rate x (min RTT + that queue's delay): cubic fills the
  buffer whatever the learned flow does, and has (BDP + queue) / 2 in flight when both hold
  the same. Against a delay-based scheme (vegas, copa) the competitor sets the operating
  point: it grows while the queue is below its target, the learned flow with it.
- Learned flows alone: ideal is the single-flow oracle's window of the link (oracle/ideal.py:
  the BDP on a constant link, the best fixed window on others, the trace window on a trace);
  n flows of ideal / n carry the link as one flow at the ideal would, each an equal share
  (on a constant link half the BDP plus half the margin each). No feedback from the queue,
  so learned flows alone never build one.

Measured (benchmarks/bench_shared_expert.py, 60 s, seeds 1-3, and the same pairs for 30 s on
cellular-real's first three traces with a 150-packet DropTail; one expert flow beside one
competitor, either starting 5 s after the other, shares after a 5 s ramp): this rule holds
0.49-0.50 against cubic, bbr, vegas and copa on 12, 24 and 48 Mbit/s links (60, 20, 10 ms)
with DropTail buffers of 0.5-4 BDPs, two expert flows 0.500 (Jain 1.000), and 0.49-0.55 on
the traces. Rejected (measured the same way, but the second):
- ideal / N alone (the single-flow ideal split, no matching): 0.28 / 0.11 against cubic at
  1 / 4 BDPs, 0.28 against bbr: they keep a queue the split does not count.
- fair rate x (min RTT + the whole queue's delay) (issue 46's first form), by the fluid
  argument: the same as this rule where a loss-based flow keeps the queue, but among learned
  flows alone every standing queue is a fixed point (N windows of (BDP + q) / N keep q): a
  queue from a start above the pipe never drains, and any margin grows it without bound.
- max(this rule, ideal / N) or max(this rule, the pipe the classic flows leave / n) (strict
  max-min, taking what a competitor leaves unused): 0.50-0.54 on the constant links, but on
  the traces the learned flow's floor becomes queue when the rate drops, a delay-based
  competitor yields to it, and the floor takes more: 0.55-0.84 against copa, up to 0.69
  against vegas. The price of matching instead: beside a competitor that wants less than its
  share (fixed:window=20 on an 80-packet pipe) the expert keeps 20 too and the link is half
  used.
Known limit: against cubic on an infinite queue (cellular-real as configured) cubic queues
seconds, and a learned flow that starts second cannot follow within the growth ceiling (it
grows only on ACKs, to twice the flight they show): 0.001-0.003; starting first, 0.36-0.38;
three expert flows there share with Jain 0.995-1.0.

What the expert knows, from the simulator, at each step's start (causal where the
single-flow expert is: it knows the link's trace as that one does): the link's ideal
window, how many flows send now and how many of them are classic, and the classic flows'
packets in flight now (VecSimulator's STAT_CLASSIC_FLOWS and STAT_CLASSIC_IN_FLIGHT). A
learned flow acts on it through the growth ceiling, as a policy does (expert_action).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ccgym.measure.metrics import SHARE_RAMP_MS, jain_index, shares_between
from ccgym.emulators import _core
from ccgym.emulators.stepping import run_stepped
from ccgym.oracle.ideal import expert_action, ideal_window

RAMP_MS = SHARE_RAMP_MS  # shares count from the later start plus this ramp


def fair_windows(ideal: np.ndarray | float, active_flows: np.ndarray | float,
                 classic_flows: np.ndarray | float,
                 classic_in_flight: np.ndarray | float) -> np.ndarray:
    """The expert's window of each learned flow (the module docstring's definition), arrays
    of one value per learned flow, in [MIN_WINDOW, MAX_WINDOW]. active_flows counts every
    flow sending, classic ones included."""
    classic = np.asarray(classic_flows, dtype=np.float64)
    learned = np.maximum(np.asarray(active_flows, dtype=np.float64) - classic, 1.0)
    alone = np.asarray(ideal, dtype=np.float64) / learned
    window = np.where(classic > 0, np.asarray(classic_in_flight, dtype=np.float64), alone)
    return np.clip(window, _core.MIN_WINDOW, _core.MAX_WINDOW)


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
                    seed: int = 1, competitor_start_ms: float = 0.0) -> SharedRun:
    """Runs `learned` flows driven by the expert (through the growth ceiling) beside the
    classic competitors; the learned flows start at learned_start_ms, the competitors at
    competitor_start_ms, and all run to the end. Shares count from the later start plus
    RAMP_MS. The reference the envs' vectorized expert is checked against: its
    inputs are read here flow by flow from the simulator."""
    flows = ([(_core.EXTERNAL_SCHEME, learned_start_ms, -1.0)] * learned
             + [(scheme, competitor_start_ms, -1.0) for scheme in competitors])
    sim = _core.Simulator(link_spec, flows, seed)
    ideal = ideal_window(link_spec, seed)

    def decide(now_ms: float) -> None:
        if now_ms < learned_start_ms:
            return
        classic = ([float(sim.in_flight(f)) for f in range(learned, len(flows))]
                   if now_ms >= competitor_start_ms else [])
        target = fair_windows(ideal.window(now_ms), learned + len(classic), len(classic),
                              float(np.mean(classic)) if classic else 0.0)
        for f in range(learned):
            sim.take_action(expert_action(sim.window(f), float(target),
                                          sim.growth_ceiling(f)), f)

    run_stepped([sim], [duration_ms], decide, threads=1)
    shares = shares_between(sim.log(), max(learned_start_ms, competitor_start_ms) + RAMP_MS,
                            duration_ms)
    return SharedRun(tuple([_core.EXTERNAL_SCHEME] * learned + list(competitors)),
                     tuple(shares.get(f, 0.0) for f in range(len(flows))))
