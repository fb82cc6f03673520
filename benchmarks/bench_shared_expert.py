"""How fairly does the shared-link expert (oracle/shared.py) share a link?

One learned flow driven by the expert's actions (through the growth ceiling, as a policy
acts) against each classic scheme, and two expert-driven flows against each other, on
links of --rate-mbps and --delay-ms (24 Mbit/s, 20 ms) with DropTail buffers of --buffers
BDPs (1 and 4). One flow starts --stagger-ms after the other: the learned one unless
--learned-first (second, as issue 46 asks); two learned flows start together. Shares are of
the bytes delivered from the later start plus a 5 s ramp to the end. A table to stderr; one
JSON object to stdout (per case: the first learned flow's share, its spread over the seeds,
Jain's index over all flows).

  python benchmarks/bench_shared_expert.py [--duration-s 60] [--seeds 1 2 3] [--learned-first]
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ccgym.emulators.link_facts import bdp_packets
from ccgym.oracle.shared import simulate_shared

COMPETITORS = ("cubic", "bbr", "vegas", "copa", "self")


def link(buffer_bdps: float, args: argparse.Namespace) -> str:
    packets = max(1, round(buffer_bdps * bdp_packets(args.rate_mbps, args.delay_ms)))
    return f"rate_mbps={args.rate_mbps:g},delay_ms={args.delay_ms:g},queue=droptail:packets={packets}"


def run_case(competitor: str, buffer_bdps: float, args: argparse.Namespace) -> dict[str, object]:
    shares, jains = [], []
    for seed in args.seeds:
        learned, classic = (2, []) if competitor == "self" else (1, [competitor])
        stagger = 0.0 if competitor == "self" else args.stagger_ms
        learned_start, competitor_start = (0.0, stagger) if args.learned_first else (stagger, 0.0)
        run = simulate_shared(link(buffer_bdps, args), classic, learned,
                              args.duration_s * 1000.0, learned_start, seed, competitor_start)
        shares.append(run.shares[0])
        jains.append(run.jain)
    return {"competitor": competitor, "buffer_bdps": buffer_bdps,
            "share": float(np.mean(shares)), "share_spread": float(np.ptp(shares)),
            "jain": float(np.mean(jains))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--rate-mbps", type=float, default=24.0)
    parser.add_argument("--delay-ms", type=float, default=20.0, help="one-way")
    parser.add_argument("--stagger-ms", type=float, default=5000.0,
                        help="how long after the first flow the second starts")
    parser.add_argument("--learned-first", action="store_true",
                        help="the learned flow starts first, the competitor second")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--competitors", nargs="+", default=list(COMPETITORS))
    parser.add_argument("--buffers", type=float, nargs="+", default=[1.0, 4.0],
                        help="DropTail buffers in BDPs")
    args = parser.parse_args()
    rows = [run_case(c, b, args) for b in args.buffers for c in args.competitors]
    print(f"{'competitor':<10} {'buffer':>6} {'share':>6} {'spread':>6} {'jain':>6}",
          file=sys.stderr)
    for r in rows:
        print(f"{r['competitor']:<10} {r['buffer_bdps']:>5g}x {r['share']:>6.3f} "
              f"{r['share_spread']:>6.3f} {r['jain']:>6.3f}", file=sys.stderr)
    print(json.dumps({"rate_mbps": args.rate_mbps, "delay_ms": args.delay_ms,
                      "learned_first": args.learned_first, "duration_s": args.duration_s,
                      "seeds": args.seeds, "cases": rows}))


if __name__ == "__main__":
    main()
