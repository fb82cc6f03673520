"""An exported policy (ccgym export) run with onnxruntime: the same decisions as the PyTorch
policy it came from, so `ccgym eval --schemes lstm:FILE.onnx` scores what lstm:FILE.pt does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from ccgym.cli import main
from ccgym.deploy.export import export_policy, recorded_observations
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.onnx_policy import OnnxPolicy


def exported(tmp_path: Path) -> tuple[LstmPolicy, Path, Path]:
    torch.manual_seed(7)
    policy = LstmPolicy(hidden_size=8)
    pt = tmp_path / "policy.pt"
    policy.save(pt)
    return policy, pt, export_policy(policy, tmp_path / "policy.onnx")


def test_onnx_policy_acts_as_the_torch_policy(tmp_path: Path) -> None:
    policy, _, onnx_path = exported(tmp_path)
    onnx = OnnxPolicy(onnx_path)
    # Three environments stepping together, one of them restarting halfway.
    obs = recorded_observations("rate_mbps=12,delay_ms=20", 60)
    batch = np.stack([obs, obs[::-1], np.roll(obs, 7, axis=0)], axis=1)  # (T, 3, OBS_DIM)
    torch_state, onnx_state = None, None
    for t, step in enumerate(batch):
        starts = np.array([t == 0, t == 0, t in (0, 30)])
        expected, torch_state = policy.act(step, torch_state, starts)
        actions, onnx_state = onnx.act(step, onnx_state, starts)
        np.testing.assert_array_equal(actions, expected)
        np.testing.assert_allclose(onnx_state[0], torch_state[0][0].numpy(), atol=1e-5)


def test_eval_scores_an_onnx_policy_as_its_torch_twin(tmp_path: Path) -> None:
    _, pt, onnx_path = exported(tmp_path)
    out = tmp_path / "rows.json"
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20", "--schemes",
                 f"lstm:{pt},lstm:{onnx_path}", "--duration-s", "3", "--no-progress",
                 "--json", str(out)]) == 0
    rows = {row["scheme"]: row for row in json.loads(out.read_text())}
    torch_row, onnx_row = rows[f"lstm:{pt}"], rows[f"lstm:{onnx_path}"]
    for key in ("throughput_mbps", "delay_p95_ms", "e2e_delay_p95_ms", "score"):
        assert onnx_row[key] == torch_row[key], key
