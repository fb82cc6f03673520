"""`ccgym eval`: the leaderboard, its JSON and plots, multi-flow runs, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccgym.cli import main
from ccgym.emulators.links import data_dir
from ccgym.policies.schemes import baseline_schemes

ROW_KEYS = {"link", "scheme", "throughput_mbps", "capacity_mbps", "utilization", "delay_p95_ms",
            "e2e_delay_p95_ms", "score", "loss"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def eval_json(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "rows.json"
    assert main(["eval", *args, "--no-progress", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_leaderboard_json_and_plots(tmp_path: Path, capsys) -> None:
    plots = tmp_path / "plots"
    rows = eval_json(tmp_path, "--link", "name=l12,rate_mbps=12,delay_ms=20", "--schemes",
                     "fixed:20,vegas", "--duration-s", "3", "--plots", str(plots))
    assert [r["scheme"] for r in rows] == ["omniscient", "fixed:20", "vegas"]
    assert all(ROW_KEYS <= set(r) for r in rows)
    assert rows[0]["throughput_mbps"] == pytest.approx(12, rel=0.01)
    # A window of 20 over a 40-packet BDP: half the capacity, no queue.
    fixed = rows[1]
    assert fixed["utilization"] == pytest.approx(0.5, abs=0.03)
    assert fixed["delay_p95_ms"] == pytest.approx(21, abs=1.5)
    printed = capsys.readouterr().out
    assert "omniscient" in printed and "vegas" in printed
    pngs = sorted(plots.glob("*.png"))
    assert len(pngs) == 5  # the plane, and throughput and delay per scheme
    assert all(p.read_bytes().startswith(PNG_SIGNATURE) for p in pngs)


def test_staggered_flows_report_each_flow(tmp_path: Path) -> None:
    rows = eval_json(tmp_path, "--link", "rate_mbps=24,delay_ms=20,queue=droptail:packets=200",
                     "--schemes", "cubic", "--flows", "2", "--interval-s", "1", "--duration-s", "6")
    [cubic] = [r for r in rows if r["scheme"] == "cubic"]
    assert [f["flow"] for f in cubic["flows"]] == [0, 1]
    assert sum(f["share"] for f in cubic["flows"]) == pytest.approx(1, abs=1e-6)
    assert 0.5 <= cubic["jain_index"] <= 1


def test_a_link_set_is_grouped_by_link_and_summarized(tmp_path: Path, capsys) -> None:
    rows = eval_json(tmp_path, "--links", "pantheon-calibrated", "--schemes", "fixed:20",
                     "--duration-s", "1")
    links = [r["link"] for r in rows]
    assert len(set(links)) == 6 and len(rows) == 12
    assert all(rows[i]["scheme"] == "omniscient" for i in range(0, 12, 2))
    summary = capsys.readouterr().out.split("summary over 6 links\n")[1]
    fixed = next(line for line in summary.splitlines() if line.startswith("fixed:20"))
    mean = sum(r["score"] for r in rows if r["scheme"] == "fixed:20") / 6
    assert fixed.split()[1:3] == ["6", f"{mean:.2f}"]


@pytest.mark.parametrize("spec, message", [
    ("rate_mbps=12,delay_ms=20,bogus=1", "unknown key 'bogus' (valid: name"),
    ("rate_mbps=12,delay_ms=20,queue=droptail:packets=abc", "key 'packets' must be an integer in [1,"),
    ("trace={empty},delay_ms=20", "empty.tr:1: empty trace"),
    ("trace={nonnum},delay_ms=20", "nonnum.tr:3: expected a non-negative integer"),
    ("trace={decreasing},delay_ms=20", "decreasing.tr:3: timestamp 3 is before"),
])
def test_bad_link_is_a_clear_error(tmp_path: Path, capsys, spec: str, message: str) -> None:
    traces = {"empty": "", "nonnum": "1\n2\nx\n", "decreasing": "1\n5\n3\n"}
    for name, text in traces.items():
        (tmp_path / f"{name}.tr").write_text(text)
    spec = spec.format(**{name: tmp_path / f"{name}.tr" for name in traces})
    out = tmp_path / "rows.json"
    assert main(["eval", "--link", spec, "--schemes", "cubic", "--duration-s", "1",
                 "--no-progress", "--json", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("schemes, message", [
    ("nosuch", "unknown scheme 'nosuch' (valid: fixed"),
    ("cubic:foo=1", "unknown parameter 'foo' (valid: c, beta, hystart, linux_rto)"),
])
def test_bad_scheme_is_a_clear_error(tmp_path: Path, capsys, schemes: str, message: str) -> None:
    out = tmp_path / "rows.json"
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20", "--schemes", schemes,
                 "--no-progress", "--json", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(data_dir() is None, reason="needs ../shared/data (the contest trace)")
def test_contest_link_runs_every_scheme(tmp_path: Path) -> None:
    trace = data_dir() / "traces" / "cellular" / "Verizon-LTE-short.down"
    spec = f"trace={trace},ack_trace={trace.with_suffix('.up')},delay_ms=20"
    rows = eval_json(tmp_path, "--link", spec, "--duration-s", "20")
    schemes = [r["scheme"] for r in rows]
    assert schemes[0] == "omniscient"
    assert set(schemes[1:]) == set(baseline_schemes())
    bound = rows[0]["score"]
    assert all(r["score"] <= bound + 1e-9 for r in rows[1:])
