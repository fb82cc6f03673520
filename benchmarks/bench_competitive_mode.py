"""Does a learned flow's competitive mode (`lstm:POLICY:compete=SCHEME`) stay off alone?

Runs the policy alone on each link of a link set (default pantheon-calibrated, each link's
default length, as `ccgym eval --links SET` does) without the mode (`compete=none`) and with
it under each classic scheme given, and prints, per link and on average, the score of each and
the fraction of the flow's decisions made in competitive mode (the issue's "a competitive mode
must not switch on alone"). Prints one JSON object; the load average is beside the figures.

    .venv/bin/python benchmarks/bench_competitive_mode.py [--policy generalist]
        [--links pantheon-calibrated] [--compete cubic,bbr:first=cubic:restart=1] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.link_names import resolve_links
from ccgym.emulators.links import Link
from ccgym.envs.scoring import link_duration_ms, run_flows_stepped, score_simulation
from ccgym.errors import UserError
from ccgym.policies.lstm_scheme import LstmScheme
from ccgym.policies.policy_path import NO_MODE, with_policy_options


def run_alone(link: Link, argument: str, seed: int) -> dict[str, float]:
    """One run of the policy alone on `link`: its score and the fraction of its decisions in
    competitive mode (0 without the mode)."""
    duration_ms = link_duration_ms(link, None)
    sim = _core.Simulator(link.spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], seed)
    run_flows_stepped([sim], [link], [seed], lambda: LstmScheme(argument),
                      {0: (0.0, duration_ms)}, duration_ms, threads=1)
    metrics, _, _ = score_simulation(sim, duration_ms)
    mode = sim.competitive_mode(0)
    fraction = mode["competing_decisions"] / mode["decisions"] if mode["decisions"] else 0.0
    return {"score": float(metrics.score), "competing_fraction": float(fraction)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="generalist", help="as after lstm:")
    parser.add_argument("--links", default="pantheon-calibrated", help="a link set")
    parser.add_argument("--compete", default="cubic,bbr",
                        help="classic schemes, comma-separated, each with the mode's other "
                             "options after it if any (bbr:first=cubic:restart=1)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    # Without the mode: compete=none, as a packaged policy's catalog may give one.
    variants = [with_policy_options(args.policy, {"compete": NO_MODE})]
    variants += [with_policy_options(args.policy, {"compete": c.strip()})
                 for c in args.compete.split(",") if c.strip()]
    links = resolve_links(None, args.links)
    per_link = {link.name: {v: run_alone(link, v, args.seed) for v in variants} for link in links}
    mean = {v: {key: float(np.mean([r[v][key] for r in per_link.values()]))
                for key in ("score", "competing_fraction")} for v in variants}
    print(json.dumps({"links": args.links, "seed": args.seed, "load": os.getloadavg()[0],
                      "mean": mean, "per_link": per_link}, indent=2))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        print(f"bench_competitive_mode: {e}", file=sys.stderr)
        sys.exit(2)
