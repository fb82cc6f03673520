"""Does a trained policy hold its fair share beside others? Issue 46's shared-link figures.

Parts (--only; the kernel part only when asked):
  pair    In the simulator, one competitor flow (--competitors: cubic, bbr) starts first,
          the policy --stagger-s (5 s) after it, on each link of `shared-bottleneck` (24
          Mbit/s 20 ms DropTail 1 and 4 BDPs, 12 Mbit/s 40 ms 2 BDPs, 48 Mbit/s 10 ms 0.5
          BDP): the policy's share of the bytes delivered while both send, from the later
          start plus a 5 s ramp (measure.metrics.overlap_shares), goal 0.40-0.60; beside
          cubic, the harm it does to that cubic flow against what a second cubic flow does
          (Ware et al.: analysis/coexist.py), goal no worse than cubic's (harm <= 0.05).
  three   Three flows of the policy on one link, starting at 0, 1/6 and 1/3 of the run
          (0, 10, 20 s of 60) and stopping in reverse order at 2/3 and 5/6 (40 and 50 s;
          the first runs to the end), on a constant link (24 Mbit/s 20 ms, DropTail 1 BDP),
          a generated cellular trace (cellular-generated's 12 Mbit/s) and, where the shared
          data is, a recorded one (cellular-real's tmobile-lte-short, 14 Mbit/s): Jain's
          index over the flows' bytes while all three send (after the ramp), goal >= 0.95,
          and Astraea's convergence (measure/sharing.py): after each join and leave, the
          time until every flow stays within 10% of its fair share (capacity / flows on the
          constant link; on a trace the mean of the flows' rates, trivially met by one
          flow), rates over windows of --window-ms (500 ms); the worst of the four
          changes, goal <= 5 s. A change that never settles counts as the whole span to
          the next change (`details` gives each change).
  kernel  Real time through the link shell (needs root): kernel cubic and kernel bbr first,
          the policy (exported to ONNX, in the C++ sender) --stagger-s after, on the 1 and
          4 BDP links: the policy's share over the overlap, goal >= 0.35. --duration-s of
          real time per case; not in tests.

Each figure is given per policy (the same config at several seeds: --policy runs/A runs/B),
with its mean and spread (min, max) over them; `met` says whether the mean meets the goal.
The classic schemes (cubic, bbr, vegas, copa; in the kernel part kernel cubic) in the
policy's place are reference rows (--no-baselines: none). A table to stderr; one JSON object
to stdout. About 25 s per policy and 15 s for the references on a quiet core (pair, three);
the kernel part four runs of --duration-s in real time per policy and for the reference.

  python benchmarks/bench_coexist.py --policy runs/A [runs/B ...] [--duration-s 60]
      [--only pair,three] [--kernel]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.analysis.coexist import harm, make_lineup, parse_against, run_lineup
from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec, resolve_links
from ccgym.emulators.links import Link, data_dir
from ccgym.envs.scoring import (run_flows_stepped, stepped_scheme_factory,
                                validate_simulated_schemes)
from ccgym.errors import UserError
from ccgym.measure.metrics import jain_index, overlap_shares
from ccgym.measure.sharing import CONVERGENCE_WINDOW_MS, convergence

PARTS = ("pair", "three", "kernel")
COMPETITORS = ("cubic", "bbr")
BASELINES = ("cubic", "bbr", "vegas", "copa")
KERNEL_BASELINES = ("kernel:cubic",)  # real time: one reference, what the goal compares with
SHARE_GOAL = (0.40, 0.60)
HARM_GOAL = 0.05  # no worse than a cubic flow's harm, within this
JAIN_GOAL = 0.95
CONVERGENCE_GOAL_S = 5.0
KERNEL_SHARE_GOAL = 0.35
CONSTANT = "name=constant-24mbps-20ms-1bdp,rate_mbps=24,delay_ms=20,queue=droptail:packets=80"
GENERATED = ("cellular-generated", "cellular-12mbps-seed5")
RECORDED = ("cellular-real", "tmobile-lte-short")
KERNEL_LINKS = ("shared-24mbps-20ms-1bdp", "shared-24mbps-20ms-4bdp")
STARTS = (0.0, 1 / 6, 1 / 3)  # of the run, for the three flows
STOPS = (None, 5 / 6, 2 / 3)  # None: to the end


@dataclass
class Figure:
    """One figure of one case: each policy's value, the baselines', the goal."""

    part: str
    case: str
    figure: str
    goal: str
    meets: Callable[[float], bool] = field(repr=False)
    per_policy: dict[str, float | None] = field(default_factory=dict)
    baselines: dict[str, float | None] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # per scheme, where a figure has parts

    def summary(self) -> dict[str, Any]:
        per_policy = {k: _known(v) for k, v in self.per_policy.items()}
        baselines = {k: _known(v) for k, v in self.baselines.items()}
        values = [v for v in per_policy.values() if v is not None]
        mean = float(np.mean(values)) if values else None
        return {"part": self.part, "case": self.case, "figure": self.figure, "goal": self.goal,
                "mean": mean, "min": min(values) if values else None,
                "max": max(values) if values else None, "per_policy": per_policy,
                "baselines": baselines,
                "met": mean is not None and self.meets(mean),
                "policies_meeting": sum(self.meets(v) for v in values),
                **({"details": self.details} if self.details else {})}


def between(low: float, high: float = 1.0) -> Callable[[float], bool]:
    return lambda v: low <= v <= high


def at_most(limit: float) -> Callable[[float], bool]:
    return lambda v: v <= limit


def evaluated_share(run: Any, flow: int) -> float:
    return float(next(f["share_overlap"] for f in run.metrics.flows if f["flow"] == flow))


def pair_figures(schemes: Sequence[str], policies: Sequence[str], args: argparse.Namespace,
                 seed: int) -> list[Figure]:
    """Part `pair`: each scheme second beside each competitor on shared-bottleneck's links."""
    duration_ms, stagger_ms = args.duration_s * 1e3, args.stagger_s * 1e3
    figures = []
    for link in resolve_links(None, "shared-bottleneck"):
        for competitor in args.competitors:
            case = f"{link.name} vs {competitor}"
            lineup = make_lineup("cubic", [competitor], "competitors")
            share = Figure("pair", case, "share_overlap", f"{SHARE_GOAL[0]}-{SHARE_GOAL[1]}",
                           between(*SHARE_GOAL))
            harms = [Figure("pair", case, key, f"<= {HARM_GOAL}", at_most(HARM_GOAL))
                     for key in ("harm_throughput", "harm_delay")]
            victim = lineup.victim  # the cubic competitor; None beside bbr
            baseline = (run_lineup(link, "cubic", lineup, [seed], duration_ms, stagger_ms)
                        if victim is not None else [])
            for scheme in schemes:
                runs = run_lineup(link, scheme, lineup, [seed], duration_ms, stagger_ms)
                where = share.per_policy if scheme in policies else share.baselines
                where[scheme] = evaluated_share(runs[0], lineup.evaluated)
                if victim is not None:
                    hurt = harm(runs, baseline, victim)
                    for figure in harms:
                        side = figure.per_policy if scheme in policies else figure.baselines
                        side[scheme] = hurt[figure.figure]
            figures += [share, *harms] if victim is not None else [share]
    return figures


