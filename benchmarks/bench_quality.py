"""The quality of a trained policy on links it did not train on, against issue 3's goals.

Evaluates lstm:RUN, the oracle and every baseline on each link group:
  held-out-grid       constant links between and beyond Indigo's training grid: goal
                      mean utilization >= 90% and mean p95 queueing delay <= 25% of
                      the minimum RTT;
  cellular-generated  synthetic cellular-like traces, and
  cellular-real       recorded traces (needs ../shared/data): goal a mean score gap
                      to the omniscient bound under 0.9;
  recorded-unseen     (on request) held-out recordings in setups no training config
                      names: other delays, buffers and ACK paths (needs the shared data);
and on every group, a better mean score than every baseline. A group whose links name
`competitors` (shared-bottleneck) runs each policy and the baselines beside them
(`ccgym eval --against`): per scheme the mean over links of its flow's share of the bytes
while all flows send (after the last start plus a 5 s ramp: measure.metrics.overlap_shares),
Jain's index and the harm it does to cubic (Ware et al.). Several policies (the same
config at several seeds) are scored side by side, and each figure is also given as the mean
and spread (min, max) over them. Leaderboards go to stderr; one JSON object to stdout.

  python benchmarks/bench_quality.py --policy runs/NAME [runs/NAME2 ...] [--duration-s 30|0]
      [--groups held-out-grid,cellular-real,recorded-unseen,shared-bottleneck,SET-OR-PATH ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import numpy as np

from ccgym.analysis.cli_eval import DEFAULT_SCHEMES
from ccgym.analysis.coexist import evaluate_shared
from ccgym.analysis.evaluate import evaluate
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.emulators import _core
from ccgym.emulators.link_names import needs_shared_data, resolve_links
from ccgym.emulators.links import data_dir

BASELINES = DEFAULT_SCHEMES.split(",")  # ccgym eval's baselines
SHARED_BASELINES = ["cubic", "bbr", "copa", "vegas"]  # beside competitors: the usual suspects
SHARED_FIGURES = ("share", "jain_index", "harm_throughput", "harm_delay")
CONSTANT_GROUPS = {"held-out-grid"}
UTILIZATION_GOAL = 0.9
QUEUE_GOAL = 0.25  # p95 queueing delay / minimum RTT
GAP_GOAL = 0.9     # omniscient score - policy score


def queue_over_min_rtt(rows: list[dict[str, Any]], spec_of: dict[str, str]) -> list[float]:
    """Per link: p95 queueing delay (p95 one-way delay - propagation delay) / (2 x delay)."""
    ratios = []
    for r in rows:
        delay = _core.parse_link_spec(spec_of[r["link"]]).delay_ms
        ratios.append((r["delay_p95_ms"] - delay) / (2 * delay))
    return ratios


def group_summary(rows: list[dict[str, Any]], policy: str, spec_of: dict[str, str],
                  constant: bool) -> dict[str, Any]:
    by_scheme: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_scheme.setdefault(row["scheme"], []).append(row)
    bound = {r["link"]: r["score"] for r in by_scheme["omniscient"]}
    mine = by_scheme[policy]
    mean_score = {scheme: float(np.mean([r["score"] for r in rs])) for scheme, rs in by_scheme.items()}
    summary: dict[str, Any] = {
        "links": len(mine),
        "mean_score": mean_score,
        "policy_score_gap": float(np.mean([bound[r["link"]] - r["score"] for r in mine])),
        "policy_utilization": float(np.mean([r["utilization"] for r in mine])),
    }
    baselines = {s: v for s, v in mean_score.items() if s in BASELINES}
    best = max(baselines, key=baselines.get)
    summary["best_baseline"] = best
    summary["beats_every_baseline"] = mean_score[policy] > baselines[best]
    if constant:
        ratios = queue_over_min_rtt(mine, spec_of)
        summary["policy_queue_over_min_rtt"] = float(np.mean(ratios))
        summary["policy_queue_over_min_rtt_median"] = float(np.median(ratios))
        # The oracle (each link's BDP window) for reference: what the goals leave room for.
        oracle = by_scheme["oracle"]
        summary["oracle_utilization"] = float(np.mean([r["utilization"] for r in oracle]))
        summary["oracle_queue_over_min_rtt"] = float(np.mean(queue_over_min_rtt(oracle, spec_of)))
        summary["meets_utilization_goal"] = summary["policy_utilization"] >= UTILIZATION_GOAL
        summary["meets_queue_goal"] = summary["policy_queue_over_min_rtt"] <= QUEUE_GOAL
    else:
        summary["meets_gap_goal"] = summary["policy_score_gap"] < GAP_GOAL
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", required=True, nargs="+",
                        help="run folders (lstm:RUN is evaluated), e.g. one config's seeds")
    parser.add_argument("--duration-s", type=float, default=30.0,
                        help="run length (default 30 s; traces are cut to it; 0: each link's "
                             "own length, as `ccgym eval` runs it: a trace once)")
    parser.add_argument("--groups", default="held-out-grid,cellular-generated,cellular-real",
                        help="link sets (names or TOML paths), comma-separated")
    args = parser.parse_args()

    policies = [f"lstm:{p}" for p in args.policy]
    result: dict[str, Any] = {"policies": args.policy, "duration_s": args.duration_s,
                              "groups": {}}
    for group in [g.strip() for g in args.groups.split(",") if g.strip()]:
        if needs_shared_data(group) and data_dir() is None:
            result["groups"][group] = {"skipped": "no shared data (../shared/data)"}
            continue
        links = resolve_links(None, group)
        start = time.perf_counter()
        if any(link.competitors for link in links):
            result["groups"][group] = shared_group(links, policies, args.duration_s)
            continue
        rows, _ = evaluate(links, [*policies, "oracle", *BASELINES],
                           duration_s=args.duration_s or None, progress=False)
        print(f"== {group} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
        print(format_leaderboard(rows), file=sys.stderr)
        spec_of = {link.name: link.spec for link in links}
        constant = group in CONSTANT_GROUPS
        per_policy = {p: group_summary([r for r in rows if r["scheme"] not in policies or
                                        r["scheme"] == p], p, spec_of, constant)
                      for p in policies}
        result["groups"][group] = {"per_policy": per_policy, "over_policies": spread(per_policy)}
    print(json.dumps(result, indent=2))


def shared_group(links: list[Any], policies: list[str], duration_s: float) -> dict[str, Any]:
    """A shared-bottleneck group: each policy's and baseline's shared_summary, and the spread
    of the policies' figures."""
    start = time.perf_counter()
    rows, _ = evaluate_shared(links, [*policies, *SHARED_BASELINES], None,
                              duration_s=duration_s or None, progress=False)
    print(f"== {links[0].group} ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    print(format_leaderboard(rows), file=sys.stderr)
    per_policy = {p: shared_summary(rows, p) for p in policies}
    over = {key: _mean_and_spread([s[key] for s in per_policy.values() if s[key] is not None])
            for key in SHARED_FIGURES}
    return {"per_policy": per_policy, "over_policies": over,
            "baselines": {b: shared_summary(rows, b) for b in SHARED_BASELINES}}


def shared_summary(rows: list[dict[str, Any]], scheme: str) -> dict[str, Any]:
    """Means over the links: the evaluated flow's share, Jain's index, harm to cubic."""
    mine = [r for r in rows if r["scheme"] == scheme and r.get("flows")]
    values: dict[str, list[float]] = {key: [] for key in SHARED_FIGURES}
    for row in mine:
        # Of the bytes while all flows send, after the ramp (bench_coexist's figure): not
        # of the whole run, where a flow that starts later is charged for its absence.
        share = next(f.get("share_overlap") for f in row["flows"] if f.get("evaluated"))
        if share is not None:  # None: the run ended within the ramp
            values["share"].append(share)
        for key in SHARED_FIGURES[1:]:
            if row.get(key) is not None:
                values[key].append(row[key])
    out: dict[str, Any] = {key: float(np.mean(v)) if v else None for key, v in values.items()}
    out["links"] = len(mine)
    return out


def _mean_and_spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"mean": float(np.mean(values)), "min": min(values), "max": max(values)}


def spread(per_policy: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each policy figure's mean, min and max over the policies (seeds), and how many of them
    beat every baseline."""
    summaries = list(per_policy.values())
    out: dict[str, Any] = {}
    for key in ("policy_score_gap", "policy_utilization", "policy_queue_over_min_rtt"):
        if key in summaries[0]:
            values = [s[key] for s in summaries]
            out[key] = {"mean": float(np.mean(values)), "min": min(values), "max": max(values)}
    scores = [s["mean_score"][p] for p, s in per_policy.items()]
    out["policy_mean_score"] = {"mean": float(np.mean(scores)), "min": min(scores),
                                "max": max(scores)}
    baselines = {k: v for k, v in summaries[0]["mean_score"].items() if k in BASELINES}
    out["best_baseline"] = max(baselines, key=baselines.get)
    out["best_baseline_score"] = baselines[out["best_baseline"]]
    out["oracle_score"] = summaries[0]["mean_score"].get("oracle")
    out["bound_score"] = summaries[0]["mean_score"].get("omniscient")
    out["policies_beating_every_baseline"] = sum(s["beats_every_baseline"] for s in summaries)
    return out


if __name__ == "__main__":
    main()
