"""The trained LSTM policy as an ONNX graph of ONE time step, for any ONNX runtime.

    (obs [1, OBS_DIM], h [1, H], c [1, H]) -> (logits [1, NUM_ACTIONS], h_out [1, H], c_out [1, H])

The graph is written node by node from the trained weights with elementary operators only
(MatMul, Add, Sigmoid, Tanh, Mul; Relu, Exp and Log for the log_change head), not as an ONNX
LSTM operator: every runtime implements these, the C++ sender's own small one
(deploy/cpp/onnx_policy.hh) runs exactly these, and the cell's arithmetic is then visible in
the file. Each gate has its own weight matrices, so no Split or Slice is
needed either. The cell is torch.nn.LSTM's:

    i = sigmoid(x W_ii + h W_hi + b_i)     f = sigmoid(x W_if + h W_hf + b_f)
    g = tanh(x W_ig + h W_hg + b_g)        o = sigmoid(x W_io + h W_ho + b_o)
    c' = f * c + i * g                     h' = o * tanh(c')
    logits = h' W_head + b_head                      (the classes head)
    logits = -(d - (h' W_head + b_head))^2           (the log_change head, policies/lstm.py:
                                                      d_a the log change of action a)

metadata_props carries what a deployment must match: the observation's version and
scaling constants (the C++ features' log scale: units and tops), the action set, the
decision interval, and the sizes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ccgym import __version__
from ccgym.emulators import _core
from ccgym.files import atomic_path
from ccgym.oracle.ideal import expert_action, ideal_window
from ccgym.policies.lstm import ACTION_FACTORS, ACTION_TERMS, WINDOW_LOG_TOP, LstmPolicy
from ccgym.policies.onnx_policy import FORMAT, FORMAT_VERSION

OPSET = 17
# ONNX IR version 8 is what opset 17 shipped with; older runtimes refuse newer IR versions.
IR_VERSION = 8
GATES = ("i", "f", "g", "o")  # torch.nn.LSTM's order of the gates in its stacked weights
ELEMENTARY_OPS = frozenset({"MatMul", "Add", "Sigmoid", "Tanh", "Mul", "Relu", "Exp",
                            "Log"})
# Share of random actions in the check's recorded run (the rest are the expert's).
EXPLORATION = 0.3
OBS_LAYOUT = ("each x as ln(1 + x / unit) / ln(1 + top / unit): 0 EWMA queueing delay (ms, "
              "delay_unit_ms, delay_top_ms); 1 EWMA delivery rate and 2 EWMA sending rate "
              "(Mbit/s, rate_unit_mbps, rate_top_mbps); 3 window (packets, window_unit, "
              "max_window); 4 min RTT, 5 latest RTT's queueing delay, 6 time since the last "
              "ACK (ms, delay_unit_ms, delay_top_ms); 7 log2(window / (delivery rate x min "
              "RTT)) / 4 clipped to [-1, 1]; 8 EWMA loss fraction; 9.. previous action one-hot "
              "(policies/cpp/features.hh)")
OBS_LAYOUT_V6 = ("; observation version 6: 10 Copa's drain test, the least RTT over 4 smoothed "
                 "RTTs above the min RTT over that span's range, in [0, 1]; 11 and 12 "
                 "log2(send rate / delivery rate) / 2 clipped to [-1, 1], averaged per ACK "
                 "with gains 1/8 and 1/64; 13.. previous action one-hot")


def metadata(policy: LstmPolicy) -> dict[str, str]:
    """The graph's metadata_props: everything the inputs and outputs mean."""
    return {
        "ccgym.format": FORMAT,
        "ccgym.format_version": FORMAT_VERSION,
        "ccgym.version": __version__,
        "obs_dim": str(policy.obs_dim),
        "hidden_size": str(policy.hidden_size),
        "num_actions": str(policy.num_actions),
        "step_ms": repr(float(_core.STEP_MS)),
        "actions": json.dumps([[op, float(value)] for op, value in _core.ACTIONS]),
        "min_window": repr(float(_core.MIN_WINDOW)),
        "max_window": repr(float(_core.MAX_WINDOW)),
        "observation_version": str(policy.observation_version),
        "delay_unit_ms": repr(float(_core.DELAY_UNIT_MS)),
        "delay_top_ms": repr(float(_core.DELAY_TOP_MS)),
        "rate_unit_mbps": repr(float(_core.RATE_UNIT_MBPS)),
        "rate_top_mbps": repr(float(_core.RATE_TOP_MBPS)),
        "window_unit": repr(float(_core.WINDOW_UNIT)),
        "obs_layout": OBS_LAYOUT + (OBS_LAYOUT_V6 if policy.observation_version
                                    == _core.COMPETITION_OBSERVATION_VERSION else ""),
        "head": policy.head_kind,
        "action": "argmax of logits; the state (h, c) starts at zeros",
    }


