"""Policies on a random family of links: each one's gap to the best classic baseline, link by
link, its mean and its worst decile.

Draws --count links at random from a link space (--space, --family-seed: the family `ccgym
links sample` writes for the same space, count and seed), runs every baseline and every policy
on every link once per run seed (each baseline once, its scores reused for every policy),
beside the link's competitor started as the link says, and scores each by its own flow's mean
score over the run seeds, as `ccgym search` does. A link's gap is the best baseline's score
minus the policy's (the search's objective: above 0, some classic scheme does better); the
worst decile is the mean of the largest tenth of the gaps (at least one).

Prints one JSON object on stdout (per policy its gaps in the order of `links`, their mean and
worst decile; the baselines' scores; wall time, in all and per scheme, and the machine's
load); progress on stderr.
Examples:

  python benchmarks/bench_family.py --policies lstm:generalist,lstm:quick --count 40
  python benchmarks/bench_family.py --policies lstm:runs/a,lstm:runs/b --family-seed 7 \\
      --family-out family.toml
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

from tqdm import tqdm

from ccgym.analysis.cli_eval import parse_schemes
from ccgym.analysis.coexist import check_shared, link_start
from ccgym.analysis.evaluate import validate_schemes
from ccgym.analysis.search import DEFAULT_BASELINES, gap_to_best, mean_score
from ccgym.emulators.link_space import (DEFAULT_SPACE, SAMPLE_GROUP, find_space, load_space,
                                        sample_link_set, sample_tables)
from ccgym.emulators.links import build_links
from ccgym.envs.scoring import check_flow_starts, link_duration_ms
from ccgym.errors import UserError

DEFAULT_RUN_SEEDS = "101,102"


def worst_decile(gaps: list[float]) -> float:
    """The mean of the largest tenth of the gaps (at least one gap)."""
    count = max(1, math.ceil(len(gaps) / 10))
    return sum(sorted(gaps, reverse=True)[:count]) / count


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def parse_args() -> tuple[argparse.Namespace, list[str], list[str], list[int]]:
    """The arguments, the policies, the baselines and the run seeds; a bad scheme is one
    line (argparse's error, exit 2) before any work."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", required=True,
                        help="comma-separated schemes to judge, e.g. lstm:generalist,lstm:runs/a")
    parser.add_argument("--space", default=DEFAULT_SPACE, help="a link space: file or name")
    parser.add_argument("--count", type=int, default=40, help="links in the family")
    parser.add_argument("--family-seed", type=int, default=1, help="the family's draw seed")
    parser.add_argument("--baselines", default=",".join(DEFAULT_BASELINES))
    parser.add_argument("--run-seeds", default=DEFAULT_RUN_SEEDS,
                        help=f"the runs' seeds, comma-separated (default {DEFAULT_RUN_SEEDS})")
    parser.add_argument("--duration-s", type=float, default=None,
                        help="run length (default: a generated trace once, else 30 s)")
    parser.add_argument("--family-out", metavar="FAMILY.toml",
                        help="also write the family as a link set (ccgym eval --links takes it)")
    args = parser.parse_args()
    try:
        policies = parse_schemes(args.policies, "--policies")
        baselines = parse_schemes(args.baselines, "--baselines")
        parse_schemes(",".join([*policies, *baselines]), "--policies and --baselines")
        check_shared([*policies, *baselines], flows=1)  # a family has competitors
        validate_schemes([*policies, *baselines])
    except UserError as e:
        parser.error(str(e))
    return args, policies, baselines, [int(s) for s in args.run_seeds.split(",")]


def score_family(links: list, durations_ms: list[float], schemes: list[str],
                 seeds: list[int]) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Each scheme's mean score on each link (in the links' order), and its seconds in all."""
    scores: dict[str, list[float]] = {scheme: [] for scheme in schemes}
    scheme_seconds = dict.fromkeys(schemes, 0.0)
    with tqdm(total=len(links) * len(schemes), desc="family", unit="scheme-link",
              file=sys.stderr) as bar:
        for link, duration_ms in zip(links, durations_ms):
            for scheme in schemes:
                bar.set_postfix_str(f"{link.name}: {scheme}", refresh=False)
                scheme_start = time.monotonic()
                scores[scheme].append(mean_score(link, scheme, seeds, duration_ms))
                scheme_seconds[scheme] += time.monotonic() - scheme_start
                bar.update()
    return scores, scheme_seconds


def main() -> int:
    args, policies, baselines, seeds = parse_args()
    space = load_space(find_space(args.space))
    tables = sample_tables(space, args.count, args.family_seed)
    links = build_links(space.path, SAMPLE_GROUP, tables)
    durations_ms = [link_duration_ms(link, args.duration_s) for link in links]
    for link, duration_ms in zip(links, durations_ms):
        check_flow_starts([link], [duration_ms], 1 + len(link.competitors), link_start(link)[1])
    if args.family_out:
        Path(args.family_out).write_text(
            sample_link_set(space, args.count, args.family_seed, args.family_out))

    load_before, start = load(), time.monotonic()
    scores, scheme_seconds = score_family(links, durations_ms, [*baselines, *policies], seeds)
    seconds = time.monotonic() - start

    results = {}
    for policy in policies:
        gaps = [gap_to_best({b: scores[b][i] for b in baselines}, scores[policy][i])
                for i in range(len(links))]
        results[policy] = {"mean_gap": sum(gaps) / len(gaps), "worst_decile": worst_decile(gaps),
                           "links_behind": sum(gap > 0 for gap in gaps), "gaps": gaps,
                           "scores": scores[policy]}
    print(json.dumps({
        "space": str(space.path), "count": len(links), "family_seed": args.family_seed,
        "run_seeds": seeds, "baselines": baselines, "duration_s": args.duration_s,
        "links": [link.name for link in links], "policies": results,
        "baseline_scores": {b: scores[b] for b in baselines},
        "wall_s": round(seconds, 1),
        "scheme_seconds": {scheme: round(t, 1) for scheme, t in scheme_seconds.items()},
        "load_before": load_before, "load_after": load(),
    }, indent=2))
    return 0

if __name__ == "__main__":
    sys.exit(main())
