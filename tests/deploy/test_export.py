"""ONNX export: a valid one-step graph of elementary operators that matches PyTorch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from ccgym.cli import main
from ccgym.deploy.export import export_policy, max_difference, recorded_observations
from ccgym.emulators import _core
from ccgym.policies.lstm import LstmPolicy

HIDDEN = 24
ELEMENTARY = {"MatMul", "Add", "Sigmoid", "Tanh", "Mul"}
# The log_change head reads its window back and takes logarithms (policies/lstm.py).
ELEMENTARY_LOG_CHANGE = ELEMENTARY | {"Relu", "Exp", "Log"}


@pytest.fixture(scope="module", params=["classes", "log_change"])
def policy(request: pytest.FixtureRequest) -> LstmPolicy:
    torch.manual_seed(7)
    p = LstmPolicy(hidden_size=HIDDEN, head=request.param)
    with torch.no_grad():  # beyond the default init's scale: saturating gates, varied actions
        for param in p.parameters():
            param.mul_(3.0)
    return p.eval()


@pytest.fixture(scope="module")
def exported(policy: LstmPolicy, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_policy(policy, tmp_path_factory.mktemp("onnx") / "policy.onnx")


def test_graph_is_valid_and_elementary(policy: LstmPolicy, exported: Path) -> None:
    model = onnx.load(str(exported))
    onnx.checker.check_model(model, full_check=True)
    ops = {node.op_type for node in model.graph.node}
    allowed = ELEMENTARY if policy.head_kind == "classes" else ELEMENTARY_LOG_CHANGE
    assert ops <= allowed, ops - allowed
    assert [i.name for i in model.graph.input] == ["obs", "h", "c"]
    assert [o.name for o in model.graph.output] == ["logits", "h_out", "c_out"]

    def dims(value: onnx.ValueInfoProto) -> list[int]:
        return [d.dim_value for d in value.type.tensor_type.shape.dim]

    shapes = {v.name: dims(v) for v in [*model.graph.input, *model.graph.output]}
    assert shapes == {"obs": [1, _core.OBS_DIM], "h": [1, HIDDEN], "c": [1, HIDDEN],
                      "logits": [1, _core.NUM_ACTIONS], "h_out": [1, HIDDEN],
                      "c_out": [1, HIDDEN]}
    assert model.opset_import[0].version == 17


def test_metadata(policy: LstmPolicy, exported: Path) -> None:
    props = {p.key: p.value for p in onnx.load(str(exported)).metadata_props}
    assert props["head"] == policy.head_kind
    assert int(props["observation_version"]) == _core.OBSERVATION_VERSION
    assert float(props["delay_unit_ms"]) == _core.DELAY_UNIT_MS
    assert float(props["delay_top_ms"]) == _core.DELAY_TOP_MS
    assert float(props["rate_unit_mbps"]) == _core.RATE_UNIT_MBPS
    assert float(props["rate_top_mbps"]) == _core.RATE_TOP_MBPS
    assert float(props["window_unit"]) == _core.WINDOW_UNIT
    assert float(props["step_ms"]) == _core.STEP_MS
    assert int(props["hidden_size"]) == HIDDEN
    assert int(props["obs_dim"]) == _core.OBS_DIM
    assert [tuple(a) for a in json.loads(props["actions"])] == [tuple(a) for a in _core.ACTIONS]


def test_onnxruntime_matches_torch_over_1000_recorded_steps(policy: LstmPolicy,
                                                             exported: Path) -> None:
    observations = recorded_observations("rate_mbps=24,delay_ms=30", 1000)
    assert observations.shape == (1000, _core.OBS_DIM)
    assert np.ptp(observations[:, 3]) > 0  # the window moved: the inputs are not constant
    assert max_difference(policy, exported, observations) < 1e-5

    # And the actions a deployment takes are the same at every step.
    session = ort.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
    h = c = np.zeros((1, HIDDEN), np.float32)
    state, onnx_actions, torch_actions = None, [], []
    for obs in observations:
        logits, h, c = session.run(None, {"obs": obs[None], "h": h, "c": c})
        onnx_actions.append(int(logits.argmax()))
        action, state = policy.act(obs[None], state)
        torch_actions.append(int(action[0]))
    assert onnx_actions == torch_actions
    assert len(set(torch_actions)) > 1


def test_cli_export(policy: LstmPolicy, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    policy.save(tmp_path / "policy.pt")
    assert main(["export", str(tmp_path)]) == 0
    assert (tmp_path / "policy.onnx").is_file()
    assert "max |difference|" in capsys.readouterr().out
    out = tmp_path / "elsewhere.onnx"
    assert main(["export", str(tmp_path / "policy.pt"), "-o", str(out), "--no-check"]) == 0
    assert out.is_file()
    assert main(["export", str(tmp_path / "missing")]) == 2
