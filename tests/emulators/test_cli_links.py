"""`ccgym links`: through ccgym.cli.main, as a user runs it (0 on success, 2 on bad input)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ccgym.cli import main
from ccgym.emulators import generate

# The shared recorded data, beside the project unless CCGYM_DATA says otherwise.
SHARED_DATA = Path(os.environ.get("CCGYM_DATA")
                   or Path(__file__).resolve().parents[3] / "shared" / "data")
PACKAGED_COUNTS = {"cellular-generated": 8, "cellular-real": 7, "held-out-grid": 35, "indigo-synthetic": 24,
                   "pantheon-calibrated": 6, "pantheon-pathological": 12, "poisson-generated": 8}


@pytest.fixture(autouse=True)
def trace_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "traces"


def core() -> None:
    pytest.importorskip("ccgym.emulators._core")


def table_rows(out: str) -> dict[str, list[str]]:
    """First column -> the other columns, for the lines of a printed table."""
    return {cells[0]: cells[1:] for cells in (line.split() for line in out.splitlines()) if cells}


@pytest.mark.parametrize("argv", [["links"], ["links", "list"]])
def test_lists_packaged_sets(argv, capsys):
    assert main(argv) == 0
    rows = table_rows(capsys.readouterr().out)
    for name, count in PACKAGED_COUNTS.items():
        assert rows[name][:2] == [name, str(count)]


def test_help_does_not_crash(capsys):
    assert main(["links", "show", "--help"]) == 0
    assert "500 ms" in capsys.readouterr().out


def test_generate_writes_data_and_ack_traces(tmp_path, capsys):
    out_dir = tmp_path / "gen"
    argv = ["links", "generate", "--out", str(out_dir), "--count", "2", "--mean-mbps", "6",
            "--duration-s", "20", "--seed", "5"]
    assert main(argv) == 0
    printed = capsys.readouterr().out.split()
    expected = [out_dir / f"cellular-6mbps-seed{seed}{suffix}"
                for seed in (5, 6) for suffix in (".down", ".up")]
    assert [Path(p) for p in printed] == expected
    for path in expected:
        stamps = np.loadtxt(path, dtype=np.int64)
        assert np.all(np.diff(stamps) >= 0) and stamps[-1] == 20_000
    down = np.loadtxt(expected[0], dtype=np.int64)
    up = np.loadtxt(expected[1], dtype=np.int64)
    np.testing.assert_array_equal(down, generate.generate_cellular_trace(6.0, 20, 5))
    assert not np.array_equal(down, up), "the ACK trace is an independent draw"


def test_generate_is_reproducible(tmp_path, capsys):
    for name in ("a", "b"):
        argv = ["links", "generate", "--out", str(tmp_path / name), "--duration-s", "10"]
        assert main(argv) == 0
    capsys.readouterr()
    for suffix in (".down", ".up"):
        file = f"cellular-8mbps-seed0{suffix}"
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()


@pytest.mark.parametrize("flags, message", [
    (["--count", "0"], "--count"),
    (["--mean-mbps", "-1"], "--mean-mbps"),
    (["--duration-s", "0"], "--duration-s"),
    (["--seed", "-3"], "--seed"),
])
def test_generate_bad_flags_exit_2_and_write_nothing(tmp_path, capsys, flags, message):
    out_dir = tmp_path / "gen"
    assert main(["links", "generate", "--out", str(out_dir), *flags]) == 2
    assert message in capsys.readouterr().err
    assert not out_dir.exists()


def test_unknown_set_exits_2(capsys):
    assert main(["links", "list", "no-such-set"]) == 2
    assert "packaged sets:" in capsys.readouterr().err


def test_show_without_a_link_exits_2(capsys):
    assert main(["links", "show"]) == 2
    assert "--links SET" in capsys.readouterr().err


def test_bad_toml_exits_2_naming_the_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('group = "g"\n[[link]]\nname = "x"\nrate_mbs = 3\n')
    assert main(["links", "list", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "rate_mbs" in err


def test_show_unknown_name_exits_2(capsys):
    assert main(["links", "show", "no-such-link"]) == 2
    assert "no-such-link" in capsys.readouterr().err


# ---------------------------------------------------------------- with the C++ core

def test_list_a_set(capsys):
    core()
    assert main(["links", "list", "indigo-synthetic"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert len(rows) == 1 + 24  # header + links
    assert rows["synthetic-5mbps-10ms"][0].startswith("name=synthetic-5mbps-10ms,")


def test_show_a_spec(capsys):
    core()
    assert main(["links", "show", "rate_mbps=12,delay_ms=10"]) == 0
    (row,) = [cells for name, cells in table_rows(capsys.readouterr().out).items()
              if name.startswith("rate_mbps=12")]
    mean, p5, p50, p95, outage, min_rtt, bdp = map(float, row[:7])
    assert mean == pytest.approx(12.0, abs=0.01)
    assert p5 == p50 == p95 == pytest.approx(12.0, abs=0.05)
    assert outage == 0 and min_rtt == 20 and bdp == pytest.approx(20.0, abs=0.1)


def test_show_a_set_as_json(tmp_path, capsys):
    core()
    out = tmp_path / "stats.json"
    assert main(["links", "show", "--links", "pantheon-pathological", "--json", str(out)]) == 0
    result = json.loads(out.read_text())["links"]
    assert len(result) == 12
    by_name = {r["name"]: r["statistics"] for r in result}
    policer = by_name["policer-12-rtt100"]
    assert policer["mean_mbps"] == pytest.approx(12.0, rel=1e-3)
    assert policer["min_rtt_ms"] == 100 and policer["bdp_packets"] == pytest.approx(100, rel=1e-3)


def test_show_poisson_process_is_seeded(capsys):
    core()
    spec = "rate_mbps=12,delivery=poisson,delay_ms=10"
    means = []
    for seed in ("1", "1", "2"):
        assert main(["links", "show", spec, "--json", "-", "--seed", seed]) == 0
        (stats,) = [r["statistics"] for r in json.loads(capsys.readouterr().out)["links"]]
        assert stats["mean_mbps"] == pytest.approx(12.0, rel=0.05)
        assert stats["window_mbps_percentiles"]["p5"] < stats["window_mbps_percentiles"]["p95"]
        means.append(stats["mean_mbps"])
    assert means[0] == means[1] != means[2]


def test_show_json_to_standard_output_puts_the_table_on_standard_error(capsys):
    core()
    assert main(["links", "show", "rate_mbps=12,delay_ms=10", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["links"][0]["statistics"]["mean_mbps"] == pytest.approx(12, rel=1e-3)
    assert "MEAN" in captured.err and "rate_mbps=12" in captured.err


def test_show_a_packaged_link_by_name(capsys):
    core()
    assert main(["links", "show", "aws-ca-mexico"]) == 0
    mean = float(table_rows(capsys.readouterr().out)["aws-ca-mexico"][0])
    assert mean == pytest.approx(114.68, abs=0.01)


def test_show_a_generated_cellular_link(capsys):
    core()
    assert main(["links", "show", "cellular-8mbps-seed4", "--json", "-"]) == 0
    (stats,) = [r["statistics"] for r in json.loads(capsys.readouterr().out)["links"]]
    assert stats["mean_mbps"] == pytest.approx(8.0, rel=0.05)
    assert stats["process"]["kind"] == "trace"


@pytest.mark.skipif(not (SHARED_DATA / "traces").is_dir(),
                    reason=f"shared data not found at {SHARED_DATA} (set CCGYM_DATA)")
def test_show_the_contest_link(monkeypatch, capsys):
    core()
    monkeypatch.setenv("CCGYM_DATA", str(SHARED_DATA))
    assert main(["links", "show", "verizon-lte-short", "--json", "-"]) == 0
    (stats,) = [r["statistics"] for r in json.loads(capsys.readouterr().out)["links"]]
    # The numbers of the data README's table.
    assert stats["mean_mbps"] == pytest.approx(5.03, abs=0.005)
    assert stats["outage_fraction"] == pytest.approx(0.007, abs=0.0005)
    assert stats["min_rtt_ms"] == 40


def test_show_bad_spec_exits_2(capsys):
    core()
    assert main(["links", "show", "rate_mbs=12,delay_ms=10"]) == 2
    err = capsys.readouterr().err
    assert "rate_mbs" in err and "rate_mbps" in err
