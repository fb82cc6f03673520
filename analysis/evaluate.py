"""Runs schemes over links in the simulator and scores them: the engine of `ccgym eval`.

Classic schemes run entirely in C++ (many runs per call, on threads). Schemes
decided in Python every STEP_MS — the oracle and learned policies — drive
`external` flows; all runs of such a scheme on a link step in lockstep so that
the policy's inference is batched.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ccgym.analysis.metrics import Metrics, omniscient, summarize
from ccgym.emulators.links import Link
from ccgym.errors import UserError


@dataclass
class Slot:
    """One external flow of one simulation, as a Python-decided scheme sees it."""

    sim: Any  # ccgym.emulators._core.Simulator
    flow: int
    link: Link
    seed: int


class SteppedScheme(Protocol):
    """A scheme whose window is decided in Python every STEP_MS."""

    def reset(self, slots: Sequence[Slot]) -> None: ...

    def decide(self, slots: Sequence[Slot]) -> None:
        """Sets each slot's window (slot.sim.set_window(w, slot.flow))."""


# scheme prefix -> "module:factory"; the factory takes the text after "prefix:" (or "").
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


def validate_schemes(schemes: Sequence[str]) -> None:
    from ccgym.emulators import _core

    for scheme in schemes:
        if scheme.startswith("kernel:"):  # real TCP through the link shell
            from ccgym.deploy.shell import check_kernel_scheme

            check_kernel_scheme(scheme)
            continue
        factory = stepped_scheme_factory(scheme)
        if factory is not None:
            factory()  # loads its files now: a bad one fails before any run, not midway
            continue
        try:
            _core.validate_scheme(scheme)
        except ValueError as e:
            stepped = ", ".join(sorted(STEPPED_SCHEMES))
            raise UserError(f"--schemes: {e} (also: {stepped}, kernel:NAME)") from e


def link_duration_ms(link: Link, duration_s: float | None) -> float:
    """The run length: given, else the link's default (its data trace once, else 30 s)."""
    if duration_s is not None:
        return duration_s * 1000.0
    from ccgym.emulators.link_facts import default_duration_ms

    return default_duration_ms(link.spec)


# A run shorter than this many minimum RTTs measures its own start, not the link: a 3 ms trace
# on a 20 ms link reported an end-to-end delay below the propagation delay.
MIN_RUN_RTTS = 2


def check_run_length(link: Link, duration_ms: float, what: str = "--duration-s") -> None:
    """UserError when a run on this link would be too short to measure anything."""
    from ccgym.emulators import _core

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


def run_scheme(link: Link, scheme: str, seeds: Sequence[int], duration_ms: float,
               flows: int = 1, interval_ms: float = 0.0, threads: int = 0) -> list[Run]:
    """Runs one scheme on one link once per seed; returns the scored runs."""
    if scheme.startswith("kernel:"):
        from ccgym.deploy.shell import run_kernel_scheme

        return run_kernel_scheme(link, scheme, seeds, duration_ms, flows, interval_ms)
    from ccgym.emulators import _core
    from ccgym.emulators.stepping import run_stepped

    factory = stepped_scheme_factory(scheme)
    controller = "external" if factory else scheme
    sims = [_core.Simulator(link.spec, _flows(controller, flows, interval_ms), seed)
            for seed in seeds]
    if factory is None:
        _core.run_all_until(sims, duration_ms, threads)
    else:
        stepped = factory()
        slots = [Slot(sim, f, link, seed) for sim, seed in zip(sims, seeds) for f in range(flows)]
        stepped.reset(slots)
        run_stepped(sims, [duration_ms] * len(sims), lambda _: stepped.decide(slots), threads)
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
    from ccgym.emulators import _core

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


def evaluate(links: Sequence[Link], schemes: Sequence[str], runs: int = 1, seed: int = 1,
             duration_s: float | None = None, flows: int = 1, interval_s: float = 0.0,
             progress: bool = True) -> tuple[list[dict[str, Any]], list[Run]]:
    """Every scheme on every link, `runs` times: leaderboard rows and the runs themselves."""
    from tqdm import tqdm

    validate_schemes(schemes)
    durations_ms = [link_duration_ms(link, duration_s) for link in links]
    check_flow_starts(links, durations_ms, flows, interval_s)
    seeds = [seed + r for r in range(runs)]
    rows: list[dict[str, Any]] = []
    all_runs: list[Run] = []
    total = len(links) * (len(schemes) + 1)
    with tqdm(total=total, desc="eval", unit="run", disable=not progress, leave=False) as bar:
        for link, duration_ms in zip(links, durations_ms):
            bar.set_postfix_str(f"{link.name}: omniscient")
            rows.append(aggregate(link, "omniscient", omniscient_runs(link, seeds, duration_ms)))
            bar.update()
            for scheme in schemes:
                real_time = (f" (real time: {duration_ms / 1000:g} s a run)"
                             if scheme.startswith("kernel:") else "")
                bar.set_postfix_str(f"{link.name}: {scheme}{real_time}")
                scheme_runs = run_scheme(link, scheme, seeds, duration_ms, flows,
                                         interval_s * 1000.0)
                rows.append(aggregate(link, scheme, [r.metrics for r in scheme_runs]))
                all_runs.extend(scheme_runs)
                bar.update()
    return rows, all_runs


def write_outputs(rows: list[dict[str, Any]], runs: list[Run], json_path: str | None,
                  plots_dir: str | None) -> None:
    """--json OUT (the rows) and --plots DIR (the runs' plots), as `ccgym eval`, `ccgym run` and
    `ccgym shell` write them."""
    from pathlib import Path

    from ccgym.files import atomic_write_json

    if json_path:
        atomic_write_json(json_path, rows)
    if plots_dir:
        from ccgym.analysis.plots import write_plots

        written = write_plots(rows, runs, Path(plots_dir))
        # One line, not one per file: over a link set they are hundreds; the index shows them.
        print(f"wrote {len(written) - 1} plots into {plots_dir}: open {written[-1]}")
