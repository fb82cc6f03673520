"""The suite: every packaged evaluation group x every classic scheme x the given policies,
with the oracle and the omniscient bound, in one JSON document: the engine of `ccgym suite`.

Each link is run by analysis/evaluate.py's `evaluate()`, unchanged, so a suite row is the row
`ccgym eval --links GROUP` writes. Before any work the suite says its size and an estimate of
its time, calibrated by timing each scheme on two short runs on this machine now; the progress
bar advances by each link's estimated cost, so its ETA corrects itself as the work goes.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ccgym.analysis.evaluate import evaluate, run_scheme
from ccgym.emulators.link_names import link_from_spec, needs_shared_data, resolve_entries
from ccgym.emulators.links import DATA_ENV, Link, data_dir
from ccgym.envs.scoring import check_run_length, link_duration_ms, omniscient_runs
from ccgym.errors import UserError
from ccgym.policies.schemes import baseline_schemes

# The packaged link sets that measure schemes; the other packaged sets (cellular-generated,
# poisson-generated, recorded-train) are what policies train on, so they are left out.
SUITE_GROUPS = ("pantheon-calibrated", "pantheon-pathological", "indigo-synthetic",
                "held-out-grid", "cellular-real", "recorded-unseen")
# The catalog's slot for a window set from outside: no scheme of its own to score.
ORACLE = "oracle"
OMNISCIENT = "omniscient"
SUITE_KIND = "suite"
SUITE_VERSION = 1

# Calibration: each scheme (and the bound) runs on a slow link briefly and longer, and on a
# fast link, so that its cost splits into a part per run (building and scoring it), a part per
# simulated millisecond (steps, timers) and a part per packet; a link's estimate is then its
# duration and its delivery opportunities priced so. (link spec, simulated ms) each.
CALIBRATION_RUNS = (("rate_mbps=2,delay_ms=20", 1000.0), ("rate_mbps=2,delay_ms=20", 5000.0),
                    ("rate_mbps=48,delay_ms=20", 5000.0))
CALIBRATION_REPEATS = 2  # the fastest of these counts: a busy machine's pauses are not the work
SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0


def classic_schemes() -> list[str]:
    """Every classic scheme of the C++ catalog, in its order: a scheme added there is in the
    suite with no change here."""
    return baseline_schemes()


def parse_groups(text: str | None) -> list[str]:
    """The --groups flag: comma-separated names of SUITE_GROUPS (None: all, in suite order)."""
    if text is None:
        return list(SUITE_GROUPS)
    names = [name.strip() for name in text.split(",")]
    for name in names:
        if name not in SUITE_GROUPS:
            raise UserError(f"--groups: {name!r} is not an evaluation group of the suite; valid: "
                            f"{', '.join(SUITE_GROUPS)}")
    if len(set(names)) != len(names):
        raise UserError(f"--groups {text!r}: a group is given twice")
    return names


def missing_data_reason() -> str | None:
    """Why the shared recorded data cannot be used, or None when it is there."""
    found = data_dir()
    if found is None:
        return f"${DATA_ENV} is unset and no ../shared/data was found"
    if not found.is_dir():
        return f"${DATA_ENV}={found} is not a folder"
    return None


@dataclass
class Plan:
    """The links to run, per group, and the groups left out with the reason."""
    groups: dict[str, list[Link]]
    skipped: dict[str, str]
    durations_ms: dict[tuple[str, str], float]  # per (group, link name)
    opportunities: dict[tuple[str, str], int]   # the packets the link could deliver in a run


def make_plan(groups: Sequence[str], duration_s: float | None) -> Plan:
    """Loads each group's links (skipping those whose shared data is absent) and checks every
    run's length before any work, so a too-short --duration-s fails here, not midway."""
    from ccgym.emulators import _core

    plan = Plan({}, {}, {}, {})
    reason = missing_data_reason()
    for group in groups:
        if reason and needs_shared_data(group):
            plan.skipped[group] = f"it needs the shared data: {reason}"
            continue
        plan.groups[group] = resolve_entries(group)
        for link in plan.groups[group]:
            duration_ms = link_duration_ms(link, duration_s)
            check_run_length(link, duration_ms)
            plan.durations_ms[group, link.name] = duration_ms
            plan.opportunities[group, link.name] = len(_core.opportunities(link.spec, duration_ms))
    if not plan.groups:
        raise UserError("nothing to run: every group given needs the shared data ("
                        f"{reason}); set ${DATA_ENV}, or choose other --groups")
    return plan


