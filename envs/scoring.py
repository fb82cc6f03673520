"""Runs schemes over links in the simulator and scores them: the engine of `ccgym eval` and of
a trainer's validation, one scoring code for both.

Classic schemes run entirely in C++ (many runs per call, on threads). Schemes
decided in Python every STEP_MS — the oracle and learned policies — drive
`external` flows; all runs of such a scheme on a link step in lockstep so that
the policy's inference is batched. Kernel TCP runs in real time through the link shell, one
layer up (analysis/evaluate.py).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.link_facts import default_duration_ms
from ccgym.emulators.links import Link
from ccgym.emulators.stepping import Slot, SteppedScheme, run_stepped
from ccgym.errors import UserError
from ccgym.measure.metrics import Metrics, omniscient, summarize

# scheme prefix -> "module:factory"; the factory takes the text after "prefix:" (or "").
# Imported when named: the LSTM's needs torch, which `ccgym eval cubic` must not pay for.
STEPPED_SCHEMES = {
    "oracle": "ccgym.oracle.scheme:OracleScheme",
    "lstm": "ccgym.policies.lstm_scheme:LstmScheme",
}


def stepped_scheme_factory(scheme: str) -> Callable[[], SteppedScheme] | None:
    prefix, _, argument = scheme.partition(":")
    target = STEPPED_SCHEMES.get(prefix)
    if target is None:
        return None
    module_name, _, attr = target.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except ModuleNotFoundError as e:
        raise UserError(f"scheme '{scheme}': not available in this build ({e.name})") from e
    return lambda: factory(argument)


def check_not_external(scheme: str, flag: str) -> None:
    """A UserError for `external`, which the core runs (as a window nothing sets) but no verb
    should score or send with: it is the learned flow's slot."""
    if scheme.split(":")[0] == _core.EXTERNAL_SCHEME:
        raise UserError(f"{flag}: {scheme} is the learned flow's slot (its window is set from "
                        "outside), not a scheme to run; give lstm:RUN_DIR|FILE for a learned "
                        "policy")


def validate_simulated_schemes(schemes: Sequence[str], others: Sequence[str] = ()) -> None:
    """UserError for a scheme the simulator cannot run; others: what else the caller accepts,
    for the message."""
    for scheme in schemes:
        factory = stepped_scheme_factory(scheme)
        if factory is not None:
            factory()  # loads its files now: a bad one fails before any run, not midway
            continue
        check_not_external(scheme, "--schemes")
        try:
            _core.validate_scheme(scheme)
        except ValueError as e:
            also = ", ".join([*sorted(STEPPED_SCHEMES), *others])
            raise UserError(f"--schemes: {e} (also: {also})") from e


def link_duration_ms(link: Link, duration_s: float | None) -> float:
    """The run length: given, else the link's default (its data trace once, else 30 s)."""
    if duration_s is not None:
        return duration_s * 1000.0
    return default_duration_ms(link.spec)


# A run shorter than this many minimum RTTs measures its own start, not the link: a 3 ms trace
# on a 20 ms link reported an end-to-end delay below the propagation delay.
MIN_RUN_RTTS = 2


def check_run_length(link: Link, duration_ms: float, what: str = "--duration-s") -> None:
    """UserError when a run on this link would be too short to measure anything."""
    min_rtt_ms = 2 * _core.parse_link_spec(link.spec).delay_ms
    if duration_ms < MIN_RUN_RTTS * min_rtt_ms:
        raise UserError(f"link {link.name}: a run of {duration_ms / 1000:g} s is shorter than "
                        f"{MIN_RUN_RTTS} minimum RTTs ({MIN_RUN_RTTS * min_rtt_ms / 1000:g} s): "
                        f"nothing in it could be measured; give a longer {what}"
                        + (" (a trace runs once by default)" if what == "--duration-s" else ""))


def check_flow_starts(links: Sequence[Link], durations_ms: Sequence[float], flows: int,
                      interval_s: float) -> None:
    """Every run must be long enough to measure (check_run_length), and every flow must start
    before it ends: a flow that never starts would be dropped from the table without a word."""
    last_start_ms = (flows - 1) * interval_s * 1000.0
    for link, duration_ms in zip(links, durations_ms):
        check_run_length(link, duration_ms)
        if last_start_ms >= duration_ms:
            raise UserError(f"--flows {flows} --interval-s {interval_s:g}: the last flow would "
                            f"start at {last_start_ms / 1000:g} s, but the run on link {link.name} "
                            f"ends at {duration_ms / 1000:g} s; give a longer --duration-s or a "
                            "shorter --interval-s")


@dataclass
class Run:
    link: Link
    scheme: str
    seed: int
    duration_ms: float
    metrics: Metrics
    log: dict[str, np.ndarray] = field(repr=False)
    opportunities_ms: np.ndarray = field(repr=False)
    flow_schemes: tuple[str, ...] = ()  # each flow's scheme, where flows of several share a link


