"""The RLlib module PPO trains: the project's LSTM policy plus a value head.

The actor is a policies/lstm.py LstmPolicy, unchanged (its LSTM and its head to the action
logits), so the trained actor is saved as a policy.pt that `ccgym eval`, `ccgym export` and the
C++ sender take as they take DAgger's. The critic is one linear layer on the same LSTM output
(RLlib's ValueFunctionAPI): it costs the env runners nothing, since they only run the actor.

The recurrent state is {"h", "c"}, each (hidden_size,) per sequence: RLlib's env runners carry it
from step to step and store it in the episodes, and its learner connectors cut the episodes into
max_seq_len chunks that start from the stored states (truncated backpropagation through time).

`_forward` and `_forward_train` are underscored but public: they are the hooks RLlib's RLModule
documents as the methods a custom module implements (its forward_exploration,
forward_inference and forward_train call them); nothing else of RLlib's underscored is
touched (tests/train/test_ppo_public_rllib.py).

model_config keys: hidden_size; max_seq_len (the chunk length); temperature (the log_change
head's logits are divided by it for the action distribution PPO samples and learns: see [ppo]
log_change_temperature; the greedy action is the same); init_policy (optional: an
LstmPolicy.to_file_dict() whose weights the actor starts from, e.g. a DAgger run's policy.pt;
every copy of the module, on the learner and on each env runner, is built from it).
"""

from __future__ import annotations

from typing import Any, cast

import gymnasium
import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch import TorchRLModule
from torch import nn

from ccgym.policies.lstm import LstmPolicy

# How far below the greedy action's logit any action's is kept (see action_logits).
LOGIT_RANGE = 30.0


class LstmActorCritic(TorchRLModule, ValueFunctionAPI):
    """LstmPolicy (the actor) and a linear value head on its LSTM output."""

    def setup(self) -> None:
        # RLlib types these broadly; ccgym's module is built with a dict, a Box and a Discrete.
        model_config = cast(dict[str, Any], self.model_config)
        observation_space = cast(gymnasium.spaces.Box, self.observation_space)
        action_space = cast(gymnasium.spaces.Discrete, self.action_space)
        hidden = int(model_config["hidden_size"])
        self.policy = LstmPolicy(hidden_size=hidden, obs_dim=int(observation_space.shape[0]),
                                 num_actions=int(action_space.n),
                                 head=str(model_config.get("head", "classes")))
        init = model_config.get("init_policy")
        if init is not None:
            start = LstmPolicy.from_file_dict(init, where="init_from")
            if (start.hidden_size, start.obs_dim, start.num_actions, start.head_kind) != (
                    hidden, self.policy.obs_dim, self.policy.num_actions, self.policy.head_kind):
                raise ValueError(
                    f"init_from: the policy's sizes (hidden {start.hidden_size}, obs "
                    f"{start.obs_dim}, actions {start.num_actions}, head {start.head_kind}) "
                    f"differ from this run's (hidden {hidden}, obs {self.policy.obs_dim}, "
                    f"actions {self.policy.num_actions}, head {self.policy.head_kind})")
            self.policy.load_state_dict(start.state_dict())
        self.value_head = nn.Linear(hidden, 1)
        self.temperature = (float(model_config.get("temperature", 1.0))
                            if self.policy.head_kind == "log_change" else 1.0)

    def get_initial_state(self) -> dict[str, np.ndarray]:
        zeros = np.zeros(self.policy.hidden_size, dtype=np.float32)
        return {"h": zeros, "c": zeros.copy()}

    def lstm_outputs(self, batch: dict[str, Any]) -> tuple[
            torch.Tensor, dict[str, torch.Tensor]]:
        """The LSTM over (B, T, obs_dim) from STATE_IN; outputs (B, T, hidden) and STATE_OUT."""
        state = batch[Columns.STATE_IN]
        out, (h, c) = self.policy.lstm(batch[Columns.OBS],
                                       (state["h"].unsqueeze(0), state["c"].unsqueeze(0)))
        return out, {"h": h.squeeze(0), "c": c.squeeze(0)}

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self.act(batch)

    def act(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The actor's step (action logits and STATE_OUT), what RLlib's forward_exploration
        and forward_inference return, without their switch to eval mode on every call (a walk
        over the submodules, 5% of a forward on 16 rows): ccgym's env runners set it once."""
        out, state = self.lstm_outputs(batch)
        return {Columns.ACTION_DIST_INPUTS: self.action_logits(out, batch),
                Columns.STATE_OUT: state}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        out, state = self.lstm_outputs(batch)
        return {Columns.ACTION_DIST_INPUTS: self.action_logits(out, batch),
                Columns.STATE_OUT: state, Columns.EMBEDDINGS: out}

    def action_logits(self, lstm_out: torch.Tensor, batch: dict[str, Any]) -> torch.Tensor:
        logits = self.policy.logits(lstm_out, batch[Columns.OBS]) / self.temperature
        # Over the temperature, a far action's logit (/2 from 30 packets: -480) underflows to a
        # probability of exactly 0, and torch's KL divergence is then infinite. e^-30 of the
        # greedy action's odds is as good as never, and finite.
        greedy = logits.max(dim=-1, keepdim=True).values
        return torch.maximum(logits, greedy - LOGIT_RANGE)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is None:
            embeddings, _ = self.lstm_outputs(batch)
        return self.value_head(embeddings).squeeze(-1)
