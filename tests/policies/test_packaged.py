"""The packaged reference policies (policies/packaged/): the shipped files themselves, their names
in every verb, `ccgym policies`, and scripts/package_policies.py that makes them."""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ccgym.cli import main
from ccgym.deploy.export import max_difference, recorded_observations
from ccgym.deploy.harness import resolve_scheme
from ccgym.files import read_toml
from ccgym.policies import packaged_policies
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.onnx_policy import OnnxPolicy
from ccgym.policies.packaged_policies import PackagedPolicy
from ccgym.train.config import load_packaged_config, with_overrides
from ccgym.train.run_folder import RunFolder, machine_description

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "package_policies.py"
SCORE_TOLERANCE = 0.01  # the card's figures, run again here (the bound)
MAX_BYTES = 1_000_000  # each shipped file


def eval_score(command: str, policy: PackagedPolicy, file: Path,
               capsys: pytest.CaptureFixture) -> float:
    """The score that a card's `ccgym eval ... --json -` command gives, run with lstm:FILE and
    the catalog's options in place of lstm:NAME (the card's names the packaged file; FILE may
    be a staged one)."""
    staged = f"lstm:{file}:{policy.options}" if policy.options else f"lstm:{file}"
    words = [staged if w == f"lstm:{policy.name}" else w for w in shlex.split(command)[1:]]
    capsys.readouterr()
    assert main(words) == 0
    rows = json.loads(capsys.readouterr().out)
    return next(r["score"] for r in rows if r["scheme"] == staged)