def _weights(policy: LstmPolicy) -> dict[str, np.ndarray]:
    """Per-gate matrices laid out for x @ W (in, out), biases b_ih + b_hh."""
    lstm: Any = policy.lstm  # torch's stubs type its weights Tensor | Module
    hidden = policy.hidden_size
    w_ih = lstm.weight_ih_l0.detach().cpu().numpy().astype(np.float32)  # (4H, D)
    w_hh = lstm.weight_hh_l0.detach().cpu().numpy().astype(np.float32)  # (4H, H)
    bias = (lstm.bias_ih_l0 + lstm.bias_hh_l0).detach().cpu().numpy().astype(np.float32)
    out = {}
    for k, gate in enumerate(GATES):
        rows = slice(k * hidden, (k + 1) * hidden)
        out[f"W_x{gate}"] = np.ascontiguousarray(w_ih[rows].T)
        out[f"W_h{gate}"] = np.ascontiguousarray(w_hh[rows].T)
        out[f"b_{gate}"] = bias[rows].reshape(1, hidden)
    out["W_head"] = np.ascontiguousarray(
        policy.head.weight.detach().cpu().numpy().astype(np.float32).T)
    out["b_head"] = policy.head.bias.detach().cpu().numpy().astype(np.float32).reshape(1, -1)
    return out


