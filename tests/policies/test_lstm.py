"""LstmPolicy: batched greedy steps, state resets, sequences versus steps, files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ccgym.emulators import _core
from ccgym.policies.lstm import LstmPolicy, action_log_changes, ensemble


def simulated_observations(steps: int = 200, window: float = 30.0) -> np.ndarray:
    """Real observations: a fixed external window on a 12 Mbit/s link."""
    sim = _core.Simulator("rate_mbps=12,delay_ms=20", [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1, False)
    sim.set_window(window)
    out = []
    for k in range(steps):
        out.append(sim.observation(2))
        sim.run_until((k + 1) * _core.STEP_MS)
    return np.stack(out).astype(np.float32)


@pytest.fixture
def policy() -> LstmPolicy:
    torch.manual_seed(0)
    p = LstmPolicy(hidden_size=16)
    # Larger weights than the default init, so that actions differ between inputs and states.
    with torch.no_grad():
        for param in p.parameters():
            param.mul_(4.0)
    return p.eval()


def test_act_shapes_and_range(policy: LstmPolicy) -> None:
    obs = np.random.default_rng(0).random((7, _core.OBS_DIM), dtype=np.float32)
    actions, (h, c) = policy.act(obs, None, np.ones(7, dtype=bool))
    assert actions.shape == (7,) and actions.dtype == np.int64
    assert ((actions >= 0) & (actions < _core.NUM_ACTIONS)).all()
    assert h.shape == c.shape == (1, 7, 16)


def test_act_batches_environments_independently(policy: LstmPolicy) -> None:
    rng = np.random.default_rng(1)
    obs = rng.random((30, 3, _core.OBS_DIM), dtype=np.float32) * 3
    state = policy.initial_state(3)
    singles = [policy.initial_state(1) for _ in range(3)]
    starts = np.zeros(3, dtype=bool)
    for t in range(30):
        batched, state = policy.act(obs[t], state, starts)
        for i in range(3):
            alone, singles[i] = policy.act(obs[t, i:i + 1], singles[i], starts[:1])
            assert alone[0] == batched[i]
    for i in range(3):
        torch.testing.assert_close(state[0][:, i], singles[i][0][:, 0])


def test_episode_start_resets_only_that_environment(policy: LstmPolicy) -> None:
    obs = simulated_observations(50)
    pair = np.stack([obs, obs[::-1]], axis=1)  # two environments, different histories
    state = policy.initial_state(2)
    for t in range(40):
        _, state = policy.act(pair[t], state, np.zeros(2, dtype=bool))
    before = state[0].clone()
    _, after = policy.act(pair[40], state, np.array([True, False]))
    _, fresh = policy.act(pair[40, :1], None)
    _, carried = policy.act(pair[40, 1:], (state[0][:, 1:], state[1][:, 1:]))
    torch.testing.assert_close(after[0][:, 0], fresh[0][:, 0])
    torch.testing.assert_close(after[0][:, 1], carried[0][:, 0])
    assert not torch.allclose(before[:, 0], torch.zeros_like(before[:, 0]))
    # The caller's state is not modified in place.
    torch.testing.assert_close(state[0], before)


def test_forward_on_a_sequence_equals_stepping(policy: LstmPolicy) -> None:
    obs = simulated_observations(120)
    logits, _ = policy(torch.from_numpy(obs).unsqueeze(0))
    stepped, state = [], None
    for t in range(len(obs)):
        action, state = policy.act(obs[t:t + 1], state)
        stepped.append(action[0])
    np.testing.assert_array_equal(logits[0].argmax(-1).numpy(), np.array(stepped))


def test_save_load_round_trip_gives_identical_actions(policy: LstmPolicy, tmp_path) -> None:
    path = tmp_path / "policy.pt"
    policy.save(path)
    loaded = LstmPolicy.load(path)
    assert (loaded.hidden_size, loaded.obs_dim, loaded.num_actions) == (
        16, _core.OBS_DIM, _core.NUM_ACTIONS)
    obs = simulated_observations(200)
    a_state = b_state = None
    for t in range(len(obs)):
        a, a_state = policy.act(obs[t:t + 1], a_state)
        b, b_state = loaded.act(obs[t:t + 1], b_state)
        assert a[0] == b[0]
    torch.testing.assert_close(a_state[1], b_state[1], rtol=0, atol=0)
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left nothing behind


def test_load_rejects_other_files(tmp_path) -> None:
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, path)
    with pytest.raises(ValueError, match="not a ccgym LSTM policy"):
        LstmPolicy.load(path)


def test_load_rejects_a_policy_trained_on_another_observation(policy: LstmPolicy,
                                                               tmp_path) -> None:
    data = policy.to_file_dict()
    del data["observation_version"]  # as files written before the version was recorded
    path = tmp_path / "old.pt"
    torch.save(data, path)
    with pytest.raises(ValueError, match="trained on observation version 1"):
        LstmPolicy.load(path)


def test_act_rejects_wrong_shapes(policy: LstmPolicy) -> None:
    with pytest.raises(ValueError, match="obs must be"):
        policy.act(np.zeros((2, _core.OBS_DIM + 1), np.float32), None)
    with pytest.raises(ValueError, match="state must be"):
        policy.act(np.zeros((2, _core.OBS_DIM), np.float32), policy.initial_state(3))


# ---------------------------------------------------------------- the log_change head

def observation_with_window(window: float) -> np.ndarray:
    """A real observation whose window feature reads `window` (the rest from a flow)."""
    sim = _core.Simulator("rate_mbps=12,delay_ms=20", [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1, False)
    sim.set_window(window)
    sim.run_until(200.0)
    return np.asarray(sim.observation(_core.HOLD_ACTION), dtype=np.float32)


@pytest.mark.parametrize("window", [1.0, 1.5, 7.0, 20.0, 66.0, 900.0, 4990.0])
def test_action_log_changes_read_the_window_back_as_apply_action_moves_it(window: float) -> None:
    obs = torch.from_numpy(observation_with_window(window))
    changes = action_log_changes(obs).numpy()
    expected = [np.log(_core.apply_action(window, a) / window) for a in range(_core.NUM_ACTIONS)]
    np.testing.assert_allclose(changes, expected, atol=1e-4)


@pytest.fixture
def change_policy() -> LstmPolicy:
    torch.manual_seed(1)
    return LstmPolicy(hidden_size=16, head="log_change").eval()


def test_log_change_head_takes_the_action_closest_to_its_change(
        change_policy: LstmPolicy) -> None:
    obs = torch.from_numpy(np.stack([observation_with_window(w) for w in (3.0, 40.0, 400.0)]))
    for change in (-0.8, -0.1, -0.01, 0.0, 0.02, 0.2, 0.9):
        with torch.no_grad():
            change_policy.head.weight.zero_()
            change_policy.head.bias.fill_(change)
        actions, _ = change_policy.act(obs.numpy(), None)
        for row, action in zip(obs, actions):
            misses = np.abs(action_log_changes(row).numpy() - change)
            assert misses[action] == pytest.approx(misses.min(), abs=1e-6)
    # A large enough change takes the doubling, a small one holds.
    with torch.no_grad():
        change_policy.head.bias.fill_(0.69)
    assert change_policy.act(obs.numpy(), None)[0][2] == _core.NUM_ACTIONS - 1
    with torch.no_grad():
        change_policy.head.bias.fill_(0.0)
    assert change_policy.act(obs.numpy(), None)[0][2] == _core.HOLD_ACTION


def test_log_change_head_survives_its_file(change_policy: LstmPolicy, tmp_path) -> None:
    path = tmp_path / "policy.pt"
    change_policy.save(path)
    loaded = LstmPolicy.load(path)
    assert loaded.head_kind == "log_change" and loaded.head.out_features == 1
    obs = simulated_observations(50)
    assert np.array_equal(change_policy.act(obs, None)[0], loaded.act(obs, None)[0])


def test_unknown_heads_are_refused(change_policy: LstmPolicy) -> None:
    with pytest.raises(ValueError, match="unknown head"):
        LstmPolicy(hidden_size=4, head="gaussian")
    data = change_policy.to_file_dict()
    data["head"] = "gaussian"
    with pytest.raises(ValueError, match="damaged"):
        LstmPolicy.from_file_dict(data)


@pytest.mark.parametrize("head", ["log_change", "classes"])
def test_an_ensemble_acts_on_the_mean_of_its_members_outputs(head: str) -> None:
    torch.manual_seed(1)
    members = [LstmPolicy(hidden_size=h, head=head).eval() for h in (8, 16, 8)]
    with torch.no_grad():
        for m in members:
            for param in m.parameters():
                param.mul_(3.0)
    merged = ensemble(members)
    assert merged.hidden_size == 32 and merged.head_kind == head
    obs = torch.from_numpy(simulated_observations(120)).unsqueeze(0)
    with torch.no_grad():
        outputs = [m.head(m.lstm(obs)[0]) for m in members]
        mean = sum(outputs) / len(outputs)
        torch.testing.assert_close(merged.head(merged.lstm(obs)[0]), mean, atol=1e-5, rtol=0)
        # Not any one member's: the mean differs from each by more than the tolerance.
        assert all((out - mean).abs().max() > 1e-3 for out in outputs)


def test_an_ensemble_needs_members_with_one_head() -> None:
    with pytest.raises(ValueError, match="different heads"):
        ensemble([LstmPolicy(hidden_size=8, head="classes"),
                  LstmPolicy(hidden_size=8, head="log_change")])
    with pytest.raises(ValueError, match="at least one"):
        ensemble([])
