"""One self-contained HTML page for a set of results: figures embedded, no network needed.

INPUT are `ccgym eval --json` and `ccgym run --json` files (leaderboards per link under the
omniscient bound, the throughput-delay plane, the summary over links), `ccgym calibrate
--json` files (the fitted link, replication error per scheme, measured vs calibrated),
training run folders (hyperparameters, loss, expert agreement, validation score against the
oracle and the best baseline, train vs validation, final leaderboard; several runs are also
compared side by side) and `--plots` folders (throughput and delay over time). Examples:

  ccgym eval --links indigo-synthetic --json eval.json --plots plots/
  ccgym report eval.json plots/ runs/quick__1__20260101-120000 -o report.html
  xdg-open report.html          # or any browser: the file is the whole report
"""

from __future__ import annotations

import argparse

from ccgym import flags
from ccgym.analysis.html_report import build_report, read_inputs
from ccgym.files import atomic_write_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="eval/run/calibrate JSON files, training run folders, plots folders")
    parser.add_argument("-o", "--output", metavar="HTML", type=flags.output_file,
                        default="report.html", help="the page to write (default report.html)")
    parser.add_argument("--title", default="ccgym report", help="the page's title")


def run(args: argparse.Namespace) -> int:
    inputs = read_inputs(args.inputs)
    page = build_report(inputs, args.title)
    atomic_write_text(args.output, page)
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB): open it in a browser")
    return 0
