"""How far do the classic schemes go when their parameters are tuned on the links themselves?

A learned policy's goal is set against the baselines at their default parameters (copa's
delta 0.5, vegas's 2/4 packets, ...). This sweeps each parameterized classic scheme over a
grid (copa's delta, vegas's alpha/beta, ewma's target queue, sprout's forecast quantile,
bbr's window gain, verus's R, a fixed window) on every link of a group and prints:
  default     each baseline at its default parameters (the figures the goals name);
  tuned       the one configuration best on the group's mean (tuned on the test links);
  hindsight   per link, the best of every configuration swept (chosen knowing the link):
              no single causal sender is promised this, it is a selection after the fact;
and, with --policy, each policy's mean and per-link score beside them. A per-link table to
stderr; one JSON object to stdout.

  python benchmarks/bench_tuned_baselines.py [--links cellular-real] [--duration-s 0]
      [--policy runs/NAME ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from ccgym.analysis.cli_eval import DEFAULT_SCHEMES
from ccgym.analysis.evaluate import evaluate
from ccgym.emulators.link_names import resolve_links

DEFAULTS = DEFAULT_SCHEMES.split(",")  # ccgym eval's baselines
SWEEP = [
    *[f"copa:delta={d}" for d in (0.05, 0.1, 0.2, 0.3, 0.4, 0.7, 1, 1.5, 2, 3, 5)],
    *[f"vegas:alpha={a}:beta={2 * a}" for a in (1, 3, 4, 6, 8, 12, 16)],
    *[f"ewma:target_queue_ms={q}" for q in (2, 5, 10, 40)],
    *[f"sprout:quantile={q}" for q in (0.01, 0.02, 0.1, 0.2, 0.3)],
    *[f"bbr:cwnd_gain={g}" for g in (1, 1.25, 1.5, 3)],
    *[f"verus:r={r}" for r in (1.25, 1.5, 3)],
    *[f"fixed:{w}" for w in (4, 6, 8, 10, 12, 15, 25, 30, 40, 50, 64, 80, 100)],
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", default="cellular-real",
                        help="a link set (default: cellular-real, which needs the shared data)")
    parser.add_argument("--duration-s", type=float, default=0.0,
                        help="run length (default 0: each link's own, a trace once)")
    parser.add_argument("--policy", nargs="*", default=[],
                        help="run folders whose policies (lstm:RUN) are scored beside them")
    args = parser.parse_args(argv)
    links = resolve_links(None, args.links)
    policies = [f"lstm:{p}" for p in args.policy]
    schemes = [*policies, *DEFAULTS, *SWEEP]
    started = time.perf_counter()
    rows, _ = evaluate(links, schemes, duration_s=args.duration_s or None, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - started

    names = [link.name for link in links]
    score = {(r["scheme"], r["link"]): r["score"] for r in rows}
    bound = np.array([score[("omniscient", n)] for n in names])
    per_link = {s: np.array([score[(s, n)] for n in names]) for s in schemes}
    classic = [*DEFAULTS, *SWEEP]
    default_best = max(DEFAULTS, key=lambda s: per_link[s].mean())
    tuned_best = max(classic, key=lambda s: per_link[s].mean())
    hindsight_pick = [max(classic, key=lambda s, i=i: per_link[s][i]) for i in range(len(names))]
    hindsight = np.array([per_link[s][i] for i, s in enumerate(hindsight_pick)])

    def figures(scores: np.ndarray) -> dict[str, Any]:
        return {"mean_score": float(scores.mean()), "mean_gap": float((bound - scores).mean()),
                "per_link": dict(zip(names, map(float, scores)))}

    result: dict[str, Any] = {
        "links": args.links, "seconds": seconds, "schemes_swept": len(classic),
        "bound": figures(bound),
        "default": {"scheme": default_best, **figures(per_link[default_best])},
        "tuned": {"scheme": tuned_best, **figures(per_link[tuned_best])},
        "hindsight": {"schemes": dict(zip(names, hindsight_pick)), **figures(hindsight)},
        "policies": {p: figures(per_link[p]) for p in policies},
    }
    columns = [("bound", bound), (f"default {default_best}", per_link[default_best]),
               (f"tuned {tuned_best}", per_link[tuned_best]), ("hindsight", hindsight),
               *[(p.split("/")[-1][:24], per_link[p]) for p in policies]]
    print(f"{len(links)} links of {args.links}, {len(classic)} classic configurations "
          f"({seconds:.0f} s)", file=sys.stderr)
    print(f"{'link':<22}" + "".join(f"{c[:24]:>26}" for c, _ in columns) + "  hindsight pick",
          file=sys.stderr)
    for i, name in enumerate(names):
        print(f"{name:<22}" + "".join(f"{v[i]:>26.3f}" for _, v in columns) +
              f"  {hindsight_pick[i]}", file=sys.stderr)
    print(f"{'mean':<22}" + "".join(f"{v.mean():>26.3f}" for _, v in columns), file=sys.stderr)
    json.dump(result, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
