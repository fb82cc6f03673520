"""`ccgym oracle` end to end, through the console script's main()."""

import json
import math

import pytest

from ccgym.cli import main

LINK_12 = "rate_mbps=12,delay_ms=20"


def test_one_link_table_and_json(tmp_path, capsys):
    out = tmp_path / "oracle.json"
    assert main(["oracle", "--link", LINK_12, "--duration-s", "2", "--json", str(out),
                 "--no-progress"]) == 0
    [row] = json.loads(out.read_text())
    assert set(row) == {"link", "bdp_packets", "ideal_window", "margin", "lookback", "score",
                        "bdp_score"}
    assert row["bdp_packets"] == pytest.approx(40)
    assert row["ideal_window"] == pytest.approx(40) and row["margin"] is None
    assert row["score"] == row["bdp_score"]
    table = capsys.readouterr().out
    assert "BDP (pkts)" in table and "40.0" in table


def test_link_set_reports_every_link(tmp_path):
    links = tmp_path / "set.toml"
    links.write_text('group = "t"\n'
                     '[[link]]\nname = "plain"\nrate_mbps = 12\ndelay_ms = 20\n'
                     '[[link]]\nname = "small-buffer"\nrate_mbps = 12\ndelay_ms = 20\n'
                     'queue = "droptail:packets=5"\n')
    out = tmp_path / "oracle.json"
    assert main(["oracle", "--links", str(links), "--duration-s", "2", "--json", str(out),
                 "--no-progress"]) == 0
    rows = {row["link"]: row for row in json.loads(out.read_text())}
    assert set(rows) == {"plain", "small-buffer"}
    assert rows["small-buffer"]["score"] >= rows["small-buffer"]["bdp_score"]


def test_bad_spec_exits_2_naming_the_key(tmp_path, capsys):
    out = tmp_path / "oracle.json"
    assert main(["oracle", "--link", "rate_mbs=12,delay_ms=20", "--json", str(out)]) == 2
    assert "rate_mbs" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("deliveries", ["0\n1\n2\n", "5\n6\n7\n"])
def test_a_three_delivery_trace_scores_as_eval_scores_the_oracle(deliveries, tmp_path,
                                                                 capsys) -> None:
    """`ccgym oracle` and `ccgym eval --schemes oracle` plan the window over the same run (its
    --duration-s, not the trace once) and so give one finite score."""
    trace = tmp_path / "three.trace"
    trace.write_text(deliveries)
    link = f"trace={trace},delay_ms=20"
    oracle_json, eval_json = tmp_path / "oracle.json", tmp_path / "eval.json"
    assert main(["oracle", "--link", link, "--duration-s", "2", "--no-progress",
                 "--json", str(oracle_json)]) == 0
    assert main(["eval", "--link", link, "--schemes", "oracle", "--duration-s", "2",
                 "--no-progress", "--json", str(eval_json)]) == 0
    [oracle_row] = json.loads(oracle_json.read_text())
    eval_row = next(r for r in json.loads(eval_json.read_text()) if r["scheme"] == "oracle")
    assert math.isfinite(oracle_row["score"])
    assert oracle_row["score"] == pytest.approx(eval_row["score"], abs=1e-6)
    # Its default length (the trace once: a few ms) is too short to measure, as eval says.
    capsys.readouterr()
    assert main(["oracle", "--link", link, "--no-progress"]) == 2
    assert "shorter than 2 minimum RTTs" in capsys.readouterr().err
