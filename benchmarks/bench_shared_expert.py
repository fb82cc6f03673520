"""How fairly does the shared-link expert (oracle/shared.py) share a link?

One learned flow driven by the expert's actions (through the growth ceiling, as a policy
acts) against each classic scheme, and two expert-driven flows against each other, on
24 Mbit/s, 20 ms links with DropTail buffers of 1 and 4 BDPs (80 and 320 packets). The
competitor starts at 0, the learned flow at --learned-start-ms (second, as issue 46 asks);
shares are of the bytes delivered after the learned flows' start plus a 5 s ramp. A table
to stderr; one JSON object to stdout (per case: share of the first learned flow, Jain's
index over all flows).

  python benchmarks/bench_shared_expert.py [--duration-s 60] [--seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ccgym.emulators.link_facts import bdp_packets
from ccgym.oracle.shared import simulate_shared

RATE_MBPS, DELAY_MS = 24.0, 20.0
COMPETITORS = ("cubic", "bbr", "vegas", "copa", "self")


def link(buffer_bdps: float) -> str:
    packets = round(buffer_bdps * bdp_packets(RATE_MBPS, DELAY_MS))
    return f"rate_mbps={RATE_MBPS:g},delay_ms={DELAY_MS:g},queue=droptail:packets={packets}"


def run_case(competitor: str, buffer_bdps: float, args: argparse.Namespace) -> dict[str, object]:
    shares, jains = [], []
    for seed in args.seeds:
        learned, classic = (2, []) if competitor == "self" else (1, [competitor])
        start = 0.0 if competitor == "self" else args.learned_start_ms
        run = simulate_shared(link(buffer_bdps), classic, learned, args.duration_s * 1000.0,
                              start, seed)
        shares.append(run.shares[0])
        jains.append(run.jain)
    return {"competitor": competitor, "buffer_bdps": buffer_bdps,
            "share": float(np.mean(shares)), "share_spread": float(np.ptp(shares)),
            "jain": float(np.mean(jains))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--learned-start-ms", type=float, default=5000.0,
                        help="when the learned flow starts, the competitor at 0 "
                             "(two learned flows start together)")
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
    print(json.dumps({"rate_mbps": RATE_MBPS, "delay_ms": DELAY_MS,
                      "duration_s": args.duration_s, "seeds": args.seeds, "cases": rows}))


if __name__ == "__main__":
    main()