def _flows(scheme: str, flows: int, interval_ms: float) -> list[tuple[str, float, float]]:
    return [(scheme, i * interval_ms, -1.0) for i in range(flows)]


def run_flows_stepped(sims: Sequence[Any], links: Sequence[Link], seeds: Sequence[int],
                      factory: Callable[[], SteppedScheme],
                      spans: dict[int, tuple[float, float]], duration_ms: float,
                      threads: int = 0) -> None:
    """Runs each simulation (of links[i], seeds[i]) to duration_ms, flow f of every one
    decided by a stepped scheme over its span [start, stop) of spans[f]: one scheme per flow
    (one batch across the simulations), reset for that flow alone and first asked at its
    start, so a recurrent policy's episode begins with its flow, never with the flows before
    it, and ends with its stop."""
    cohorts = []
    for flow, (start_ms, stop_ms) in spans.items():
        slots = [Slot(sim, flow, link, seed, duration_ms)
                 for sim, link, seed in zip(sims, links, seeds)]
        stepped = factory()
        stepped.reset(slots)
        cohorts.append((start_ms, stop_ms, stepped, slots))

    def decide(now_ms: float) -> None:
        for start_ms, stop_ms, stepped, slots in cohorts:
            if start_ms <= now_ms < stop_ms:
                stepped.decide(slots)

    run_stepped(sims, [duration_ms] * len(sims), decide, threads)


def simulate_scheme(link: Link, scheme: str, seeds: Sequence[int], duration_ms: float,
                    flows: int = 1, interval_ms: float = 0.0, threads: int = 0) -> list[Run]:
    """Runs one scheme on one link in the simulator once per seed; returns the scored runs."""
    factory = stepped_scheme_factory(scheme)
    controller = _core.EXTERNAL_SCHEME if factory else scheme
    sims = [_core.Simulator(link.spec, _flows(controller, flows, interval_ms), seed)
            for seed in seeds]
    if factory is None:
        _core.run_all_until(sims, duration_ms, threads)
    else:
        spans = {f: (f * interval_ms, math.inf) for f in range(flows)}
        run_flows_stepped(sims, [link] * len(sims), seeds, factory, spans, duration_ms, threads)
    runs = []
    for sim, seed in zip(sims, seeds):
        metrics, log, opportunities = score_simulation(sim, duration_ms)
        runs.append(Run(link, scheme, seed, duration_ms, metrics, log, opportunities))
    return runs


def score_simulation(sim: Any, duration_ms: float) -> tuple[Metrics, dict[str, np.ndarray],
                                                            np.ndarray]:
    """A simulation's metrics over [0, duration_ms), with its log and the link's delivery
    opportunities in that span (a simulation run past duration_ms is cut there)."""
    log = sim.log()
    opportunities = sim.opportunities()
    opportunities = opportunities[opportunities < duration_ms]
    return summarize(log, opportunities, duration_ms), log, opportunities


def omniscient_runs(link: Link, seeds: Sequence[int], duration_ms: float) -> list[Metrics]:
    delay = _core.parse_link_spec(link.spec).delay_ms
    out = []
    for seed in seeds:
        opportunities = _core.opportunities(link.spec, duration_ms, seed)
        out.append(omniscient(opportunities, duration_ms, delay))
    return out


def aggregate(link: Link, scheme: str, metrics: Sequence[Metrics]) -> dict[str, Any]:
    """One leaderboard row: the mean of each figure over runs, and the score's spread."""
    dicts = [m.to_dict() for m in metrics]
    row: dict[str, Any] = {"link": link.name, "group": link.group, "scheme": scheme,
                           "runs": len(dicts)}
    for key in ("throughput_mbps", "capacity_mbps", "utilization", "delay_p95_ms",
                "e2e_delay_p95_ms", "score", "loss"):
        values = [d[key] for d in dicts if d.get(key) is not None]
        row[key] = float(np.mean(values)) if values else None
    scores = [d["score"] for d in dicts if d.get("score") is not None]
    row["score_std"] = float(np.std(scores)) if len(scores) > 1 else 0.0
    if "flows" in dicts[0]:
        row["flows"] = _mean_flows([d["flows"] for d in dicts])
        row["jain_index"] = float(np.mean([d["jain_index"] for d in dicts]))
    return row


def _mean_flows(per_run: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    out = []
    for i, first in enumerate(per_run[0]):
        flow = {"flow": first["flow"]}
        for key, value in first.items():
            if key != "flow" and isinstance(value, (int, float)):
                values = [run[i][key] for run in per_run if run[i].get(key) is not None]
                flow[key] = float(np.mean(values)) if values else None
        out.append(flow)
    return out
