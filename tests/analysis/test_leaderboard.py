"""The leaderboard's grouping, ordering and cells."""

from __future__ import annotations

from ccgym.analysis.leaderboard import format_leaderboard, format_summary


def row(link: str, scheme: str, score, **extra) -> dict:
    base = {"link": link, "scheme": scheme, "throughput_mbps": 4.0, "delay_p95_ms": 80.0,
            "e2e_delay_p95_ms": 100.0, "score": score, "utilization": 0.8, "loss": 0.01}
    return {**base, **extra}


def scheme_order(text: str, link: str) -> list[str]:
    """Scheme names of a link's block, in printed order (sub-rows are indented and skipped)."""
    block = text.split(f"link: {link}\n")[1].split("\n\n")[0]
    body = block.splitlines()[2:]  # after the header and the rule
    return [line.split()[0] for line in body if not line.startswith(" ")]


def test_groups_by_link_with_omniscient_on_top_then_best_score_first():
    rows = [
        row("verizon", "cubic", -4.9),
        row("tmobile", "sprout", -2.0),
        row("verizon", "sprout", -3.45),
        row("verizon", "omniscient", -2.31),
        row("verizon", "dead", None, throughput_mbps=0.0),
        row("verizon", "stalled", float("-inf")),
        row("verizon", "vegas", float("nan")),
    ]
    text = format_leaderboard(rows)
    assert text.index("link: verizon") < text.index("link: tmobile")
    order = scheme_order(text, "verizon")
    assert order[:4] == ["omniscient", "sprout", "cubic", "stalled"]
    assert set(order[4:]) == {"dead", "vegas"}  # no score: last
    assert scheme_order(text, "tmobile") == ["sprout"]


def test_cells_are_scaled_and_missing_values_dashed():
    text = format_leaderboard([row("l", "x", -1.234, utilization=0.5, loss=0.0123,
                                   delay_p95_ms=None)])
    header, _, line = text.splitlines()[1:4]
    for column in ("scheme", "Mbit/s", "p95 delay ms", "e2e p95 ms", "score", "util %", "loss %"):
        assert column in header
    cells = line.split()
    # x, Mbit/s, p95 (missing), e2e p95, score, util 50%, loss 1.23%
    assert cells == ["x", "4.00", "-", "100.0", "-1.23", "50.0", "1.23"]


def test_runs_and_score_spread():
    text = format_leaderboard([row("l", "bbr", -3.0, runs=5, score_std=0.25)])
    assert "bbr (5 runs)" in text
    assert "-3.00 ± 0.25" in text


def test_identical_runs_are_marked_and_explained_not_shown_as_zero_spread():
    text = format_leaderboard([row("l", "vegas", -2.0, runs=3, score_std=0.0),
                               row("l", "bbr", -3.0, runs=3, score_std=0.25)])
    assert "± 0.00" not in text
    assert "-2.00 (=)" in text and "-3.00 ± 0.25" in text
    assert "(=) every run gave the same score" in text


def test_no_spread_shown_for_a_single_run():
    text = format_leaderboard([row("l", "bbr", -3.0, runs=1, score_std=0.0)])
    assert "bbr (1 run)" in text
    assert "±" not in text


def test_per_flow_sub_rows():
    flows = [
        {"flow": 0, "throughput_mbps": 3.0, "share": 0.75, "delay_p95_ms": 70.0,
         "e2e_delay_p95_ms": 90.0, "score": -3.4},
        {"flow": 1, "throughput_mbps": 1.0, "share": 0.25, "delay_p95_ms": 75.0,
         "e2e_delay_p95_ms": 95.0, "score": -4.55},
    ]
    text = format_leaderboard([row("l", "cubic", -3.2, flows=flows, jain_index=0.8)])
    lines = text.splitlines()
    parent = next(i for i, line in enumerate(lines) if line.startswith("cubic"))
    assert "Jain 0.800" in lines[parent]
    assert "flow 0 (75.0% of bytes)" in lines[parent + 1]
    assert "flow 1 (25.0% of bytes)" in lines[parent + 2]
    assert "-4.55" in lines[parent + 2]
    assert "flow rows: Mbit/s and delays over each flow's own time" in text
    assert "share is of the bytes" in text


def test_flow_sub_rows_give_the_share_while_all_send():
    flows = [{"flow": 0, "share": 0.7, "share_overlap": 0.5},
             {"flow": 1, "share": 0.3, "share_overlap": None}]
    text = format_leaderboard([row("l", "cubic", -3.2, flows=flows, jain_index=0.9)])
    assert "flow 0 (70.0% of bytes, 50.0% while all send)" in text
    assert "flow 1 (30.0% of bytes)" in text  # no overlap measured: nothing claimed
    assert "'while all send' of those from the last start plus a 5 s ramp" in text


def test_columns_line_up_across_links():
    text = format_leaderboard([row("a", "x", -1.0), row("b", "a-much-longer-name", -2.0)])
    per_link, summary = text.split("summary over 2 links\n")
    headers = [line for line in per_link.splitlines() if line.startswith("scheme")]
    assert len(headers) == 2 and headers[0] == headers[1]
    assert summary == format_summary([row("a", "x", -1.0),
                                      row("b", "a-much-longer-name", -2.0)]).split("links\n")[1]


def test_no_rows():
    assert format_leaderboard([]) == ""


def summary_cells(text: str) -> dict[str, list[str]]:
    body = text.splitlines()[3:]  # after the title, the header and the rule
    return {line.split()[0]: line.split()[1:] for line in body}


def test_summary_means_gaps_and_wins_over_links():
    rows = [row("a", "omniscient", -1.0, utilization=1.0), row("a", "x", -2.0, utilization=0.9),
            row("a", "y", -3.0, utilization=0.5),
            row("b", "omniscient", 0.0, utilization=1.0), row("b", "x", -1.0, utilization=0.7),
            row("b", "y", -0.5, utilization=0.9)]
    text = format_summary(rows)
    assert text.startswith("summary over 2 links\n")
    cells = summary_cells(text)
    assert list(cells) == ["omniscient", "x", "y"]  # the bound on top, then best mean first
    # links, mean score, gap to bound, util %, e2e p95 ms, best on
    assert cells["x"] == ["2", "-1.50", "1.00", "80.0", "100.0", "1"]
    assert cells["y"] == ["2", "-1.75", "1.25", "70.0", "100.0", "1"]
    assert cells["omniscient"][2] == "-" and cells["omniscient"][5] == "-"


def test_summary_skips_missing_scores_and_needs_two_links():
    rows = [row("a", "x", -2.0), row("b", "x", float("nan"))]
    assert summary_cells(format_summary(rows))["x"][:3] == ["2", "-2.00", "-"]
    assert format_summary([row("a", "x", -2.0), row("a", "y", -1.0)]) == ""