# ---------------------------------------------------------------- the estimate

@dataclass(frozen=True)
class Cost:
    """A scheme's cost on this machine: seconds per run, per simulated ms, per packet."""
    per_run: float
    per_ms: float
    per_packet: float

    def seconds(self, duration_ms: float, opportunities: int) -> float:
        return self.per_run + self.per_ms * duration_ms + self.per_packet * opportunities


def calibrate(schemes: Sequence[str]) -> dict[str, Cost]:
    """Times each scheme, and the omniscient bound, on CALIBRATION_RUNS (a second or two for
    every scheme of the catalog)."""
    import numpy as np

    from ccgym.emulators import _core

    points = [(link_from_spec(spec), ms) for spec, ms in CALIBRATION_RUNS]
    # Each run's (1, ms, packets): solving for the three costs.
    terms = np.array([(1.0, ms, len(_core.opportunities(link.spec, ms))) for link, ms in points])
    _best_time(schemes[0], *points[0])  # the first runs pay for warming up
    costs = {}
    for scheme in [*schemes, OMNISCIENT]:
        seconds = [_best_time(scheme, link, ms) for link, ms in points]
        # Timing noise can make a part negative: no part of a run takes less than nothing.
        costs[scheme] = Cost(*np.clip(np.linalg.solve(terms, seconds), 0.0, None).tolist())
    return costs


def _best_time(scheme: str, link: Link, duration_ms: float) -> float:
    """Seconds of one calibration run: the fastest of CALIBRATION_REPEATS."""
    best = math.inf
    for _ in range(CALIBRATION_REPEATS):
        start = time.perf_counter()
        if scheme == OMNISCIENT:
            omniscient_runs(link, [1], duration_ms)
        else:
            run_scheme(link, scheme, [1], duration_ms)
        best = min(best, time.perf_counter() - start)
    return best


def link_costs(plan: Plan, costs: dict[str, Cost], runs: int) -> dict[tuple[str, str], float]:
    """Estimated seconds per (group, link name): every scheme and the bound, `runs` times."""
    return {key: runs * sum(cost.seconds(duration_ms, plan.opportunities[key])
                            for cost in costs.values())
            for key, duration_ms in plan.durations_ms.items()}


def describe_work(plan: Plan, schemes: Sequence[str], runs: int, estimate_s: float) -> str:
    """What the suite is about to do, in a few lines: printed before any work."""
    links = sum(len(links) for links in plan.groups.values())
    simulated_s = sum(plan.durations_ms.values()) / 1000.0
    packets = sum(plan.opportunities.values())
    lines = [f"suite: {_plural(len(plan.groups), 'group')}, {_plural(links, 'link')} x "
             f"{_plural(len(schemes), 'scheme')} (and the omniscient bound) x "
             f"{_plural(runs, 'run')}: {links * len(schemes) * runs} simulations, "
             f"{span(simulated_s * len(schemes) * runs)} of simulated link time, "
             f"{packets * len(schemes) * runs / 1e6:.1f} M packet opportunities",
             f"estimate: about {span(estimate_s)} on this machine now (each scheme timed on "
             f"{len(CALIBRATION_RUNS)} short runs; a busier machine takes longer)"]
    lines += [f"skipping {group}: {reason}" for group, reason in plan.skipped.items()]
    return "\n".join(lines)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def span(seconds: float) -> str:
    """A duration as a person reads it: seconds, minutes or hours."""
    if seconds < SECONDS_PER_MINUTE:
        return f"{max(1, round(seconds))} s"
    if seconds < SECONDS_PER_HOUR:
        return f"{seconds / SECONDS_PER_MINUTE:.0f} min"
    return f"{seconds / SECONDS_PER_HOUR:.1f} h"


# ---------------------------------------------------------------- running

