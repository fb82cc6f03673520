"""Virtual time against real time on shared bottlenecks: each pair of schemes in the simulator
beside the same pair in real time (two ccgym-senders through the relay on loopback, as
`ccgym run --scheme A --against B` runs them), started together in both clocks. The real
senders begin as fast as the machine lets them (`real_starts_ms`: ms apart, a few hundred on a
loaded machine). The simulated flows start together rather than at those starts: the
simulator is deterministic, and two cubic flows one of which starts 200 ms earlier keep a
0.8/0.2 split over 30 s in it (losses stay in phase), where real time, whose jitter breaks the
phase, converges near 0.5/0.5.

For each link and pair: each flow's share of the bytes in both clocks, the largest difference
(goal: within SHARE_GOAL, absolute, over 30 s runs) and Jain's index. Flows of one scheme are
interchangeable: which of two cubic flows that start together gets ahead is settled by timing
below a millisecond (the simulator's fixed order, the real senders' scheduling), so their
shares are compared largest with largest; `by_flow_difference` gives the difference flow by
flow as well. One JSON object to stdout.

  python benchmarks/bench_shared.py [--duration-s 30] [--links shared-bottleneck]
      [--pairs vegas:cubic,cubic:cubic] [--only shared-24mbps-20ms-1bdp,...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ccgym.analysis.coexist import flow_starts_ms, make_lineup, run_lineup
from ccgym.measure.metrics import summarize
from ccgym.deploy.harness import run_emulated
from ccgym.emulators.link_names import resolve_links
from ccgym.emulators.links import Link

SHARE_GOAL = 0.10  # |share in virtual time - share in real time|, each flow
DEFAULT_LINKS = "shared-24mbps-20ms-1bdp,shared-24mbps-20ms-4bdp"


def shares(log: Any, opportunities: Any, duration_ms: float) -> tuple[list[float], float]:
    metrics = summarize(log, opportunities, duration_ms)
    return [float(f["share"]) for f in metrics.flows], float(metrics.jain_index or 1.0)


def share_difference(schemes: Sequence[str], virtual: Sequence[float],
                     real: Sequence[float]) -> float:
    """The largest difference of a flow's share between the clocks, the flows of each scheme
    matched in order of their shares (flows of one scheme are interchangeable)."""
    worst = 0.0
    for scheme in set(schemes):
        mine = [i for i, s in enumerate(schemes) if s == scheme]
        pairs = zip(sorted(virtual[i] for i in mine), sorted(real[i] for i in mine))
        worst = max(worst, *(abs(a - b) for a, b in pairs))
    return worst


def compare(link: Link, pair: tuple[str, str], duration_s: float, seed: int) -> dict[str, Any]:
    """One pair on one link in both clocks: shares, their largest difference, Jain's index."""
    duration_ms = duration_s * 1000.0
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as tmp:
        start = time.perf_counter()
        real = run_emulated(link.spec, list(pair), duration_s, seed, Path(tmp))
        wall_s = time.perf_counter() - start
    # Real time suffers from a loaded machine (the relay and the senders wake late): the
    # load over the last minute, at the run's end, says how loaded.
    load = os.getloadavg()[0]
    starts = flow_starts_ms(real.log.columns())
    lineup = make_lineup(pair[0], [pair[1]], first="scheme")
    sim = run_lineup(link, pair[0], lineup, [seed], duration_ms, 0.0)[0]
    sim_shares, sim_jain = shares(sim.log, sim.opportunities_ms, duration_ms)
    real_shares, real_jain = shares(real.log, real.opportunities_ms, real.duration_ms)
    difference = share_difference(pair, sim_shares, real_shares)
    return {"link": link.name, "pair": " vs ".join(pair),
            "virtual_shares": sim_shares, "real_shares": real_shares,
            "share_difference": difference, "within_goal": difference <= SHARE_GOAL,
            "by_flow_difference": max(abs(a - b) for a, b in zip(sim_shares, real_shares)),
            "virtual_jain": sim_jain, "real_jain": real_jain, "real_wall_s": wall_s,
            "load_average_1min": load, "cores": os.cpu_count(), "real_starts_ms": starts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--links", default="shared-bottleneck", help="a link set")
    parser.add_argument("--only", default=DEFAULT_LINKS,
                        help="comma-separated link names of the set ('' for all)")
    parser.add_argument("--pairs", default="cubic:cubic,vegas:cubic",
                        help="comma-separated A:B pairs (A's flow is flow 0)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    wanted = {name for name in args.only.split(",") if name}
    links = [link for link in resolve_links(None, args.links)
             if not wanted or link.name in wanted]
    pairs = [tuple(p.split(":", 1)) for p in args.pairs.split(",") if p]
    cases = []
    for link in links:
        for pair in pairs:
            case = compare(link, pair, args.duration_s, args.seed)
            print(f"{case['link']}: {case['pair']}: virtual {case['virtual_shares']}, real "
                  f"{case['real_shares']}", file=sys.stderr)
            cases.append(case)
    worst = max(c["share_difference"] for c in cases)
    print(json.dumps({"duration_s": args.duration_s, "share_goal": SHARE_GOAL,
                      "worst_share_difference": worst, "all_within_goal": worst <= SHARE_GOAL,
                      "cases": cases}, indent=2))


if __name__ == "__main__":
    main()
