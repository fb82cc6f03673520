"""One self-contained HTML page for a set of results: figures embedded, no network needed.

INPUT are `ccgym eval --json` and `ccgym run --json` files (leaderboards per link under the
omniscient bound, the throughput-delay plane, the summary over links), `ccgym oracle --json`
files (each link's ideal window and its score), `ccgym calibrate --json` files (the fitted
link, replication error per scheme, measured vs calibrated), `ccgym search --json` files (the
worst links found, each trial's gap over rate x delay), training run folders
(hyperparameters, loss, expert agreement, validation score against the oracle and the best
baseline, train vs validation, final leaderboard; several runs are also compared side by
side) and `--plots` folders (throughput and delay over time; of a folder with more than 48
figures only the throughput-delay planes, with a link to its index.html). The page opens
with its contents and a summary, then the details. Examples:

  ccgym eval --links indigo-synthetic --json eval.json --plots plots/
  ccgym report eval.json plots/ runs/quick__* -o report.html
  xdg-open report.html          # or any browser: the file is the whole report
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ccgym import flags
from ccgym.analysis.html_report import build_report, read_inputs
from ccgym.files import atomic_write_text, check_not_input, human_stream, is_stdout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="eval/run/calibrate/search JSON files, training run folders, plots "
                             "folders")
    parser.add_argument("-o", "--output", metavar="HTML",
                        type=flags.output((".html", ".htm"), what="an HTML page"),
                        default="report.html",
                        help="the page to write (default report.html; '-': standard output); "
                             "never one of the inputs")
    parser.add_argument("--title", default="ccgym report", help="the page's title")


def run(args: argparse.Namespace) -> int:
    check_not_input(args.output, args.inputs, "-o")
    inputs = read_inputs(args.inputs)
    base = None if is_stdout(args.output) else Path(args.output).parent
    page = build_report(inputs, args.title, base)
    atomic_write_text(args.output, page)
    print(f"wrote {args.output} ({len(page) / 1e6:.1f} MB): open it in a browser",
          file=human_stream(args.output))
    return 0
