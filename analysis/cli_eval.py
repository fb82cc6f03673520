"""Score congestion-control schemes on emulated links: the 6.829 contest's leaderboard.

For each link, one row per scheme — throughput (Mbit/s), 95th-percentile one-way
delay, 95% end-to-end ("signal") delay, score = ln(Mbit/s) - ln(ms), utilization
and loss — under the omniscient bound. A trace link runs its trace once; other
links run 30 s. Examples:

  ccgym eval --link rate_mbps=12,delay_ms=20,queue=droptail:packets=100
  ccgym eval --links indigo-synthetic --schemes cubic,bbr,vegas --runs 3 --json out.json
  ccgym eval --link rate_mbps=24,delay_ms=20 --schemes cubic --flows 3 --interval-s 10
  ccgym eval --link rate_mbps=24,delay_ms=20,queue=droptail:packets=80 --schemes vegas,bbr \
      --against cubic --interval-s 5 --first competitors
  ccgym eval --links shared-bottleneck --schemes lstm:runs/quick,cubic,bbr --runs 3
  ccgym eval --link rate_mbps=12,delay_ms=20 --schemes lstm:generalist,cubic

With --against (or a link set whose links name `competitors`), each scheme shares the
bottleneck with the competitors' flows: its row gives its own flow's figures, each flow's
share of the bytes (`share`: of the run; `share_overlap`: while all flows send, from the last
start plus a 5 s ramp, which does not charge a flow that starts later for its absence) and
Jain's index, and beside cubic the harm it does to that cubic flow against what a second
cubic flow would do (Ware et al., HotNets 2019). The flows start as --first and --interval-s
say, else as a link's own `first` and `interval_s` in its link set, else the competitors
first, all at once.
"""

from __future__ import annotations

import argparse

from ccgym import flags
from ccgym.analysis.coexist import FIRST_CHOICES, evaluate_shared, parse_against
from ccgym.analysis.evaluate import evaluate, write_outputs
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.emulators.link_names import add_link_arguments, input_files, resolve_links
from ccgym.errors import UserError
from ccgym.policies.schemes import baseline_schemes
from ccgym.files import check_not_input, human_stream

DEFAULT_SCHEMES = ",".join(baseline_schemes())  # every classic scheme, as `ccgym schemes` lists
# Flows sharing one bottleneck: beyond this a table of shares says little and a run is slow.
MAX_FLOWS = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_link_arguments(parser, "rate_mbps=12,delay_ms=20' or 'trace=FILE,delay_ms=20")
    parser.add_argument("--schemes", default=DEFAULT_SCHEMES,
                        help="comma-separated schemes: classic ones (name or name:key=value:...), "
                             f"oracle, lstm:runs/NAME|FILE.pt|FILE.onnx, lstm:generalist (a packaged "
                             f"policy, `ccgym policies`) (default: {DEFAULT_SCHEMES})")
    parser.add_argument("--runs", type=flags.count(1, flags.MAX_RUNS), default=1,
                        help="runs per scheme and link, seeds seed..seed+runs-1")
    parser.add_argument("--duration-s", type=flags.duration_s, default=None,
                        help="run length (default: a trace once, else 30 s)")
    parser.add_argument("--flows", type=flags.count(1, MAX_FLOWS), default=1,
                        help="flows of each scheme sharing the bottleneck")
    parser.add_argument("--interval-s", type=flags.nonnegative_s, default=None,
                        help="seconds between flow starts (of --flows, or beside competitors: "
                             "default a link's own interval_s in its link set, else 0); every "
                             "flow must start before the run ends")
    parser.add_argument("--against", metavar="SCHEME[,SCHEME...]",
                        help="classic schemes whose flows share the bottleneck with each "
                             "evaluated scheme (one may repeat: cubic,cubic); overrides a link "
                             "set's competitors")
    parser.add_argument("--first", choices=FIRST_CHOICES, default=None,
                        help="with competitors: which starts first, the competitors (the "
                             "evaluated flow joins last) or the evaluated scheme; the others "
                             "follow --interval-s apart (default: a link's own first in its "
                             "link set, else competitors)")
    parser.add_argument("--seed", type=flags.seed, default=1, help="first seed")
    flags.add_row_outputs(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    schemes = parse_schemes(args.schemes)
    links = resolve_links(args.link, args.links)
    check_not_input(args.json, input_files(links, args.links), "--json")
    against = parse_against(args.against) if args.against is not None else None
    shared = against is not None or any(link.competitors for link in links)
    if args.interval_s and args.flows == 1 and not shared:
        raise UserError(f"--interval-s {args.interval_s:g}: there is one flow, so nothing "
                        "starts after it; give --flows N or --against SCHEME")
    if shared:
        rows, runs = evaluate_shared(links, schemes, against, first=args.first, runs=args.runs,
                                     seed=args.seed, duration_s=args.duration_s,
                                     interval_s=args.interval_s, progress=not args.no_progress,
                                     flows=args.flows)
    else:
        rows, runs = evaluate(links, schemes, runs=args.runs, seed=args.seed,
                              duration_s=args.duration_s, flows=args.flows,
                              interval_s=args.interval_s or 0.0, progress=not args.no_progress)
    print(format_leaderboard(rows), file=human_stream(args.json))
    write_outputs(rows, runs, args.json, args.plots, args.force)
    return 0


def parse_schemes(text: str, flag: str = "--schemes") -> list[str]:
    """The comma-separated list of a --schemes flag: no empty item, no scheme twice."""
    schemes = [s.strip() for s in text.split(",")]
    if not any(schemes):
        raise UserError(f"{flag} is empty; e.g. {flag} cubic,bbr,vegas")
    if not all(schemes):
        raise UserError(f"{flag} {text!r}: an empty item (a stray ',')")
    seen = set()
    for scheme in schemes:
        if scheme in seen:
            raise UserError(f"{flag} {text!r}: {scheme} is given twice")
        seen.add(scheme)
    return schemes
