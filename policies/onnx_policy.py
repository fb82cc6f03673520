"""A policy exported to ONNX (`ccgym export`), run with onnxruntime: `lstm:FILE.onnx` in
`ccgym eval`, and the check `ccgym run` makes before the C++ sender loads the same file.

It has LstmPolicy's `initial_state` and `act`, so LstmScheme drives either. The exported graph
is one step of one flow (deploy/export.py), so `act` calls it once per environment.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ccgym.emulators import _core

# What an exported policy says it is in its metadata (ccgym.format, ccgym.format_version): the
# version changes whenever the graph's inputs, outputs or their meaning do.
FORMAT = "ccgym-lstm-step"
FORMAT_VERSION = "2"
# (h, c), each (N, hidden_size): the exported graph's layout, one row per environment.
OnnxState = tuple[np.ndarray, np.ndarray]


class OnnxPolicy:
    def __init__(self, path: str | os.PathLike) -> None:
        """Loads and checks an exported policy; ValueError naming the file if it is not one
        this ccgym can run."""
        import onnxruntime as ort

        self.path = Path(path)
        where = str(self.path)
        try:
            self.session = ort.InferenceSession(where, providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime has its own types per bad file
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ValueError(f"{where}: not a readable ONNX model ({first})") from None
        meta = self.session.get_modelmeta().custom_metadata_map
        if meta.get("ccgym.format") != FORMAT:
            raise ValueError(f"{where}: an ONNX model, but not a ccgym policy (no "
                             f"ccgym.format={FORMAT} in its metadata; make one with ccgym export)")
        if meta.get("ccgym.format_version") != FORMAT_VERSION:
            raise ValueError(f"{where}: exported in format version "
                             f"{meta.get('ccgym.format_version')}, this ccgym runs "
                             f"{FORMAT_VERSION}; export the policy again")
        version = meta.get("observation_version", "")
        known = {str(v): v for v in _core.OBS_DIMS}
        if version not in known:
            raise ValueError(f"{where}: observation_version is {version or None}, this ccgym "
                             f"computes {', '.join(known)} (see policies/cpp/features.hh); "
                             "train and export the policy again")
        self.observation_version = known[version]
        expected = {"obs_dim": _core.OBS_DIMS[self.observation_version],
                    "num_actions": _core.NUM_ACTIONS}
        for key, value in expected.items():
            if meta.get(key) != str(value):
                raise ValueError(f"{where}: {key} is {meta.get(key)}, this ccgym needs {value} "
                                 "(see policies/cpp/features.hh); train and export the policy "
                                 "again")
        try:
            self.hidden_size = int(meta["hidden_size"])
        except (KeyError, ValueError):
            raise ValueError(f"{where}: no hidden_size in its metadata") from None
        self.obs_dim = _core.OBS_DIMS[self.observation_version]
        self.num_actions = _core.NUM_ACTIONS

    def eval(self) -> OnnxPolicy:
        return self  # inference only; LstmScheme calls eval() on any policy

    def initial_state(self, n: int) -> OnnxState:
        zeros = np.zeros((n, self.hidden_size), dtype=np.float32)
        return zeros, zeros.copy()

    def act(self, obs: np.ndarray, state: OnnxState | None,
            episode_start: np.ndarray | None = None) -> tuple[np.ndarray, OnnxState]:
        """Greedy actions (N,) and the next state, as LstmPolicy.act."""
        obs = np.asarray(obs, dtype=np.float32)
        n = obs.shape[0]
        h, c = self.initial_state(n) if state is None else (state[0].copy(), state[1].copy())
        if episode_start is not None:
            starts = np.asarray(episode_start, dtype=bool)
            h[starts] = 0
            c[starts] = 0
        actions = np.empty(n, dtype=np.int64)
        for i in range(n):
            logits, h_i, c_i = self.session.run(
                ["logits", "h_out", "c_out"],
                {"obs": obs[i:i + 1], "h": h[i:i + 1], "c": c[i:i + 1]})
            actions[i] = int(np.argmax(logits[0]))
            h[i], c[i] = h_i[0], c_i[0]
        return actions, (h, c)
