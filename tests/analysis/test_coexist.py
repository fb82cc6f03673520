"""`ccgym eval --against`: schemes beside competitors on one bottleneck in virtual time, the
harm they do to cubic, shared-bottleneck link sets, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ccgym.analysis.coexist import harm, make_lineup, run_lineup
from ccgym.cli import main
from ccgym.emulators.link_names import find_link_set, link_from_spec
from ccgym.emulators.links import load_link_set

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A DropTail of 1 BDP (80 packets) at 24 Mbit/s and 20 ms: the first case of shared-bottleneck.
SHARED = "rate_mbps=24,delay_ms=20,queue=droptail:packets=80"


def eval_json(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "rows.json"
    assert main(["eval", *args, "--no-progress", "--json", str(out)]) == 0
    return json.loads(out.read_text())


def row_of(rows: list[dict], scheme: str) -> dict:
    [row] = [r for r in rows if r["scheme"] == scheme]
    return row


def test_two_equal_fixed_windows_split_a_constant_link_evenly(tmp_path: Path) -> None:
    # Two windows of 30 on a 40-packet BDP: together above it, so the link is full and each
    # flow, with the same window over the same RTT, gets half of it.
    rows = eval_json(tmp_path, "--link", "rate_mbps=12,delay_ms=20", "--schemes", "fixed:30",
                     "--against", "fixed:30", "--duration-s", "5")
    row = row_of(rows, "fixed:30")
    assert [f["scheme"] for f in row["flows"]] == ["fixed:30", "fixed:30"]
    for flow in row["flows"]:
        assert flow["share"] == pytest.approx(0.5, abs=0.03)
        assert flow["throughput_mbps"] == pytest.approx(6, rel=0.06)
    assert row["jain_index"] == pytest.approx(1, abs=0.005)
    assert row["utilization"] == pytest.approx(1, abs=0.03)
    assert row["against"] == ["fixed:30"]


def test_unequal_fixed_windows_split_by_window(tmp_path: Path) -> None:
    # Windows of 20 and 60 (sum twice the BDP) share one queue, so each gets rate in
    # proportion to its window: 1/4 and 3/4, and Jain's index (1 + 3)^2 / (2 (1 + 9)) = 0.8.
    rows = eval_json(tmp_path, "--link", "rate_mbps=12,delay_ms=20", "--schemes", "fixed:20",
                     "--against", "fixed:60", "--duration-s", "5", "--first", "scheme")
    row = row_of(rows, "fixed:20")
    evaluated, other = row["flows"]
    assert evaluated["evaluated"] and not other["evaluated"]
    assert evaluated["share"] == pytest.approx(0.25, abs=0.03)
    assert row["jain_index"] == pytest.approx(0.8, abs=0.03)
    # The row's own figures are the evaluated flow's.
    assert row["throughput_mbps"] == pytest.approx(evaluated["throughput_mbps"])


def test_rows_give_each_flows_share_while_both_send(tmp_path: Path) -> None:
    # The window of 20 joins 2 s after the window of 60: over the run it holds less than its
    # quarter, over the overlap after the 5 s ramp its quarter.
    rows = eval_json(tmp_path, "--link", "rate_mbps=12,delay_ms=20", "--schemes", "fixed:20",
                     "--against", "fixed:60", "--duration-s", "12", "--interval-s", "2")
    late, first = sorted(row_of(rows, "fixed:20")["flows"], key=lambda f: not f["evaluated"])
    assert late["evaluated"] and late["share"] < 0.22
    assert late["share_overlap"] == pytest.approx(0.25, abs=0.01)
    assert first["share_overlap"] == pytest.approx(0.75, abs=0.01)


def test_harm_of_cubic_against_cubic_is_zero_and_an_aggressive_flow_harms(tmp_path: Path,
                                                                          capsys) -> None:
    rows = eval_json(tmp_path, "--link", SHARED, "--schemes", "cubic,fixed:400,vegas",
                     "--against", "cubic", "--duration-s", "10", "--runs", "2")
    cubic, greedy, vegas = (row_of(rows, s) for s in ("cubic", "fixed:400", "vegas"))
    assert cubic["harm_throughput"] == 0 and cubic["harm_delay"] == 0
    # A window of 5 BDPs keeps the buffer full: the cubic flow beside it gets far less than
    # beside another cubic flow.
    assert greedy["harm_throughput"] > 0.3
    for row in (cubic, greedy, vegas):
        assert row["harm_flow"] == 0  # the competitor starts first, as flow 0
        assert 0 <= row["harm_throughput"] <= 1 and 0 <= row["harm_delay"] <= 1
    assert "harm to cubic: throughput 0%" in capsys.readouterr().out


def test_harm_matches_its_definition_on_the_runs() -> None:
    link = link_from_spec(SHARED)
    lineup = make_lineup("cubic", ["cubic"], "competitors")
    baseline = run_lineup(link, "cubic", lineup, [1], 8000.0, 0.0)[0]
    with_bbr = run_lineup(link, "bbr", lineup, [1], 8000.0, 0.0)[0]
    base_flow, bbr_flow = baseline.metrics.flows[0], with_bbr.metrics.flows[0]
    expected = (base_flow["throughput_mbps"] - bbr_flow["throughput_mbps"]) \
        / base_flow["throughput_mbps"]
    assert harm([with_bbr], [baseline], 0)["harm_throughput"] == pytest.approx(max(0, expected))
    assert with_bbr.flow_schemes == ("cubic", "bbr")


def test_starts_are_staggered_in_the_chosen_order(tmp_path: Path) -> None:
    link = link_from_spec(SHARED)
    for first, evaluated in (("scheme", 0), ("competitors", 2)):
        lineup = make_lineup("vegas", ["cubic", "bbr"], first)
        [run] = run_lineup(link, "vegas", lineup, [1], 6000.0, 1000.0)
        assert run.flow_schemes[evaluated] == "vegas"
        for flow in range(3):
            first_send = np.min(run.log["send_ms"][run.log["flow"] == flow])
            assert first_send == pytest.approx(1000.0 * flow, abs=1.0)


def test_a_learned_policy_runs_beside_cubic(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from ccgym.policies.lstm import LstmPolicy

    torch.manual_seed(3)
    LstmPolicy(hidden_size=8).save(tmp_path / "policy.pt")
    scheme = f"lstm:{tmp_path / 'policy.pt'}"
    rows = eval_json(tmp_path, "--link", SHARED, "--schemes", scheme, "--against", "cubic",
                     "--duration-s", "3", "--interval-s", "0.5")
    row = row_of(rows, scheme)
    assert [f["scheme"] for f in row["flows"]] == ["cubic", scheme]
    assert sum(f["share"] for f in row["flows"]) == pytest.approx(1, abs=1e-6)
    assert row["flows"][1]["throughput_mbps"] > 0
    assert "harm_throughput" in row


def test_plots_draw_each_flow(tmp_path: Path) -> None:
    plots = tmp_path / "plots"
    eval_json(tmp_path, "--link", SHARED, "--schemes", "vegas", "--against", "cubic",
              "--duration-s", "3", "--plots", str(plots))
    throughput = sorted(plots.glob("*__throughput.png"))
    assert len(throughput) == 1 and throughput[0].read_bytes().startswith(PNG_SIGNATURE)


def test_the_shared_bottleneck_set_runs_each_case_beside_its_competitors(tmp_path: Path) -> None:
    links = load_link_set(find_link_set("shared-bottleneck"))
    assert len(links) >= 4 and all(link.competitors for link in links)
    rows = eval_json(tmp_path, "--links", "shared-bottleneck", "--schemes", "cubic",
                     "--duration-s", "2")
    for link in links:
        row = next(r for r in rows if r["link"] == link.name and r["scheme"] == "cubic")
        assert [f["scheme"] for f in row["flows"]] == [*link.competitors, "cubic"]
        assert row["harm_throughput"] == 0


START_SET = """group = "g"
[[link]]
name = "own-start"
rate_mbps = 12
delay_ms = 20
competitors = ["cubic"]
first = "scheme"
interval_s = 1.5
[[link]]
name = "no-start"
rate_mbps = 12
delay_ms = 20
competitors = ["cubic"]
"""


def test_a_link_set_gives_each_link_its_own_start_and_flags_override_it(tmp_path: Path) -> None:
    path = tmp_path / "set.toml"
    path.write_text(START_SET)
    rows = eval_json(tmp_path, "--links", str(path), "--schemes", "vegas", "--duration-s", "4")
    own = next(r for r in rows if r["link"] == "own-start" and r["scheme"] == "vegas")
    plain = next(r for r in rows if r["link"] == "no-start" and r["scheme"] == "vegas")
    assert (own["evaluated_flow"], own["interval_s"]) == (0, 1.5)
    assert [f["scheme"] for f in own["flows"]] == ["vegas", "cubic"]
    assert (plain["evaluated_flow"], plain["interval_s"]) == (1, 0.0)
    rows = eval_json(tmp_path, "--links", str(path), "--schemes", "vegas", "--duration-s", "4",
                     "--first", "competitors", "--interval-s", "0.5")
    for row in (r for r in rows if r["scheme"] == "vegas"):
        assert (row["evaluated_flow"], row["interval_s"]) == (1, 0.5)


@pytest.mark.parametrize("keys, message", [
    ('competitors = ["cubic"]\nfirst = "me"\n', "first must be one of competitors, scheme"),
    ('competitors = ["cubic"]\ninterval_s = -1\n', "interval_s must be a number of seconds"),
    ('competitors = ["cubic"]\ninterval_s = "5"\n', "interval_s must be a number of seconds"),
    ('first = "scheme"\n', "this link has no competitors"),
    ('competitors = ["nosuch"]\n', "link shared (#1): competitors: unknown scheme 'nosuch'"),
    ('competitors = "cubic"\n', "link shared (#1): competitors must be a list of scheme names"),
    ('competitors = ["external"]\n', "competitors: 'external' is not a classic scheme"),
])
def test_a_bad_start_or_competitor_in_a_link_set_is_one_line(tmp_path: Path, capsys, keys: str,
                                                             message: str) -> None:
    path = tmp_path / "set.toml"
    path.write_text(f'group = "g"\n[[link]]\nname = "shared"\nrate_mbps = 12\ndelay_ms = 20\n'
                    f"{keys}")
    out = tmp_path / "rows.json"
    assert main(["eval", "--links", str(path), "--schemes", "cubic", "--no-progress",
                 "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and f"{path}: link shared (#1)" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--against", "nosuch"], "--against nosuch: unknown scheme 'nosuch' (valid: fixed"),
    (["--against", "cubic:foo=1"], "--against cubic:foo=1: scheme 'cubic': unknown parameter"),
    (["--against", "cubic,"], "--against 'cubic,': an empty item"),
    (["--against", "lstm:runs/x"], "--against lstm:runs/x: a competitor must be a classic"),
    (["--against", "kernel:cubic"], "kernel TCP competes in real time"),
    (["--against", "cubic", "--flows", "2"], "--flows 2 with competitors"),
    (["--against", "cubic", "--schemes", "oracle"], "--schemes oracle: its ideal window"),
    (["--against", "cubic,cubic", "--interval-s", "2"], "the last flow would start at 4 s"),
])
def test_bad_against_is_one_line_and_exit_2(tmp_path: Path, capsys, args: list[str],
                                            message: str) -> None:
    out = tmp_path / "rows.json"
    argv = ["eval", "--link", SHARED, "--duration-s", "3", "--no-progress", "--json", str(out)]
    if "--schemes" not in args:
        argv += ["--schemes", "cubic"]
    assert main(argv + args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
