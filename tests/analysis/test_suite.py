"""`ccgym suite`: its JSON and summaries, the estimate before the work, groups skipped without
the shared data, bad flags, and its section in `ccgym report`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch

from ccgym.analysis.suite import SUITE_GROUPS
from ccgym.cli import main
from ccgym.emulators import _core
from ccgym.policies.lstm import LstmPolicy

TINY = ["--groups", "pantheon-calibrated", "--schemes", "cubic,vegas", "--duration-s", "2",
        "--no-progress"]


def run_suite(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["suite", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[dict, str]:
    """One group, two schemes, the oracle and an untrained policy (a policy file as
    `ccgym train` writes one), 2 s runs."""
    folder = tmp_path_factory.mktemp("suite")
    torch.manual_seed(3)
    LstmPolicy(hidden_size=8).save(folder / "policy.pt")
    code, printed, _ = run_suite(*TINY, "--policies", f"lstm:{folder}", "--json",
                                 str(folder / "suite.json"))
    assert code == 0
    return json.loads((folder / "suite.json").read_text()), printed


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_summary_matches_rows(tiny) -> None:
    doc, _ = tiny
    rows = doc["rows"]
    links = {r["link"] for r in rows}
    assert len(links) == 6 and {r["group"] for r in rows} == {"pantheon-calibrated"}
    policy = doc["options"]["policies"][0]
    assert {r["scheme"] for r in rows} == {"omniscient", "oracle", "cubic", "vegas", policy}
    assert len(rows) == 5 * len(links)
    summary = doc["summary"]["pantheon-calibrated"]
    assert summary["links"] == 6
    entries = {e["scheme"]: e for e in summary["schemes"]}
    bound = {r["link"]: r["score"] for r in rows if r["scheme"] == "omniscient"}
    for scheme, entry in entries.items():
        mine = [r for r in rows if r["scheme"] == scheme]
        assert entry["mean_score"] == pytest.approx(_mean([r["score"] for r in mine]))
        if scheme != "omniscient":
            gaps = [bound[r["link"]] - r["score"] for r in mine]
            assert entry["mean_gap"] == pytest.approx(_mean(gaps))
    # Wins: per link, the best of the baselines and the policy (not the oracle, not the bound).
    contestants = ("cubic", "vegas", policy)
    score = {(r["link"], r["scheme"]): r["score"] for r in rows}
    for scheme in contestants:
        assert entries[scheme]["wins"] == sum(
            all(score[link, scheme] > score[link, other] for other in contestants
                if other != scheme) for link in links)
    assert entries["oracle"]["wins"] is None and entries["omniscient"]["role"] == "bound"
    assert entries[policy]["role"] == "policy" and entries["cubic"]["role"] == "baseline"
    best = max(("cubic", "vegas"), key=lambda s: entries[s]["mean_score"])
    assert summary["best_baseline"] == best
    assert [e["scheme"] for e in summary["schemes"]][0] == "omniscient"


def test_estimate_is_printed_before_the_work(tiny, tmp_path: Path) -> None:
    _, printed = tiny
    lines = printed.splitlines()
    estimate = next(i for i, line in enumerate(lines) if line.startswith("estimate: about"))
    table = next(i for i, line in enumerate(lines) if line.startswith("scheme "))
    assert lines[0].startswith("suite: 1 group, 6 links x 4 schemes") and estimate < table
    assert " against it" in printed  # the policy's margin over the best baseline
    out = tmp_path / "never.json"
    code, printed, _ = run_suite(*TINY, "--estimate-only", "--json", str(out))
    assert code == 0 and "estimate: about" in printed
    assert not any(line.startswith("scheme ") for line in printed.splitlines())
    assert not out.exists()


def test_every_catalog_scheme_is_in_the_suite_by_default(tmp_path: Path) -> None:
    out = tmp_path / "suite.json"
    code, _, _ = run_suite("--groups", "pantheon-calibrated", "--duration-s", "1",
                           "--no-oracle", "--no-progress", "--policies", "none",
                           "--json", str(out))
    assert code == 0
    catalog = {entry["name"] for entry in _core.scheme_catalog()} - {_core.EXTERNAL_SCHEME}
    rows = json.loads(out.read_text())["rows"]
    assert {r["scheme"] for r in rows} == catalog | {"omniscient"}


def test_group_needing_absent_shared_data_is_skipped(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "absent"))
    out = tmp_path / "suite.json"
    code, printed, _ = run_suite("--groups", "cellular-real,pantheon-calibrated", "--schemes",
                                 "fixed", "--no-oracle", "--duration-s", "1", "--no-progress",
                                 "--policies", "none", "--json", str(out))
    assert code == 0
    assert f"skipping cellular-real: it needs the shared data: $CCGYM_DATA={tmp_path / 'absent'}" \
        in printed
    doc = json.loads(out.read_text())
    assert [s["group"] for s in doc["skipped"]] == ["cellular-real"]
    assert {r["group"] for r in doc["rows"]} == {"pantheon-calibrated"}
    code, _, err = run_suite("--groups", "cellular-real", "--no-progress")
    assert code == 2 and "nothing to run" in err


def test_bad_group_names_the_valid_ones() -> None:
    code, printed, err = run_suite("--groups", "pantheon-calibrated,no-such-group")
    assert code == 2 and printed == ""
    assert "'no-such-group' is not an evaluation group" in err
    assert all(group in err for group in SUITE_GROUPS)


@pytest.mark.parametrize("flags, message", [
    (["--schemes", "cubicc"], "unknown scheme 'cubicc'"),
    (["--policies", "cubic"], "cubic is a scheme the suite runs already"),
    (["--policies", "lstm:/no/such/run"], "lstm:/no/such/run"),
])
def test_bad_schemes_fail_before_any_work(flags, message) -> None:
    code, printed, err = run_suite("--groups", "pantheon-calibrated", *flags)
    assert code == 2 and printed == "" and message in err


def test_report_renders_the_suite(tiny, tmp_path: Path) -> None:
    doc, _ = tiny
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(doc))
    page = tmp_path / "report.html"
    assert main(["report", str(path), "-o", str(page)]) == 0
    text = page.read_text()
    assert "<h3>pantheon-calibrated</h3>" in text
    mean = doc["summary"]["pantheon-calibrated"]["schemes"][1]["mean_score"]
    assert f"<td>{mean:.2f}</td>" in text
    assert all(f"<h4>{link}</h4>" in text for link in {r["link"] for r in doc["rows"]})
    del doc["rows"][0]["group"]
    path.write_text(json.dumps(doc))
    assert main(["report", str(path), "-o", str(page)]) == 2
