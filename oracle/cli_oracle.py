"""The ideal window of each link (the oracle DAgger imitates) and how well it scores.

For each link: the bandwidth-delay product (rate x min RTT, in 1500-byte packets); the
oracle's window: the BDP on a constant-rate link with an infinite queue and no loss, the
best fixed window by search elsewhere, and on a trace link a time-varying window (the
opportunities of one min RTT, counted `lookback` of it behind now, times a margin; both
found by search) unless the best fixed window scores higher; the contest score of the
oracle's window and of the BDP. A trace link runs its trace once, other links 30 s, as
`ccgym eval` runs them. Searches are cached in $CCGYM_CACHE/oracle.

examples:
  ccgym oracle --link rate_mbps=12,delay_ms=20,queue=droptail:packets=20
  ccgym oracle --links indigo-synthetic --json oracle.json
"""

from __future__ import annotations

import argparse
import math

from tqdm import tqdm

from ccgym import flags
from ccgym.emulators.link_names import add_link_arguments, input_files, resolve_links
from ccgym.envs.scoring import check_run_length, link_duration_ms
from ccgym.files import atomic_write_json, check_not_input, human_stream
from ccgym.oracle.ideal import OracleSummary, summarize_link

HEADERS = ("link", "BDP (pkts)", "ideal window", "score", "BDP score")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_link_arguments(parser, "rate_mbps=12,delay_ms=20,loss=0.01")
    parser.add_argument("--seed", type=flags.seed, default=1, help="simulation seed (default 1)")
    parser.add_argument("--duration-s", type=flags.duration_s, default=None,
                        help="run length of each search run (default: a trace once, else 30 s)")
    parser.add_argument("--json", metavar="OUT", type=flags.output_file,
                        help="write a JSON list of {link, bdp_packets, ideal_window, margin, "
                             "lookback, score, bdp_score} ('-': standard output)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    links = resolve_links(args.link, args.links)
    check_not_input(args.json, input_files(links, args.links), "--json")
    duration_ms = None if args.duration_s is None else args.duration_s * 1000.0

    for link in links:  # as `ccgym eval` checks them: a run too short to measure is refused
        check_run_length(link, link_duration_ms(link, args.duration_s))
    summaries = []
    for link in tqdm(links, desc="oracle", unit="link", disable=args.no_progress, leave=False):
        summaries.append(summarize_link(link.name, link.spec, args.seed, duration_ms))
    print(format_table(summaries), file=human_stream(args.json))
    if args.json:
        atomic_write_json(args.json, [s.to_dict() for s in summaries])
    return 0


def _ideal_text(summary: OracleSummary) -> str:
    if summary.margin is not None:
        return f"time-varying, margin {summary.margin:g}, lookback {summary.lookback:g}"
    return f"{summary.ideal_window:.1f}"


def _score_text(score: float) -> str:
    return f"{score:.3f}" if math.isfinite(score) else str(score)


def format_table(summaries: list[OracleSummary]) -> str:
    rows = [list(HEADERS)] + [
        [s.link, f"{s.bdp_packets:.1f}", _ideal_text(s), _score_text(s.score),
         _score_text(s.bdp_score)]
        for s in summaries]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w)
                       for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