def check_packaged(policy: PackagedPolicy, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The files load, match their card, export again, and give the card's figures."""
    card = policy.read_card()
    for key, path in (("pt", policy.pt), ("onnx", policy.onnx)):
        assert path.stat().st_size < MAX_BYTES
        assert card["files"][key]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    torch_policy = LstmPolicy.load(policy.pt)
    OnnxPolicy(policy.onnx)  # its format, observation version and sizes are this ccgym's
    observations = recorded_observations("rate_mbps=12,delay_ms=20", 300)
    assert max_difference(torch_policy, policy.onnx, observations) < 1e-4
    assert main(["export", str(policy.pt), "-o", str(tmp_path / "again.onnx")]) == 0
    assert len(card["check"]) >= 2
    for figure in card["check"]:
        for file in (policy.pt, policy.onnx):
            score = eval_score(figure["command"], policy, file, capsys)
            assert abs(score - figure["score"]) <= SCORE_TOLERANCE, (figure, file)


@pytest.mark.parametrize("policy", packaged_policies.catalog(), ids=lambda p: p.name)
def test_a_shipped_policy_loads_exports_and_gives_its_cards_figures(
        policy: PackagedPolicy, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    missing = policy.missing()
    if missing:
        pytest.skip(f"{policy.name} is not packaged yet: no {', '.join(missing)} in "
                    f"{packaged_policies.FOLDER} (scripts/package_policies.py makes them)")
    check_packaged(policy, tmp_path, capsys)


# ---------------------------------------------------------------- names, with files or without

@pytest.fixture
def packaged_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty packaged folder holding the real catalog: every name, no files yet."""
    folder = tmp_path / "packaged"
    folder.mkdir()
    shutil.copyfile(packaged_policies.CATALOG_FILE, folder / "catalog.toml")
    monkeypatch.setattr(packaged_policies, "FOLDER", folder)
    monkeypatch.setattr(packaged_policies, "CATALOG_FILE", folder / "catalog.toml")
    return folder


def fake_package(folder: Path, name: str) -> Path:
    """NAME's three files in folder: a small random policy, its export, a card (no figures)."""
    torch.manual_seed(1)
    LstmPolicy(hidden_size=8, head="log_change").save(folder / f"{name}.pt")
    assert main(["export", str(folder / f"{name}.pt"), "-o", str(folder / f"{name}.onnx"),
                 "--no-check"]) == 0
    (folder / f"{name}.toml").write_text(f'name = "{name}"\nheadline = "score -1.50 here"\n')
    return folder / f"{name}.pt"


def test_the_catalog_names_the_three_reference_policies() -> None:
    assert packaged_policies.names() == ["generalist", "cellular", "quick"]


@pytest.mark.parametrize("scheme, message", [
    ("lstm:generalst", "lstm:generalst: no such run folder, policy file or packaged policy "
                       "(packaged: generalist, cellular, quick"),
    ("lstm:generalist", "lstm:generalist: the packaged policy is not there yet (no "
                        "generalist.pt, generalist.onnx, generalist.toml"),
])
def test_an_unknown_or_absent_name_is_one_line_naming_the_packaged_ones(
        packaged_folder: Path, scheme: str, message: str, capsys: pytest.CaptureFixture,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in (["eval", "--link", "rate_mbps=12,delay_ms=20", "--schemes", scheme],
                 ["suite", "--policies", scheme, "--estimate-only"],
                 ["export", scheme.removeprefix("lstm:"), "-o", "out.onnx"],
                 ["run", "--link", "rate_mbps=12,delay_ms=20", "--scheme", scheme]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and message in err, (argv, err)
    assert not (tmp_path / "out.onnx").exists()


def test_a_name_resolves_to_its_packaged_files_and_a_real_path_comes_first(
        packaged_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture) -> None:
    pt = fake_package(packaged_folder, "quick")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    # The C++ sender gets the shipped ONNX, the simulator the PyTorch file beside it.
    schemes = resolve_scheme("lstm:quick", work)
    assert schemes.sender == f"lstm:{pt.with_suffix('.onnx')}"
    assert schemes.simulator == f"lstm:{pt}"
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20", "--duration-s", "2",
                 "--schemes", "lstm:quick,cubic", "--no-progress"]) == 0
    # Exporting a packaged policy never writes over its shipped export.
    before = pt.with_suffix(".onnx").read_bytes()
    assert main(["export", "quick"]) == 2
    assert "give -o OUT.onnx" in capsys.readouterr().err
    assert pt.with_suffix(".onnx").read_bytes() == before
    # ./quick, a run folder of that name, shadows the packaged quick.
    torch.manual_seed(2)
    (work / "quick").mkdir()
    LstmPolicy(hidden_size=4, head="classes").save(work / "quick" / "policy.pt")
    schemes = resolve_scheme("lstm:quick", work)
    assert schemes.simulator == "lstm:quick/policy.pt"


def test_policies_lists_each_with_one_line_and_its_headline(
        packaged_folder: Path, capsys: pytest.CaptureFixture) -> None:
    fake_package(packaged_folder, "cellular")
    capsys.readouterr()
    assert main(["policies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["lstm:generalist", "lstm:cellular",
                                                   "lstm:quick"]
    assert "score -1.50 here" in lines[1]
    assert "not packaged yet" in lines[0] and "not packaged yet" in lines[2]
    assert lines[0].endswith("(runs as lstm:generalist:compete=bbr:first=cubic:restart=1)")
    assert "runs as" not in lines[1]
    assert main(["policies", "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [e["present"] for e in entries] == [False, True, False]
    assert [e["options"] for e in entries] == ["compete=bbr:first=cubic:restart=1", "", ""]
    assert entries[1]["onnx"] == str(packaged_folder / "cellular.onnx")
    assert main(["policies", "cellular"]) == 0
    assert 'headline = "score -1.50 here"' in capsys.readouterr().out
    assert main(["policies", "quick"]) == 2
    assert "not there yet" in capsys.readouterr().err


def test_the_suite_scores_the_packaged_policies_there_are_by_default(
        packaged_folder: Path, capsys: pytest.CaptureFixture) -> None:
    fake_package(packaged_folder, "quick")
    capsys.readouterr()
    tiny = ["suite", "--groups", "held-out-grid", "--schemes", "cubic", "--no-oracle",
            "--estimate-only"]
    assert main(tiny) == 0
    out = capsys.readouterr().out
    assert "policies: lstm:quick (the packaged ones there are" in out and "x 2 schemes" in out
    assert main([*tiny, "--policies", "none"]) == 0
    out = capsys.readouterr().out
    assert "lstm:" not in out and "x 1 scheme " in out


# ---------------------------------------------------------------- scripts/package_policies.py

def quick_run(out: Path, seed: int) -> Path:
    """A run folder of the quick config as `ccgym train quick` leaves it, with an untrained
    policy (what is packaged is the files, not the training)."""
    config = load_packaged_config("quick")
    folder = RunFolder.create(out, "quick", seed)
    folder.write_config(with_overrides(config, **{"run.seed": seed}))
    folder.write_machine()
    torch.manual_seed(seed)
    LstmPolicy(hidden_size=8, head=config.model.head).save(folder.policy)
    return folder.path


def package(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True,
                          text=True, timeout=900)


def test_the_script_packages_runs_into_files_that_pass_the_shipped_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    run = quick_run(tmp_path / "runs", 1)
    out = tmp_path / "packaged"
    done = package("quick", str(run), "--out", str(out), "--commit", "0123abc")
    assert done.returncode == 0, done.stderr
    card = read_toml(out / "quick.toml")
    assert (card["config"], card["seeds"]) == ("quick", [1])
    machine = json.loads((run / "machine.json").read_text())
    assert card["commit"] == (machine.get("commit") or "0123abc")
    assert card["runs"][0]["machine"]["libraries"] == machine["libraries"]
    assert card["training_config"]["run"]["name"] == "quick"
    assert card["headline"].startswith("score ")
    monkeypatch.setattr(packaged_policies, "FOLDER", out)
    check_packaged(packaged_policies.find("quick"), tmp_path, capsys)


def test_the_script_refuses_runs_that_are_not_the_catalogs_and_writes_nothing(
        tmp_path: Path) -> None:
    runs = [quick_run(tmp_path / "runs", seed) for seed in (1, 2)]
    out = tmp_path / "packaged"
    for arguments, message in (
            (["quick", str(runs[1])], "made from seeds [1] of quick, the runs given are seeds [2]"),
            (["generalist", str(runs[0])], "a run of quick, but generalist is made from "
                                           "mixed-shared"),
            (["quick", str(tmp_path)], "not a run folder"),
            (["nosuch", str(runs[0])], "no such run folder, policy file or packaged policy")):
        done = package(*arguments, "--out", str(out), "--commit", "0123abc")
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr
        assert not out.exists()


def test_machine_json_names_the_commit_of_the_checkout_that_trained() -> None:
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True)
    if head.returncode != 0:
        pytest.skip("not run from a git checkout of ccgym")
    assert machine_description()["commit"].removesuffix("-dirty") == head.stdout.strip()


def test_a_packaged_name_reads_the_catalog_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ccgym.policies.policy_path import resolve_policy_path

    reads = []
    real_catalog = packaged_policies.catalog

    def counted() -> list[PackagedPolicy]:
        reads.append(1)
        return real_catalog()

    monkeypatch.setattr(packaged_policies, "catalog", counted)
    assert resolve_policy_path("quick") == packaged_policies.FOLDER / "quick.pt"
    assert len(reads) == 1