def run_suite(plan: Plan, schemes: Sequence[str], runs: int, seed: int,
              duration_s: float | None, estimates: dict[tuple[str, str], float],
              progress: bool = True) -> list[dict[str, Any]]:
    """Every scheme on every link of the plan through evaluate(), one link per call so that
    the bar moves per link: the rows, in group and link order."""
    from tqdm import tqdm

    rows: list[dict[str, Any]] = []
    total = sum(estimates.values())
    with tqdm(total=total, desc="suite", unit="est. s", disable=not progress,
              bar_format="{l_bar}{bar}| {elapsed}<{remaining}{postfix}") as bar:
        for group, links in plan.groups.items():
            for link in links:
                bar.set_postfix_str(f"{group}: {link.name}")
                link_rows, _ = evaluate([link], schemes, runs=runs, seed=seed,
                                        duration_s=duration_s, progress=False)
                rows.extend(link_rows)
                bar.update(estimates[group, link.name])
    return rows


# ---------------------------------------------------------------- the summary

def _mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def _role(scheme: str, policies: Sequence[str]) -> str:
    if scheme == OMNISCIENT:
        return "bound"
    if scheme == ORACLE:
        return "oracle"
    return "policy" if scheme in policies else "baseline"


def _winners(rows: Sequence[dict[str, Any]]) -> dict[str, int]:
    """Per scheme, on how many links it scored best among the baselines and policies (the
    oracle and the bound know the link: they are references, not contestants)."""
    best: dict[str, tuple[float, str]] = {}
    for row in rows:
        if row["scheme"] in (ORACLE, OMNISCIENT) or row.get("score") is None:
            continue
        if row["link"] not in best or row["score"] > best[row["link"]][0]:
            best[row["link"]] = (row["score"], row["scheme"])
    wins: dict[str, int] = {}
    for _, scheme in best.values():
        wins[scheme] = wins.get(scheme, 0) + 1
    return wins


def group_summary(rows: Sequence[dict[str, Any]], policies: Sequence[str]) -> dict[str, Any]:
    """One group's summary: per scheme its mean score over the links it scored on, its mean
    gap to the bound's score on those links, its wins; the bound first, then best first."""
    bound = {r["link"]: r.get("score") for r in rows if r["scheme"] == OMNISCIENT}
    wins = _winners(rows)
    by_scheme: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_scheme.setdefault(row["scheme"], []).append(row)
    entries: list[dict[str, Any]] = []
    for scheme, scheme_rows in by_scheme.items():
        scored = [r for r in scheme_rows if r.get("score") is not None]
        gaps = [bound[r["link"]] - r["score"] for r in scored if bound.get(r["link"]) is not None]
        role = _role(scheme, policies)
        entries.append({
            "scheme": scheme, "role": role, "links": len(scored),
            # A run that delivered nothing scores -inf (null in JSON): counted, not averaged.
            "unscored": len(scheme_rows) - len(scored),
            "mean_score": _mean([r["score"] for r in scored]),
            "mean_gap": None if role == "bound" else _mean(gaps),
            "wins": None if role in ("bound", "oracle") else wins.get(scheme, 0),
            "mean_utilization": _mean([r["utilization"] for r in scored
                                       if r.get("utilization") is not None]),
            "mean_e2e_delay_p95_ms": _mean([r["e2e_delay_p95_ms"] for r in scored
                                            if r.get("e2e_delay_p95_ms") is not None])})
    entries.sort(key=lambda e: (e["role"] != "bound", e["mean_score"] is None,
                                -(e["mean_score"] or 0.0)))
    baselines = [e for e in entries if e["role"] == "baseline" and e["mean_score"] is not None]
    return {"links": len(bound), "schemes": entries,
            "best_baseline": baselines[0]["scheme"] if baselines else None}


def summarize(rows: Sequence[dict[str, Any]], policies: Sequence[str]) -> dict[str, Any]:
    """The summary of every group in the rows, in order of first appearance."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    return {group: group_summary(group_rows, policies) for group, group_rows in groups.items()}


def suite_document(rows: list[dict[str, Any]], plan: Plan, options: dict[str, Any],
                   estimate_s: float, wall_s: float, load_average: float) -> dict[str, Any]:
    """The JSON that `ccgym suite --json` writes and `ccgym report` reads. load_average: the
    machine's 1-minute load when the work started, to read wall_s by."""
    return {"kind": SUITE_KIND, "version": SUITE_VERSION, "options": options,
            "skipped": [{"group": g, "reason": r} for g, r in plan.skipped.items()],
            "summary": summarize(rows, options["policies"]), "rows": rows,
            "estimate_s": estimate_s, "wall_s": wall_s, "cpus": os.cpu_count(),
            "load_average": load_average,
            "measured": time.strftime("%Y-%m-%d")}


