"""The one loop that steps Python-decided windows: eval, validation and the oracle's search."""

from __future__ import annotations

import pytest

from ccgym.emulators import _core
from ccgym.emulators.stepping import run_stepped


def test_each_simulation_stops_at_its_own_end_while_decisions_cover_the_longest() -> None:
    ends = [25.0, 100.0, 100.0]
    sims = [_core.Simulator("rate_mbps=12,delay_ms=20", [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], seed)
            for seed in (1, 2, 3)]
    decided: list[tuple[float, list[float]]] = []

    def decide(now_ms: float) -> None:
        decided.append((now_ms, [sim.now_ms for sim in sims]))
        for sim in sims:
            sim.set_window(10.0 + now_ms / _core.STEP_MS)  # a schedule: one more packet a step

    run_stepped(sims, ends, decide, threads=1)
    step = _core.STEP_MS
    assert [now for now, _ in decided] == [k * step for k in range(int(100 / step))]
    # Every decision sees the simulations at the step's start, or at their end if earlier.
    for now, clocks in decided:
        assert clocks == [min(now, end) for end in ends]
    assert [sim.now_ms for sim in sims] == ends
    # The window schedule was applied: the longer runs sent more than the short one.
    sent = [len(sim.log()["send_ms"]) for sim in sims]
    assert sent[1] > sent[0] > 0


def test_mismatched_ends_are_refused() -> None:
    sim = _core.Simulator("rate_mbps=12,delay_ms=20", [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1)
    with pytest.raises(ValueError, match="1 simulations but 2 end times"):
        run_stepped([sim], [10.0, 20.0], lambda _: None)
