"""`ccgym oracle` end to end, through the console script's main()."""

import json

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
