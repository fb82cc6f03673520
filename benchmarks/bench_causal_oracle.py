"""How close to the omniscient bound can a sender get that only knows the link's past?

The trace oracle's window is margin x the delivery opportunities of one min RTT, counted
from `lookback` x minRTT behind now (oracle/ideal.py). With lookback 1 it counts the RTT
that has just passed, but a sender learns of a delivery only when its ACK comes back, half
a min RTT later on a symmetric path (later still where the uplink holds ACKs back):
lookback 1.5 counts what a sender could at best have heard of by now, and 1 still looks
half an RTT ahead. Even at 1.5 the oracle sees more than a sender does: every delivery
opportunity, also those a sender's window left unused. Its score gap to the bound is then
a rough floor for any causal scheme that reads the link's rate from its ACKs, a learned
policy included.

For each trace link of a group, each lookback and each margin, the schedule is run over
the whole trace (as `ccgym eval` does). Printed per lookback: the mean gap at the one
margin best for the whole group (a fixed rule), at each link's own best margin (knowing
the link in advance), and at the better on each link of its own margin and its best fixed
window (`oracle/ideal.py`'s search: on a Poisson trace, whose count of any one RTT is
mostly noise, a steady window does better). A table to stderr; one JSON object to stdout.

--within-rules moves the window toward the schedule by the DAgger expert's actions within
the growth ceiling (policies/cpp/actions.hh), as a learned policy moves its own, instead of
setting it: what perfect imitation of that expert would score.

  python benchmarks/bench_causal_oracle.py [--links cellular-real] [--within-rules]
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from tqdm import tqdm

from ccgym.emulators import _core
from ccgym.emulators.link_facts import default_duration_ms
from ccgym.emulators.link_names import resolve_links
from ccgym.envs.scoring import omniscient_runs
from ccgym.errors import UserError
from ccgym.oracle.ideal import (TraceIdealWindow, best_fixed_window, schedule_scores,
                                stepped_schedule)

LOOKBACKS = (0.0, 0.5, 1.0, 1.5)
# Up to 4 so that no link's best margin is at the edge of the grid: att-lte-driving, whose
# uplink stalls, does best near 2 counting only the past RTT.
MARGINS = (0.8, 1.0, 1.15, 1.3, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)
SEED = 1


def gaps_of_link(spec: str, bound: float, duration: float, within_rules: bool) -> np.ndarray:
    """gap[lookback index, margin index] of the counted window on one link."""
    ideal = TraceIdealWindow.for_link(spec, seed=SEED)
    schedules = [stepped_schedule(ideal.with_lookback(lb).with_margin(m), duration)
                 for lb in LOOKBACKS for m in MARGINS]
    scores = schedule_scores(spec, schedules, SEED, duration, within_rules=within_rules)
    return bound - np.asarray(scores).reshape(len(LOOKBACKS), len(MARGINS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", default="cellular-real",
                        help="a link set of trace links (default: cellular-real, which "
                             "needs the shared data; cellular-generated does not)")
    parser.add_argument("--within-rules", action="store_true",
                        help="reach each window through the policy's actions within its "
                             "growth ceiling instead of setting it")
    args = parser.parse_args(argv)
    try:
        links = resolve_links(None, args.links)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    not_traces = [link.name for link in links if not _core.parse_link_spec(link.spec).data_trace]
    if not_traces:
        print(f"error: --links {args.links}: not trace links: {', '.join(not_traces)}",
              file=sys.stderr)
        return 2

    started = time.perf_counter()
    per_link, fixed_gaps, bounds = {}, {}, {}
    for link in tqdm(links, desc="links", unit="link", file=sys.stderr):
        duration = default_duration_ms(link.spec)
        bound = bounds[link.name] = omniscient_runs(link, [SEED], duration)[0].score
        per_link[link.name] = gaps_of_link(link.spec, bound, duration, args.within_rules)
        fixed_gaps[link.name] = bound - best_fixed_window(link.spec, SEED, duration).score
    gaps = np.stack(list(per_link.values()))  # link x lookback x margin
    fixed = np.array(list(fixed_gaps.values()))

    seconds = time.perf_counter() - started
    rules = ", within the policy's rules" if args.within_rules else ""
    print(f"{len(links)} links of {args.links}, each over its whole trace{rules} "
          f"({seconds:.0f} s)", file=sys.stderr)
    print(f"{'lookback':>8}  {'group margin':>12}  {'mean gap':>8}  "
          f"{'per-link margins: mean gap':>26}  {'or a fixed window':>17}", file=sys.stderr)
    rows = []
    for i, lookback in enumerate(LOOKBACKS):
        group_mean = gaps[:, i, :].mean(axis=0)
        best = int(np.argmin(group_mean))
        own_margins = gaps[:, i, :].min(axis=1)
        own = float(own_margins.mean())
        own_or_fixed = float(np.minimum(own_margins, fixed).mean())
        rows.append({"lookback": lookback, "group_margin": MARGINS[best],
                     "mean_gap": float(group_mean[best]), "mean_gap_own_margins": own,
                     "mean_gap_own_margins_or_fixed": own_or_fixed})
        print(f"{lookback:>8.2f}  {MARGINS[best]:>12.2f}  {group_mean[best]:>8.3f}  "
              f"{own:>26.3f}  {own_or_fixed:>17.3f}", file=sys.stderr)
    json.dump({"links": args.links, "within_rules": args.within_rules, "seconds": seconds,
               "margins": list(MARGINS), "lookbacks": list(LOOKBACKS),
               "by_lookback": rows,
               "gap_by_link": {name: g.tolist() for name, g in per_link.items()},
               "fixed_window_gap_by_link": fixed_gaps, "bound_by_link": bounds},
              sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
