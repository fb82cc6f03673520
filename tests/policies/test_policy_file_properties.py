"""Property tests (Hypothesis) of policy files: whatever a .pt or .onnx file holds, loading it
gives a policy or a ValueError naming the file (which every verb turns into one line), never
another exception."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccgym.emulators import _core
from ccgym.policies.lstm import FILE_FORMAT, FILE_VERSION, LstmPolicy
from ccgym.policies.onnx_policy import OnnxPolicy

SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def valid_file_bytes() -> bytes:
    buffer = io.BytesIO()
    torch.save(LstmPolicy(hidden_size=4).to_file_dict(), buffer)
    return buffer.getvalue()


VALID = valid_file_bytes()


def load(data: bytes, suffix: str = ".pt") -> object:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"policy{suffix}"
        path.write_bytes(data)
        try:
            return LstmPolicy.load(path) if suffix == ".pt" else OnnxPolicy(path)
        except ValueError as e:
            assert str(e).startswith(str(path)), e
            return None


@SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_are_a_clear_error(data: bytes) -> None:
    load(data)
    load(data, ".onnx")


@SETTINGS
@given(cut=st.integers(min_value=0, max_value=len(VALID) - 1),
       flips=st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(1, 255)),
                      max_size=4))
def test_a_damaged_policy_file_is_a_clear_error_or_still_a_policy(cut: int, flips) -> None:
    data = bytearray(VALID)
    for at, mask in flips:
        data[at] ^= mask
    load(bytes(data))  # flipped bytes
    load(VALID[:cut])  # truncated


SIZES = st.one_of(st.integers(min_value=-2, max_value=40), st.text(max_size=3), st.none(),
                  st.floats(allow_nan=True))
TENSORS = st.builds(torch.zeros, st.lists(st.integers(0, 6), min_size=1, max_size=2).map(tuple))


@SETTINGS
@given(record=st.fixed_dictionaries(
    {"format": st.sampled_from([FILE_FORMAT, "other"]),
     "version": st.sampled_from([FILE_VERSION, 0, "1"])},
    optional={"hidden_size": SIZES, "obs_dim": st.sampled_from([_core.OBS_DIM, 3, "x"]),
              "num_actions": st.sampled_from([_core.NUM_ACTIONS, 1, 99]),
              "observation_version": st.sampled_from([_core.OBSERVATION_VERSION, 1, None]),
              "state_dict": st.one_of(st.dictionaries(st.sampled_from(
                  ["lstm.weight_ih_l0", "head.bias", "x"]), TENSORS, max_size=3),
                  st.integers())}))
def test_a_policy_record_of_the_wrong_shape_is_a_clear_error(record: dict) -> None:
    buffer = io.BytesIO()
    torch.save(record, buffer)
    load(buffer.getvalue())
