"""The trained LSTM policy as a scheme of `ccgym eval`: `--schemes lstm:runs/NAME`, with
options after it (`lstm:runs/NAME:compete=bbr`, policy_path.POLICY_OPTIONS).

Every STEP_MS it reads each flow's observation from the C++ features (the ones the training
environment and the C++ sender use), runs one batched policy step over all flows, and applies
the chosen action to each flow's window, as the training environment does.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.stepping import Slot
from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy, LstmState, one_inference_thread
from ccgym.policies.onnx_policy import OnnxPolicy, OnnxState
from ccgym.policies.policy_path import resolve_policy_path, split_policy_options


class LstmScheme:
    """A SteppedScheme (ccgym.emulators.stepping) driven by an LstmPolicy."""

    def __init__(self, argument: str | os.PathLike | None = None,
                 policy: LstmPolicy | OnnxPolicy | None = None) -> None:
        # The classic scheme under each flow (compete=), its competitive mode; None: none.
        self.compete: str | None = None
        self.restart = False  # whether it starts afresh on each entry (restart=1)
        self.first: str | None = None  # the classic that takes over first (first=)
        if policy is None:
            if argument is None:
                raise UserError("lstm: give a run folder or a policy file")
            policy_text, options = split_policy_options(str(argument))
            self.compete = options.get("compete")
            self.restart = options.get("restart") == "1"
            self.first = options.get("first")
            path = resolve_policy_path(policy_text)
            try:
                if path.suffix == ".onnx":  # an exported policy (ccgym export), in onnxruntime
                    policy = OnnxPolicy(path)
                else:
                    policy = LstmPolicy.load(path)
            except (ValueError, RuntimeError, OSError) as e:
                raise UserError(f"lstm:{argument}: cannot load the policy: {e}") from e
            one_inference_thread()
        self.policy = policy
        self.policy.eval()
        self._state: LstmState | OnnxState | None = None
        self._previous = np.zeros(0, dtype=np.int64)
        self._starting = np.zeros(0, dtype=bool)

    @classmethod
    def from_policy(cls, policy: LstmPolicy) -> LstmScheme:
        return cls(policy=policy)

    @property
    def previous_actions(self) -> np.ndarray:
        """The action each slot took last (the keep action before the first decision)."""
        return self._previous

    def reset(self, slots: Sequence[Slot]) -> None:
        n = len(slots)
        self._state = self.policy.initial_state(n)
        self._previous = np.full(n, _core.HOLD_ACTION, dtype=np.int64)
        self._starting = np.ones(n, dtype=bool)
        if self.compete is not None:
            for slot in slots:
                slot.sim.compete(self.compete, slot.flow, self.restart, self.first or "")

    def decide(self, slots: Sequence[Slot]) -> None:
        if self._state is None or len(slots) != len(self._previous):
            raise RuntimeError("LstmScheme.decide before reset, or with other slots")
        version = self.policy.observation_version
        obs = np.stack([slot.sim.observation(int(prev), slot.flow, version)
                        for slot, prev in zip(slots, self._previous)])
        # Each policy gets back the state it made (typed per policy, so mypy cannot pair them).
        actions, self._state = self.policy.act(obs, self._state, self._starting)  # type: ignore[arg-type]
        self._starting[:] = False
        for slot, action in zip(slots, actions):
            slot.sim.take_action(int(action), slot.flow)
        self._previous = actions
