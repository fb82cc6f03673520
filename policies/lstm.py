"""The learned congestion-control policy: one LSTM layer over Indigo's state, a linear head to
the logits of the discrete actions (policies/cpp/actions.hh).

Two ways in:
- `forward(obs_seq, state)` on (batch, time, OBS_DIM) sequences, for training;
- `act(obs, state, episode_start)`, stable-baselines3's `predict` for recurrent policies: one
  step of N environments at once, greedy, with the recurrent state zeroed where an episode
  starts. Observations are already scaled by the C++ features (features.hh), so the policy
  applies no normalization of its own: the deployed sender computes the same inputs.

Two heads ([model] head in a training config):
- "classes": a logit per action, trained by cross-entropy against the expert's action;
- "log_change": one number r, the log of the window change to make, trained by squared error
  against the log change the expert's action makes. Its logits are -(r - d_a)^2, d_a the log
  change action a makes from the current window (which the observation carries), so that the
  greedy action is the one whose change is closest to r, in torch and in the exported graph
  alike (deploy/export.py writes the same arithmetic). Why: where the observation leaves the
  expert's next move uncertain, a classifier's most likely class is one side of it (-10 one
  step, +10 the next: a cellular policy alternated them on Indigo's 20 Mbit/s Poisson trace
  and used 84% of it), while the regression predicts the mean change and holds.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from ccgym.emulators import _core
from ccgym.files import atomic_open
from ccgym.policies import HEADS

# (h, c), each (num_layers=1, N, hidden_size): torch.nn.LSTM's layout.
LstmState = tuple[torch.Tensor, torch.Tensor]

DEFAULT_HIDDEN_SIZE = 32
# Each action as window x factor + term (policies/cpp/actions.hh's multiply or add).
ACTION_FACTORS = np.array([value if op == "*" else 1.0 for op, value in _core.ACTIONS],
                          dtype=np.float32)
ACTION_TERMS = np.array([value if op == "+" else 0.0 for op, value in _core.ACTIONS],
                        dtype=np.float32)
# The window feature's log scale: x = ln(1 + window / unit) / WINDOW_LOG_TOP.
WINDOW_LOG_TOP = math.log1p(_core.MAX_WINDOW / _core.WINDOW_UNIT)
# Written into saved files so that a file from something else fails clearly.
FILE_FORMAT = "ccgym-lstm-policy"
FILE_VERSION = 1


def one_inference_thread() -> None:
    """For scoring a policy loaded from a file (LstmScheme, every `lstm:` scheme of eval,
    suite and the benchmarks): one step of a policy is a batch of a few flows, where torch's
    thread pool only adds hand-offs (on a busy 2-core machine they made each step 45x slower;
    two benchmarks side by side ran 44 minutes unfinished against 86 s). Training sets its own
    count ([run] torch_threads) and hands its policy to LstmScheme.from_policy, untouched."""
    torch.set_num_threads(1)


def clamp_window(window: torch.Tensor) -> torch.Tensor:
    """Windows clamped to [MIN_WINDOW, MAX_WINDOW] with relu alone, as the ONNX graph does."""
    low, high = _core.MIN_WINDOW, _core.MAX_WINDOW
    raised = low + torch.relu(window - low)
    return high - torch.relu(high - raised)


def action_log_changes(obs: torch.Tensor) -> torch.Tensor:
    """(..., NUM_ACTIONS) from (..., OBS_DIM): ln(window after action a / window), the window
    read back from its feature and each window clamped as apply_action clamps it."""
    scaled = obs[..., _core.OBS_WINDOW_INDEX:_core.OBS_WINDOW_INDEX + 1]
    unit = _core.WINDOW_UNIT
    window = clamp_window(unit * torch.exp(scaled * WINDOW_LOG_TOP) - unit)
    after = clamp_window(window * torch.from_numpy(ACTION_FACTORS)
                         + torch.from_numpy(ACTION_TERMS))
    return torch.log(after) - torch.log(window)


class LstmPolicy(nn.Module):
    """LSTM(obs_dim -> hidden_size) then Linear(hidden_size -> num_actions), or
    Linear(hidden_size -> 1) for the log_change head (see the module's docstring)."""

    def __init__(self, hidden_size: int = DEFAULT_HIDDEN_SIZE, obs_dim: int | None = None,
                 num_actions: int = _core.NUM_ACTIONS, head: str = "classes",
                 observation_version: int = _core.OBSERVATION_VERSION) -> None:
        super().__init__()
        if observation_version not in _core.OBS_DIMS:
            raise ValueError(f"observation version {observation_version} is not one this ccgym "
                             f"computes ({', '.join(map(str, _core.OBS_DIMS))})")
        obs_dim = _core.OBS_DIMS[observation_version] if obs_dim is None else obs_dim
        if hidden_size < 1 or obs_dim < 1 or num_actions < 2:
            raise ValueError(f"bad sizes: hidden_size={hidden_size}, obs_dim={obs_dim}, "
                             f"num_actions={num_actions}")
        if head not in HEADS:
            raise ValueError(f"unknown head {head!r} (one of {', '.join(HEADS)})")
        if head == "log_change" and (obs_dim, num_actions) != (_core.OBS_DIMS[observation_version],
                                                               _core.NUM_ACTIONS):
            raise ValueError("the log_change head needs ccgym's observation and actions")
        self.hidden_size = hidden_size
        # Which observation the policy reads (policies/cpp/features.hh): what a scheme running
        # it asks the features for, and what its file and its ONNX export record.
        self.observation_version = observation_version
        self.obs_dim = obs_dim
        self.num_actions = num_actions
        self.head_kind = head
        self.lstm = nn.LSTM(obs_dim, hidden_size, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden_size, 1 if head == "log_change" else num_actions)

    def initial_state(self, n: int) -> LstmState:
        """Zero state for n sequences."""
        zeros = torch.zeros(1, n, self.hidden_size)
        return zeros, zeros.clone()

    def forward(self, obs_seq: torch.Tensor,
                state: LstmState | None = None) -> tuple[torch.Tensor, LstmState]:
        """Logits (B, T, num_actions) and the state after the last step, from (B, T, obs_dim)."""
        if state is None:
            state = self.initial_state(obs_seq.shape[0])
        out, (h, c) = self.lstm(obs_seq, state)
        return self.logits(out, obs_seq), (h, c)

    def log_changes(self, obs_seq: torch.Tensor,
                    state: LstmState | None = None) -> tuple[torch.Tensor, LstmState]:
        """The log_change head's r (B, T) and the state after the last step: what its logits
        are made of, and what a student distilled from it learns (train/imitation.py)."""
        if self.head_kind != "log_change":
            raise ValueError(f"the {self.head_kind} head has no log change")
        if state is None:
            state = self.initial_state(obs_seq.shape[0])
        out, (h, c) = self.lstm(obs_seq, state)
        return self.head(out)[..., 0], (h, c)

    def logits(self, lstm_out: torch.Tensor, obs_seq: torch.Tensor) -> torch.Tensor:
        """The action logits from the LSTM's output and the observations it read."""
        if self.head_kind == "log_change":
            return -(action_log_changes(obs_seq) - self.head(lstm_out)) ** 2
        return self.head(lstm_out)

    @torch.no_grad()
    def act(self, obs: np.ndarray, state: LstmState | None,
            episode_start: np.ndarray | None = None) -> tuple[np.ndarray, LstmState]:
        """Greedy actions (N,) for one step of N environments, and the next state.

        obs: (N, obs_dim) float; state: from initial_state(N) or a previous act (None means
        zeros); episode_start: (N,) bool, True where an environment's episode begins at this
        observation, whose state is zeroed before the step.
        """
        out, obs_seq, next_state = self._step(obs, state, episode_start)
        return self._greedy(out, obs_seq), next_state

    @torch.no_grad()
    def act_and_change(self, obs: np.ndarray, state: LstmState | None,
                       episode_start: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, LstmState]:
        """act's actions and next state, with the log_change head's r (N,) float32: the log
        window change the actions are the closest to, which a distilled student learns."""
        if self.head_kind != "log_change":
            raise ValueError(f"the {self.head_kind} head has no log change")
        out, obs_seq, next_state = self._step(obs, state, episode_start)
        changes = self.head(out)[:, 0, 0].numpy().astype(np.float32)
        return self._greedy(out, obs_seq), changes, next_state

    def _greedy(self, lstm_out: torch.Tensor, obs_seq: torch.Tensor) -> np.ndarray:
        return self.logits(lstm_out, obs_seq)[:, 0, :].argmax(dim=-1).numpy().astype(np.int64)

    def _step(self, obs: np.ndarray, state: LstmState | None, episode_start: np.ndarray | None
              ) -> tuple[torch.Tensor, torch.Tensor, LstmState]:
        """The LSTM's output (N, 1, hidden_size) on one step, its input (N, 1, obs_dim) and
        the next state, the arguments checked as act says."""
        obs_t = torch.as_tensor(np.asarray(obs, dtype=np.float32))
        if obs_t.ndim != 2 or obs_t.shape[1] != self.obs_dim:
            raise ValueError(f"obs must be (N, {self.obs_dim}), got {tuple(obs_t.shape)}")
        n = obs_t.shape[0]
        if state is None:
            state = self.initial_state(n)
        h, c = state
        if h.shape != (1, n, self.hidden_size) or c.shape != h.shape:
            raise ValueError(f"state must be two (1, {n}, {self.hidden_size}) tensors, "
                             f"got {tuple(h.shape)} and {tuple(c.shape)}")
        if episode_start is not None:
            starts = np.asarray(episode_start, dtype=bool)
            if starts.shape != (n,):
                raise ValueError(f"episode_start must be ({n},), got {starts.shape}")
            keep = torch.as_tensor(~starts, dtype=h.dtype).view(1, n, 1)
            h, c = h * keep, c * keep
        obs_seq = obs_t.unsqueeze(1)
        out, next_state = self.lstm(obs_seq, (h, c))
        return out, obs_seq, next_state

    # ------------------------------------------------------------ files

    def to_file_dict(self) -> dict:
        return {"format": FILE_FORMAT, "version": FILE_VERSION,
                "hidden_size": self.hidden_size, "obs_dim": self.obs_dim,
                "num_actions": self.num_actions, "head": self.head_kind,
                "observation_version": self.observation_version,
                "state_dict": {k: v.detach().cpu().clone() for k, v in self.state_dict().items()}}

    @classmethod
    def from_file_dict(cls, data: object, where: str = "policy") -> LstmPolicy:
        if not isinstance(data, dict) or data.get("format") != FILE_FORMAT:
            raise ValueError(f"{where}: not a ccgym LSTM policy file")
        if data.get("version") != FILE_VERSION:
            raise ValueError(f"{where}: policy file version {data.get('version')} is not "
                             f"supported (expected {FILE_VERSION})")
        # Files from before the version was recorded used observation version 1.
        observation = data.get("observation_version", 1)
        if observation not in _core.OBS_DIMS:
            raise ValueError(f"{where}: trained on observation version {observation}, but "
                             f"this ccgym computes versions "
                             f"{', '.join(map(str, _core.OBS_DIMS))} "
                             "(see policies/cpp/features.hh); train the policy again")
        sizes = (data.get("obs_dim"), data.get("num_actions"))
        expected = (_core.OBS_DIMS[observation], _core.NUM_ACTIONS)
        if sizes != expected:
            raise ValueError(f"{where}: made for {sizes[0]} inputs and {sizes[1]} actions, but "
                             f"this ccgym has {expected[0]} (observation version {observation}) "
                             f"and {expected[1]} (actions {' '.join(_core.ACTION_NAMES)}); "
                             "train the policy again")
        try:
            # Files from before the choice of heads have a logit per action.
            policy = cls(hidden_size=int(data["hidden_size"]), obs_dim=int(data["obs_dim"]),
                         num_actions=int(data["num_actions"]),
                         head=str(data.get("head", "classes")),
                         observation_version=int(observation))
            policy.load_state_dict(data["state_dict"])
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            # A file of the right format whose sizes or weights do not fit together.
            raise ValueError(f"{where}: a damaged policy file ({type(e).__name__}: "
                             f"{' '.join(str(e).split())[:200]})") from None
        policy.eval()
        return policy

    def save(self, path: str | os.PathLike) -> None:
        """Writes the weights and the sizes, atomically (a reader never sees half a file)."""
        atomic_torch_save(self.to_file_dict(), Path(path))

    @classmethod
    def load(cls, path: str | os.PathLike) -> LstmPolicy:
        """A policy saved by save(), in eval mode; ValueError if the file is not one."""
        return cls.from_file_dict(load_torch_file(path, "policy"), where=str(path))


def ensemble(members: list[LstmPolicy]) -> LstmPolicy:
    """One LstmPolicy that acts on the mean of the members' head outputs (their mean r for the
    log_change head, their mean logits for classes), exactly, in every state.

    Members that read the same observations are one LSTM whose hidden units are all of theirs
    side by side: the input weights stacked, the recurrent weights block-diagonal (no member
    sees another's state), and the head is linear, so a head of the members' weights over k
    averages them. The result is an ordinary policy file: `ccgym eval`, `ccgym export` and the
    C++ sender take it unchanged. ValueError if there are no members or their heads differ.
    """
    if not members:
        raise ValueError("an ensemble needs at least one policy")
    heads = {m.head_kind for m in members}
    if len(heads) > 1:
        raise ValueError(f"the policies have different heads ({', '.join(sorted(heads))}); "
                         "only policies with the same head can be averaged")
    versions = {m.observation_version for m in members}
    if len(versions) > 1:
        raise ValueError(f"the policies read different observation versions "
                         f"({', '.join(map(str, sorted(versions)))}); only policies of one "
                         "version can be averaged")
    sizes = [m.hidden_size for m in members]
    total, k = sum(sizes), len(members)
    first = members[0]
    out = LstmPolicy(hidden_size=total, obs_dim=first.obs_dim, num_actions=first.num_actions,
                     head=first.head_kind, observation_version=first.observation_version)

    def gates(t: Any, h: int) -> torch.Tensor:  # (4h, ...) -> (4, h, ...): i, f, g, o
        return t.detach().reshape(4, h, *t.shape[1:])

    recurrent = torch.zeros(4, total, total)
    start = 0
    for m, h in zip(members, sizes):
        recurrent[:, start:start + h, start:start + h] = gates(m.lstm.weight_hh_l0, h)
        start += h
    weights = {
        "lstm.weight_ih_l0": torch.cat([gates(m.lstm.weight_ih_l0, h)
                                        for m, h in zip(members, sizes)], 1),
        "lstm.weight_hh_l0": recurrent,
        **{f"lstm.{b}": torch.cat([gates(getattr(m.lstm, b), h) for m, h in zip(members, sizes)],
                                  1) for b in ("bias_ih_l0", "bias_hh_l0")},
        "head.weight": torch.cat([m.head.weight.detach() for m in members], 1) / k,
        "head.bias": cast(torch.Tensor, sum(m.head.bias.detach() for m in members)) / k,
    }
    out.load_state_dict({name: w.reshape(out.state_dict()[name].shape)
                         for name, w in weights.items()})
    return out.eval()


def load_torch_file(path: str | os.PathLike, what: str) -> object:
    """torch.load of a file ccgym wrote (weights only: no code runs); ValueError naming the file
    when it is empty, truncated or not a PyTorch file at all, whatever the unpickler raised."""
    path = Path(path)
    if path.is_file() and path.stat().st_size == 0:
        raise ValueError(f"{path}: empty file, not a ccgym {what}")
    try:
        with warnings.catch_warnings():  # a damaged file's pickle protocol warning: not for users
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True)
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise  # the file could not be opened: the caller names the problem
    except Exception:  # noqa: BLE001 - pickle, zip and torch each raise their own (OSError too)
        raise ValueError(f"{path}: not a readable ccgym {what} (corrupt, truncated or another "
                         "kind of file)") from None


def atomic_torch_save(obj: object, path: Path) -> None:
    """torch.save, atomically (ccgym.files.atomic_open)."""
    with atomic_open(path, "wb") as f:
        torch.save(obj, f)
