"""The oracle as a scheme for `ccgym eval --schemes oracle`: each step, every flow's window
is set to the link's ideal window directly, not through the policy's actions (_core.ACTIONS).

Flows sharing one simulation split the ideal window equally: the ideal is the link's,
not one flow's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ccgym.emulators.stepping import Slot
from ccgym.errors import UserError
from ccgym.oracle.ideal import IdealWindow, ideal_window


class OracleScheme:
    """SteppedScheme: the ideal window of each slot's link, built per (link, seed) at reset."""

    def __init__(self, argument: str = "") -> None:
        if argument:
            raise UserError(f"scheme 'oracle' takes no argument, got 'oracle:{argument}'")
        self._ideals: list[IdealWindow] = []
        self._shares: list[int] = []

    def reset(self, slots: Sequence[Slot]) -> None:
        self._ideals = [ideal_window(slot.link.spec, slot.seed, slot.duration_ms)
                        for slot in slots]
        flows_per_sim = Counter(id(slot.sim) for slot in slots)
        self._shares = [flows_per_sim[id(slot.sim)] for slot in slots]

    def decide(self, slots: Sequence[Slot]) -> None:
        for slot, ideal, share in zip(slots, self._ideals, self._shares):
            slot.sim.set_window(ideal.window(slot.sim.now_ms) / share, slot.flow)
