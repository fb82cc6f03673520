"""Score every classic scheme, the oracle and your trained policies on every packaged
evaluation group, under the omniscient bound: one leaderboard over the whole suite, as
Pantheon's report gave one.

The groups: pantheon-calibrated and pantheon-pathological (Pantheon's emulators),
indigo-synthetic (Indigo's training grid), held-out-grid (constant links between and beyond
it), cellular-real and recorded-unseen (recorded traces: they need the shared data, $CCGYM_DATA
or ../shared/data, and are skipped with a line saying so without it). The schemes: every
classic scheme of the catalog (`ccgym schemes` lists them) with its published defaults, the
oracle (each link's ideal window), and the packaged policies (`ccgym policies`:
lstm:generalist, lstm:cellular, lstm:quick, those whose files are there) or the policies given
with --policies. Each link runs as `ccgym eval --links GROUP` runs it: a trace once, any other
link 30 s, unless --duration-s.

Before any work it prints the suite's size and an estimate of its time on this machine; then a
progress bar. At the end, a summary table per group: each scheme's mean score over the group's
links, its mean gap to the omniscient bound's score, and its wins (links where it scored best
among the baselines and policies). --json writes every per-link row and the summaries;
`ccgym report SUITE.json` renders them as HTML. The whole suite takes minutes on two cores
(a policy adds its inference; the estimate says how long here); narrow it with --groups,
--schemes, --duration-s. Examples:

  ccgym suite --json suite.json
  ccgym suite --policies lstm:runs/quick --json suite.json   # the newest run of `ccgym train quick`
  ccgym suite --policies none --groups held-out-grid         # the baselines alone
  ccgym suite --groups pantheon-calibrated,held-out-grid --schemes cubic,bbr,copa --duration-s 10
  ccgym report suite.json -o suite.html
"""

from __future__ import annotations

import argparse
import os
import time

from ccgym import flags
from ccgym.errors import UserError
from ccgym.policies import packaged_policies

NO_POLICIES = "none"  # --policies none: the baselines and the oracle alone


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--groups", metavar="G1,G2",
                        help="comma-separated groups to run (default: the six above)")
    parser.add_argument("--schemes", metavar="S1,S2",
                        help="comma-separated classic schemes, name or name:key=value:... "
                             "(default: every scheme of the catalog, with its defaults)")
    parser.add_argument("--policies", metavar="lstm:DIR,...", default=None,
                        help="trained policies to score beside the baselines: lstm:RUN_FOLDER, "
                             "lstm:FILE.pt, lstm:FILE.onnx or lstm:NAME (a packaged policy), "
                             "comma-separated; `none` for no policy (default: the packaged "
                             "policies there are, `ccgym policies`). `ccgym train NAME` "
                             "(a packaged config: quick, indigo, cellular, mixed) writes a run "
                             "folder runs/NAME__SEED__TIME/ to give here")
    parser.add_argument("--no-oracle", action="store_true",
                        help="leave out the oracle (the slowest scheme: it is decided in Python "
                             "every 10 ms)")
    parser.add_argument("--runs", type=flags.count(1), default=1,
                        help="runs per scheme and link, seeds seed..seed+runs-1")
    parser.add_argument("--duration-s", type=flags.duration_s, default=None,
                        help="run length of every link (default: a trace once, else 30 s)")
    parser.add_argument("--seed", type=flags.seed, default=1, help="first seed")
    parser.add_argument("--json", metavar="OUT", type=flags.output_file,
                        help="write the suite (every row, the summaries, the options) as JSON")
    parser.add_argument("--estimate-only", action="store_true",
                        help="print the size and the time estimate, run nothing")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def scheme_lists(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(classic schemes, policies) from the flags, checked: each known, none twice."""
    from ccgym.analysis.cli_eval import parse_schemes
    from ccgym.analysis.evaluate import validate_schemes
    from ccgym.analysis.suite import ORACLE, classic_schemes
    from ccgym.emulators import _core

    classic = (parse_schemes(args.schemes) if args.schemes is not None else classic_schemes())
    for scheme in classic:
        try:
            _core.validate_classic_scheme(scheme)
        except ValueError as e:
            raise UserError(f"--schemes: {e}; policies go in --policies") from e
    if args.policies is None:
        policies = [f"lstm:{p.name}" for p in packaged_policies.present()]
    elif args.policies.strip() == NO_POLICIES:
        policies = []
    else:
        policies = parse_schemes(args.policies, "--policies")
    for policy in policies:
        if policy == ORACLE or policy in classic:
            raise UserError(f"--policies: {policy} is a scheme the suite runs already")
        if not policy.startswith("lstm:"):
            raise UserError(f"--policies: {policy!r} is not lstm:RUN_FOLDER|FILE.pt|FILE.onnx")
    validate_schemes(policies)  # loads each policy now: a bad file fails before any run
    return classic, policies


def command_line(args: argparse.Namespace) -> str:
    """The `ccgym suite` command that reruns this suite (output flags left out)."""
    import shlex

    words = ["ccgym", "suite"]
    for flag, value in (("--groups", args.groups), ("--schemes", args.schemes),
                        ("--policies", args.policies), ("--duration-s", args.duration_s)):
        if value is not None:
            words += [flag, f"{value:g}" if isinstance(value, float) else value]
    words += ["--runs", str(args.runs)] if args.runs != 1 else []
    words += ["--seed", str(args.seed)] if args.seed != 1 else []
    words += ["--no-oracle"] if args.no_oracle else []
    return shlex.join(words)


def run(args: argparse.Namespace) -> int:
    from ccgym.analysis import suite
    from ccgym.files import atomic_write_json

    groups = suite.parse_groups(args.groups)
    classic, policies = scheme_lists(args)
    schemes = classic + ([] if args.no_oracle else [suite.ORACLE]) + policies
    if args.policies is None:
        print(f"policies: {', '.join(policies) or 'none'} (the packaged ones there are; "
              f"--policies none leaves them out)", flush=True)
    plan = suite.make_plan(groups, args.duration_s)
    estimates = suite.link_costs(plan, suite.calibrate(schemes), args.runs)
    estimate_s = sum(estimates.values())
    print(suite.describe_work(plan, schemes, args.runs, estimate_s), flush=True)
    if args.estimate_only:
        return 0
    load = os.getloadavg()[0]
    start = time.monotonic()
    rows = suite.run_suite(plan, schemes, args.runs, args.seed, args.duration_s, estimates,
                           progress=not args.no_progress)
    wall_s = time.monotonic() - start
    options = {"groups": list(plan.groups), "schemes": classic, "oracle": not args.no_oracle,
               "policies": policies, "duration_s": args.duration_s, "runs": args.runs,
               "seed": args.seed, "command": command_line(args)}
    doc = suite.suite_document(rows, plan, options, estimate_s, wall_s, load)
    print()
    print(suite.format_tables(doc, suite.render_text), end="")
    print(f"\nwall time {suite.span(wall_s)} (estimated {suite.span(estimate_s)})")
    if args.json:
        atomic_write_json(args.json, doc)
        print(f"wrote {args.json}: `ccgym report {args.json}` renders it")
    return 0