def _log_change_logits(node: Callable[[str, list[str], str], str], dim: int, actions: int,
                       weights: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The log_change head's logits, -(d_a - r)^2, as policies/lstm.py computes them: r from
    h_out, d_a = ln(window after action a) - ln(window), the window read back from its
    feature, every window clamped with Relu. The head's one column is repeated per action
    (and the window by a MatMul with ones), so that no operator broadcasts. Returns the
    constants the nodes read."""
    def row(value: float | np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.float32(value), (1, actions)).astype(np.float32)

    pick = np.zeros((dim, 1), np.float32)
    pick[_core.OBS_WINDOW_INDEX, 0] = 1.0
    constants = {
        "W_head": np.repeat(weights["W_head"], actions, axis=1),
        "b_head": np.repeat(weights["b_head"], actions, axis=1),
        "pick_window": pick, "ones": row(1.0), "minus_ones": row(-1.0),
        "window_log_top": np.array([[WINDOW_LOG_TOP]], np.float32),
        "window_unit": np.array([[_core.WINDOW_UNIT]], np.float32),
        "minus_window_unit": np.array([[-_core.WINDOW_UNIT]], np.float32),
        "min_window": row(_core.MIN_WINDOW), "minus_min_window": row(-_core.MIN_WINDOW),
        "max_window": row(_core.MAX_WINDOW),
        "action_factors": ACTION_FACTORS.reshape(1, -1),
        "action_terms": ACTION_TERMS.reshape(1, -1),
    }

    def clamped(x: str, name: str) -> str:  # max - relu(max - (min + relu(x - min)))
        raised = node("Add", [node("Relu", [node("Add", [x, "minus_min_window"], f"{name}_less")],
                                   f"{name}_above"), "min_window"], f"{name}_raised")
        gap = node("Add", [node("Mul", [raised, "minus_ones"], f"{name}_negated"),
                           "max_window"], f"{name}_gap")
        room = node("Mul", [node("Relu", [gap], f"{name}_room"), "minus_ones"], f"{name}_cut")
        return node("Add", [room, "max_window"], name)

    scaled = node("MatMul", ["obs", "pick_window"], "window_scaled")
    grown = node("Exp", [node("Mul", [scaled, "window_log_top"], "window_log")], "window_exp")
    raw = node("Add", [node("Mul", [grown, "window_unit"], "window_units"),
                       "minus_window_unit"], "window_raw")
    window = clamped(node("MatMul", [raw, "ones"], "window_each"), "window")
    moved = node("Add", [node("Mul", [window, "action_factors"], "after_factor"),
                         "action_terms"], "after_raw")
    after = clamped(moved, "after")
    changes = node("Add", [node("Log", [after], "log_after"),
                           node("Mul", [node("Log", [window], "log_window"), "minus_ones"],
                                "minus_log_window")], "action_changes")
    change = node("Add", [node("MatMul", ["h_out", "W_head"], "head"), "b_head"], "change")
    miss = node("Add", [changes, node("Mul", [change, "minus_ones"], "minus_change")], "miss")
    node("Mul", [node("Mul", [miss, miss], "miss_squared"), "minus_ones"], "logits")
    return constants


def build_model(policy: LstmPolicy) -> onnx.ModelProto:
    """The one-step graph of a policy, checked by onnx.checker."""
    hidden, dim, actions = policy.hidden_size, policy.obs_dim, policy.num_actions
    weights = _weights(policy)
    nodes = []

    def node(op: str, inputs: list[str], output: str) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=f"{op}_{output}"))
        return output

    activation = {"i": "Sigmoid", "f": "Sigmoid", "g": "Tanh", "o": "Sigmoid"}
    gate = {}
    for g in GATES:
        x_part = node("MatMul", ["obs", f"W_x{g}"], f"x_{g}")
        h_part = node("MatMul", ["h", f"W_h{g}"], f"h_{g}")
        summed = node("Add", [x_part, h_part], f"xh_{g}")
        pre = node("Add", [summed, f"b_{g}"], f"pre_{g}")
        gate[g] = node(activation[g], [pre], f"gate_{g}")
    kept = node("Mul", [gate["f"], "c"], "c_kept")
    written = node("Mul", [gate["i"], gate["g"]], "c_written")
    node("Add", [kept, written], "c_out")
    squashed = node("Tanh", ["c_out"], "c_squashed")
    node("Mul", [gate["o"], squashed], "h_out")
    if policy.head_kind == "log_change":
        weights.update(_log_change_logits(node, dim, actions, weights))
    else:
        head = node("MatMul", ["h_out", "W_head"], "head")
        node("Add", [head, "b_head"], "logits")

    def value(name: str, width: int) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, width])

    graph = helper.make_graph(
        nodes, "ccgym_lstm_step",
        inputs=[value("obs", dim), value("h", hidden), value("c", hidden)],
        outputs=[value("logits", actions), value("h_out", hidden), value("c_out", hidden)],
        initializer=[numpy_helper.from_array(array, name) for name, array in weights.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ccgym")
    model.ir_version = IR_VERSION
    helper.set_model_props(model, metadata(policy))
    onnx.checker.check_model(model, full_check=True)
    return model


def export_policy(policy: LstmPolicy, path: str | os.PathLike) -> Path:
    """Writes the one-step graph to path, atomically; returns the path."""
    path = Path(path)
    model = build_model(policy)
    with atomic_path(path) as tmp:
        onnx.save_model(model, str(tmp))
    return path


def max_difference(policy: LstmPolicy, path: str | os.PathLike,
                   observations: np.ndarray) -> float:
    """Largest absolute difference between onnxruntime and torch over a sequence of
    observations (T, OBS_DIM), in logits and in the carried state, step by step."""
    import onnxruntime as ort
    import torch

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    h = np.zeros((1, policy.hidden_size), dtype=np.float32)
    c = np.zeros_like(h)
    state = policy.initial_state(1)
    worst = 0.0
    with torch.no_grad():
        for obs in np.asarray(observations, dtype=np.float32):
            obs = obs.reshape(1, -1)
            logits, h, c = session.run(["logits", "h_out", "c_out"], {"obs": obs, "h": h, "c": c})
            ref, state = policy(torch.from_numpy(obs).unsqueeze(1), state)
            worst = max(worst,
                        float(np.max(np.abs(logits - ref[:, 0].numpy()))),
                        float(np.max(np.abs(h - state[0][0].numpy()))),
                        float(np.max(np.abs(c - state[1][0].numpy()))))
    return worst


def recorded_observations(link: str, steps: int, seed: int = 1,
                          exploration: float = EXPLORATION,
                          version: int = _core.OBSERVATION_VERSION) -> np.ndarray:
    """Observations (steps, OBS_DIMS[version]) of a simulated flow steered by the oracle's expert,
    taking a random action with probability `exploration`: inputs as the C++ features make
    them, in the range a deployed policy meets, and varied (a random-weight policy's own run
    may hold one window and exercise little of the graph)."""
    rng = np.random.default_rng(seed)
    sim = _core.Simulator(link, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], seed, False)
    ideal = ideal_window(link, seed)
    previous = _core.HOLD_ACTION
    out = []
    for k in range(steps):
        out.append(sim.observation(previous, 0, version))
        if rng.random() < exploration:
            previous = int(rng.integers(_core.NUM_ACTIONS))
        else:
            previous = expert_action(sim.window(0), ideal.window(sim.now_ms))
        sim.set_window(_core.apply_action(sim.window(0), previous), 0)
        sim.run_until((k + 1) * float(_core.STEP_MS))
    return np.stack(out).astype(np.float32)
