"""Stepping simulations whose windows are decided in Python: one loop for every such caller.

`ccgym eval`'s stepped schemes (the oracle, learned policies), a trainer's validation and the
oracle's search over window schedules all run this loop, so that they score the same run of a
link the same way. Every STEP_MS the caller decides (sets the external flows' windows for the
step ahead), then every simulation advances one step, none past its own end.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ccgym.emulators import _core
from ccgym.emulators.links import Link


@dataclass
class Slot:
    """One external flow of one simulation, as a Python-decided scheme sees it."""

    sim: Any  # ccgym.emulators._core.Simulator
    flow: int
    link: Link
    seed: int
    # The run's length, ms; None: the link's default (its trace once, else 30 s). A scheme
    # that plans over the run (the oracle) plans over this one.
    duration_ms: float | None = None


class SteppedScheme(Protocol):
    """A scheme whose window is decided in Python every STEP_MS."""

    def reset(self, slots: Sequence[Slot]) -> None: ...

    def decide(self, slots: Sequence[Slot]) -> None:
        """Sets each slot's window (slot.sim.set_window(w, slot.flow))."""


def run_stepped(sims: Sequence[Any], ends_ms: Sequence[float], decide: Callable[[float], None],
                threads: int = 0) -> None:
    """Advances each simulation (a _core.Simulator) to its end, one STEP_MS at a time.

    decide(now_ms) is called before each step with the step's start, for all simulations at
    once (a policy's inference is one batch), also for those already at their end: a
    recurrent policy keeps one state per simulation. A simulation past its end is not
    advanced (its metrics stop there). threads: the simulator's threads per call (0: one per
    core); a step is microseconds of work, so many small simulations run faster on one.
    """
    if len(sims) != len(ends_ms):
        raise ValueError(f"{len(sims)} simulations but {len(ends_ms)} end times")
    by_end: dict[float, list[Any]] = {}  # simulations that stop at the same time
    for sim, end_ms in zip(sims, ends_ms):
        by_end.setdefault(float(end_ms), []).append(sim)
    for k in range(math.ceil(max(by_end, default=0.0) / _core.STEP_MS)):
        start, until = k * _core.STEP_MS, (k + 1) * _core.STEP_MS
        decide(start)
        for end_ms, group in by_end.items():
            if end_ms > start:
                _core.run_all_until(group, min(end_ms, until), threads)
