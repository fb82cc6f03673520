"""`ccgym eval --schemes lstm:RUN_DIR`: the policy drives real simulated flows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ccgym.analysis.evaluate import run_scheme
from ccgym.emulators.stepping import Slot
from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.lstm_scheme import LstmScheme

LINK = "rate_mbps=12,delay_ms=20"


@pytest.fixture
def run_dir(tmp_path):
    torch.manual_seed(3)
    LstmPolicy(hidden_size=8).save(tmp_path / "policy.pt")
    return tmp_path


def test_hold_action_keeps_the_window() -> None:
    assert _core.apply_action(37.0, _core.HOLD_ACTION) == 37.0


def test_scheme_runs_in_eval_from_a_run_folder(run_dir) -> None:
    [run] = run_scheme(link_from_spec(LINK), f"lstm:{run_dir}", [1], duration_ms=2000)
    assert run.metrics.throughput_mbps > 0
    assert len(run.log["seq"]) > 0


def test_scheme_applies_the_policys_actions(run_dir) -> None:
    """Window after each decision == apply_policy_action(window before, the policy's action
    on the observation it was shown, the growth ceiling of the pipe measured), for two flows
    in one call."""
    policy = LstmPolicy.load(run_dir / "policy.pt")
    sims = [_core.Simulator(LINK, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], s) for s in (1, 2)]
    link = link_from_spec(LINK)
    slots = [Slot(sim, 0, link, s) for sim, s in zip(sims, (1, 2))]
    scheme = LstmScheme(str(run_dir / "policy.pt"))
    scheme.reset(slots)
    state, previous = None, np.full(2, _core.HOLD_ACTION)
    for k in range(100):
        obs = np.stack([s.sim.observation(int(p)) for s, p in zip(slots, previous)])
        before = [s.sim.window() for s in slots]
        ceilings = [s.sim.growth_ceiling() for s in slots]
        expected, state = policy.act(obs, state, np.full(2, k == 0))
        scheme.decide(slots)
        for i, s in enumerate(slots):
            assert s.sim.window() == _core.apply_policy_action(before[i], int(expected[i]),
                                                               ceilings[i])
        np.testing.assert_array_equal(scheme.previous_actions, expected)
        previous = expected
        _core.run_all_until(sims, (k + 1) * _core.STEP_MS, 1)


def test_missing_policy_is_a_user_error(tmp_path) -> None:
    with pytest.raises(UserError, match="no policy.pt"):
        LstmScheme(str(tmp_path))
    with pytest.raises(UserError, match="no such run folder"):
        LstmScheme(str(tmp_path / "nope"))


def test_a_policy_loaded_for_scoring_runs_on_one_torch_thread(run_dir) -> None:
    """Every `lstm:` scheme (eval, suite, the benchmarks) scores on one inference thread: with
    torch's pool two scorers side by side on 2 cores ran 44 minutes unfinished against 86 s."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        LstmScheme(str(run_dir))
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
