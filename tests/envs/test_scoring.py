"""envs/scoring.py: a learned policy in several staggered flows of one run."""

from __future__ import annotations

import numpy as np
import torch

from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.stepping import Slot, run_stepped
from ccgym.envs.scoring import simulate_scheme
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.lstm_scheme import LstmScheme

SPEC = "rate_mbps=12,delay_ms=20,queue=droptail:packets=60"
START_MS = 3000.0
END_MS = 8000.0


def test_a_later_flow_starts_its_policy_with_its_flow(tmp_path):
    """Flow 1 starts at START_MS: its policy's episode begins then, from the initial state,
    exactly as a scheme reset for that flow alone and first asked at START_MS would run it."""
    torch.manual_seed(2)  # weights that move the window on an idle observation
    policy = LstmPolicy(hidden_size=8, head="log_change").eval()
    path = tmp_path / "policy.pt"
    policy.save(path)
    link = link_from_spec(SPEC)
    [run] = simulate_scheme(link, f"lstm:{path}", [5], END_MS, flows=2, interval_ms=START_MS)

    sim = _core.Simulator(link.spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0),
                                      (_core.EXTERNAL_SCHEME, START_MS, -1.0)], 5)
    cohorts = []
    for flow, start in ((0, 0.0), (1, START_MS)):
        scheme = LstmScheme.from_policy(LstmPolicy.load(path))
        slots = [Slot(sim, flow, link, 5)]
        scheme.reset(slots)
        cohorts.append((start, scheme, slots))

    def decide(now_ms: float) -> None:
        for start, scheme, slots in cohorts:
            if now_ms >= start:
                scheme.decide(slots)

    run_stepped([sim], [END_MS], decide)
    expected = sim.log()
    assert run.metrics.flows[1]["throughput_mbps"] > 0
    for key in expected:
        np.testing.assert_array_equal(run.log[key], expected[key], err_msg=key)