def three_links() -> list[Link]:
    """The constant link first, then the traces."""
    links = [link_from_spec(CONSTANT)]
    wanted = [GENERATED] + ([RECORDED] if data_dir() is not None else [])
    for group, name in wanted:
        links += [link for link in resolve_links(None, group) if link.name == name]
    return links


def three_flows(links: Sequence[Link], scheme: str, seed: int,
                duration_ms: float) -> list[Any]:
    """Three flows of `scheme` on each link (STARTS, STOPS); the simulators, run. A learned
    policy steps each flow from its start to its stop, its own state per flow."""
    starts = [s * duration_ms for s in STARTS]
    stops = [None if s is None else s * duration_ms for s in STOPS]
    factory = stepped_scheme_factory(scheme)
    controller = _core.EXTERNAL_SCHEME if factory else scheme
    specs = [(controller, a, -1.0 if b is None else b) for a, b in zip(starts, stops)]
    sims = [_core.Simulator(link.spec, specs, seed) for link in links]
    if factory is None:
        _core.run_all_until(sims, duration_ms, 0)
        return sims
    spans = {f: (starts[f], stops[f] or duration_ms) for f in range(len(specs))}
    run_flows_stepped(sims, links, [seed] * len(sims), factory, spans, duration_ms, threads=1)
    return sims


def three_figures(schemes: Sequence[str], policies: Sequence[str], args: argparse.Namespace,
                  seed: int) -> list[Figure]:
    """Part `three`: Jain's index while all three send, the worst convergence time."""
    duration_ms = args.duration_s * 1e3
    links = three_links()
    starts = [s * duration_ms for s in STARTS]
    stops = [None if s is None else s * duration_ms for s in STOPS]
    jains = {link.name: Figure("three", link.name, "jain_index", f">= {JAIN_GOAL}",
                               between(JAIN_GOAL)) for link in links}
    converge = {link.name: Figure("three", link.name, "convergence_s",
                                  f"<= {CONVERGENCE_GOAL_S:g}", at_most(CONVERGENCE_GOAL_S))
                for link in links}
    for scheme in schemes:
        for i, (link, sim) in enumerate(zip(links, three_flows(links, scheme, seed,
                                                                duration_ms))):
            log = sim.log()
            opportunities = sim.opportunities() if i == 0 else None  # the constant link's
            changes = convergence(log, starts, stops, duration_ms, opportunities,
                                  window_ms=args.window_ms)
            worst = max((c.convergence_ms if c.convergence_ms is not None else c.span_ms)
                        for c in changes) / 1e3
            jain = jain_index(list(overlap_shares(log, duration_ms).values()))
            side = "per_policy" if scheme in policies else "baselines"
            getattr(jains[link.name], side)[scheme] = jain
            getattr(converge[link.name], side)[scheme] = worst
            converge[link.name].details[scheme] = [
                {"at_s": c.at_ms / 1e3, "flows": c.flows,
                 "convergence_s": None if c.convergence_ms is None else c.convergence_ms / 1e3}
                for c in changes]
    return [f for link in links for f in (jains[link.name], converge[link.name])]