def check_document(path: Any, doc: dict[str, Any]) -> dict[str, Any]:
    """The suite document read from `path`, checked enough to render, its summaries made again
    from its rows (the rows are the measurement); UserError naming the file and what is wrong."""
    from ccgym.analysis.leaderboard import row_problem

    expected: dict[str, type | tuple[type, ...]] = {
        "options": dict, "skipped": list, "summary": dict, "rows": list, "wall_s": (int, float)}
    for key, kind in expected.items():
        if not isinstance(doc.get(key), kind):
            raise UserError(f"{path}: a suite document needs {key!r} "
                            f"({'a number' if isinstance(kind, tuple) else kind.__name__}); "
                            "write it with ccgym suite --json")
    for i, row in enumerate(doc["rows"]):
        missing = {"link", "scheme", "group"} - set(row) if isinstance(row, dict) else {"row"}
        problem = f"lacks {', '.join(sorted(missing))}" if missing else row_problem(row)
        if problem:
            raise UserError(f"{path}: row {i + 1}: {problem}")
    policies = doc["options"].get("policies", [])
    if not isinstance(policies, list) or not all(isinstance(p, str) for p in policies):
        raise UserError(f"{path}: options.policies must be a list of scheme names")
    return {**doc, "summary": summarize(doc["rows"], policies)}


# ---------------------------------------------------------------- tables

SUMMARY_HEADER = ["scheme", "role", "links", "mean score", "gap to bound", "wins", "util %",
                  "e2e p95 ms"]
MISSING = "-"


def _fixed(value: float | None, digits: int, scale: float = 1.0) -> str:
    if value is None or math.isnan(value):
        return MISSING
    return f"{value * scale:.{digits}f}"


def summary_cells(summary: dict[str, Any]) -> list[list[str]]:
    """One group's summary as table cells (without the header): the text table, the HTML
    report and docs/results.md all show these."""
    lines = []
    for e in summary["schemes"]:
        links = str(e["links"]) + (f" ({e['unscored']} unscored)" if e["unscored"] else "")
        lines.append([e["scheme"], e["role"], links, _fixed(e["mean_score"], 2),
                      _fixed(e["mean_gap"], 2), MISSING if e["wins"] is None else str(e["wins"]),
                      _fixed(e["mean_utilization"], 1, 100.0),
                      _fixed(e["mean_e2e_delay_p95_ms"], 1)])
    return lines


def group_notes(group: str, summary: dict[str, Any]) -> str:
    """The line under a group's table: its links, and each policy against the best baseline."""
    best = summary["best_baseline"]
    by_name = {e["scheme"]: e for e in summary["schemes"]}
    parts = [f"{group}: {summary['links']} links"]
    if best:
        parts.append(f"best baseline {best} ({_fixed(by_name[best]['mean_score'], 2)})")
    for e in summary["schemes"]:
        if e["role"] == "policy" and best and e["mean_score"] is not None:
            margin = e["mean_score"] - by_name[best]["mean_score"]
            parts.append(f"{e['scheme']} {margin:+.2f} against it")
    return "; ".join(parts)


def format_tables(doc: dict[str, Any], render: Callable[[list[list[str]]], list[str]]) -> str:
    """Every group's summary table, rendered by `render` (text or Markdown), under its note."""
    blocks = []
    for group, summary in doc["summary"].items():
        table = render([SUMMARY_HEADER] + summary_cells(summary))
        blocks.append("\n".join([group_notes(group, summary), *table]))
    blocks += [f"skipped {s['group']}: {s['reason']}" for s in doc["skipped"]]
    return "\n\n".join(blocks) + "\n"


def render_text(table: list[list[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    out = ["  ".join([line[0].ljust(widths[0]), line[1].ljust(widths[1])]
                     + [c.rjust(w) for c, w in zip(line[2:], widths[2:])]).rstrip()
           for line in table]
    return [out[0], "-" * max(len(line) for line in out)] + out[1:]


def render_markdown(table: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(line) + " |" for line in table]
    return [lines[0], "|" + "---|" * len(table[0])] + lines[1:]
