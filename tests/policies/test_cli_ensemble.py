"""`ccgym ensemble`: seeds' policies averaged into one file that evaluates and exports as any."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ccgym.cli import main
from ccgym.deploy.export import max_difference, recorded_observations
from ccgym.policies.lstm import LstmPolicy


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    folders = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        folder = tmp_path / f"run{seed}"
        folder.mkdir()
        LstmPolicy(hidden_size=8, head="log_change").save(folder / "policy.pt")
        folders.append(folder)
    return folders


def test_writes_an_ensemble_that_exports_and_matches_pytorch(
        runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "ensemble.pt"
    assert main(["ensemble", *map(str, runs), "-o", str(out)]) == 0
    assert "hidden size 16 (8 + 8)" in capsys.readouterr().out
    policy = LstmPolicy.load(out)
    assert policy.hidden_size == 16
    onnx = tmp_path / "ensemble.onnx"
    assert main(["export", str(out), "-o", str(onnx)]) == 0
    assert max_difference(policy, onnx, recorded_observations("rate_mbps=12,delay_ms=20",
                                                              100)) < 1e-5
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20", "--duration-s", "2",
                 "--schemes", f"lstm:{out}", "--no-progress"]) == 0


@pytest.mark.parametrize("arguments, message", [
    (["ONE"], "two or more"),
    (["ONE", "missing"], "no such run folder"),
    (["ONE", "CLASSES"], "different heads"),
    (["ONE", "NOTAPOLICY"], "not a readable ccgym policy"),
])
def test_bad_inputs_are_one_clear_error_and_write_nothing(
        runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture,
        arguments: list[str], message: str) -> None:
    LstmPolicy(hidden_size=8, head="classes").save(tmp_path / "classes.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a policy")
    names = {"ONE": str(runs[0]), "CLASSES": str(tmp_path / "classes.pt"),
             "NOTAPOLICY": str(tmp_path / "junk.pt"), "missing": str(tmp_path / "missing")}
    out = tmp_path / "ensemble.pt"
    assert main(["ensemble", *[names[a] for a in arguments], "-o", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