def kernel_figures(schemes: Sequence[str], policies: Sequence[str],
                   args: argparse.Namespace, seed: int) -> list[Figure]:
    """Part `kernel`: each scheme second beside kernel cubic and bbr, through the shell."""
    from ccgym.deploy.harness import resolve_scheme
    from ccgym.deploy.shell import run_in_shell, unavailable_reason

    reason = unavailable_reason()
    if reason:
        print(f"bench_coexist: no kernel part: {reason}", file=sys.stderr)
        return []
    links = [link for link in resolve_links(None, "shared-bottleneck")
             if link.name in KERNEL_LINKS]
    figures = []
    for link in links:
        for competitor in COMPETITORS:
            figure = Figure("kernel", f"{link.name} vs kernel:{competitor}", "share_overlap",
                            f">= {KERNEL_SHARE_GOAL}", between(KERNEL_SHARE_GOAL))
            for scheme in schemes:
                with tempfile.TemporaryDirectory(prefix="bench-coexist-") as tmp:
                    sender = (scheme if scheme.startswith("kernel:")
                              else resolve_scheme(scheme, Path(tmp)).sender)
                    run = run_in_shell(link.spec, [f"kernel:{competitor}", sender],
                                       args.duration_s, seed, Path(tmp),
                                       interval_s=args.stagger_s)
                side = figure.per_policy if scheme in policies else figure.baselines
                side[scheme] = overlap_shares(run.log, run.duration_ms).get(1)
            figures.append(figure)
    return figures


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _known(value: float | None) -> float | None:
    """JSON has no NaN: an unmeasured figure (no bytes in the overlap) is None."""
    return None if value is None or math.isnan(value) else float(value)


def print_table(rows: Sequence[dict[str, Any]]) -> None:
    baselines = list(dict.fromkeys(b for r in rows for b in r["baselines"]))
    header = (f"{'part':<6} {'case':<42} {'figure':<15} {'goal':<9} {'mean':>6} "
              f"{'min':>6} {'max':>6} {'met':<4}" + "".join(f" {b:>6}" for b in baselines))
    print(header, file=sys.stderr)
    for r in rows:
        line = (f"{r['part']:<6} {r['case'][:42]:<42} {r['figure']:<15} {r['goal']:<9} "
                f"{_cell(r['mean']):>6} {_cell(r['min']):>6} {_cell(r['max']):>6} "
                f"{'yes' if r['met'] else 'NO':<4}")
        line += "".join(f" {_cell(r['baselines'].get(b)):>{max(6, len(b))}}" for b in baselines)
        print(line, file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", nargs="+", required=True,
                        help="run folders or lstm:RUN_DIR|FILE.pt (one config's seeds)")
    parser.add_argument("--duration-s", type=float, default=60.0, help="each run")
    parser.add_argument("--stagger-s", type=float, default=5.0,
                        help="how long after the competitor the policy starts (pair, kernel)")
    parser.add_argument("--only", default="pair,three",
                        help=f"comma-separated parts of {','.join(PARTS)} (default pair,three)")
    parser.add_argument("--kernel", action="store_true", help="add the kernel part (root)")
    parser.add_argument("--no-baselines", action="store_true",
                        help="skip the classic schemes' reference rows")
    parser.add_argument("--window-ms", type=float, default=CONVERGENCE_WINDOW_MS,
                        help="convergence: rates over windows this long (three)")
    parser.add_argument("--seed", type=int, default=1, help="the simulator's seed")
    parser.add_argument("--competitors", default=",".join(COMPETITORS),
                        help="the classic schemes that start first in part pair, "
                             "comma-separated (default %(default)s; e.g. bbr3,copa,vivace)")
    args = parser.parse_args()
    args.competitors = parse_against(args.competitors, "--competitors")
    parts = {p.strip() for p in args.only.split(",") if p.strip()} | (
        {"kernel"} if args.kernel else set())
    if parts - set(PARTS):
        parser.error(f"--only: unknown parts {sorted(parts - set(PARTS))}; parts: {PARTS}")
    policies = [p if p.startswith("lstm:") else f"lstm:{p}" for p in args.policy]
    validate_simulated_schemes(policies)  # a bad run folder fails now, in one line
    schemes = [*policies, *([] if args.no_baselines else BASELINES)]
    figures: list[Figure] = []
    if "pair" in parts:
        figures += pair_figures(schemes, policies, args, args.seed)
    if "three" in parts:
        figures += three_figures(schemes, policies, args, args.seed)
    if "kernel" in parts:
        figures += kernel_figures([*policies, *([] if args.no_baselines else KERNEL_BASELINES)],
                                  policies, args, args.seed)
    rows = [f.summary() for f in figures]
    print_table(rows)
    print(json.dumps({"policies": policies, "duration_s": args.duration_s,
                      "stagger_s": args.stagger_s, "seed": args.seed, "cases": rows},
                     indent=2))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        print(f"bench_coexist: {e}", file=sys.stderr)
        sys.exit(2)
