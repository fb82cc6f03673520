"""Schemes beside competitors on one bottleneck, in virtual time: `ccgym eval --against`.

Each evaluated scheme runs with the competitors' classic flows on one path (the simulator's
flows; starts staggered by an interval, the evaluated flow first or last). A row gives the
evaluated flow's own throughput, delays and score, the link's utilization by all flows, each
flow's share and Jain's index over the flows.

Harm (Ware et al., "Beyond Jain's fairness index", HotNets 2019): a scheme is judged by what
it does to a cubic flow beside it, against what a second cubic flow would do (the baseline: the
same link, seeds and starts with cubic in the evaluated flow's place). For throughput, harm =
(baseline - with X) / baseline; for the p95 one-way delay, harm = (with X - baseline) / with X;
both clipped at 0 (doing better than cubic is no harm) and averaged over runs.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ccgym.analysis.evaluate import run_scheme, validate_schemes
from ccgym.emulators import _core
from ccgym.emulators.links import FIRST_CHOICES, Link
from ccgym.envs.scoring import (STEPPED_SCHEMES, Run, aggregate, check_flow_starts, link_duration_ms,
                                omniscient_runs, run_flows_stepped, score_simulation,
                                stepped_scheme_factory)
from ccgym.errors import UserError
from ccgym.measure.metrics import Metrics

HARM_REFERENCE = "cubic"  # the flow whose harm is measured, and the baseline's second flow


@dataclass(frozen=True)
class Lineup:
    """The flows on the bottleneck, in start order, and which of them is evaluated."""

    schemes: tuple[str, ...]
    evaluated: int

    @property
    def victim(self) -> int | None:
        """The first cubic competitor: the flow whose harm is measured (None: no cubic)."""
        return next((i for i, s in enumerate(self.schemes)
                     if i != self.evaluated and s == HARM_REFERENCE), None)

    def with_evaluated(self, scheme: str) -> Lineup:
        schemes = list(self.schemes)
        schemes[self.evaluated] = scheme
        return Lineup(tuple(schemes), self.evaluated)


def link_start(link: Link, first: str | None = None,
               interval_s: float | None = None) -> tuple[str, float]:
    """Which flow starts first beside a link's competitors and how many seconds apart the
    flows start: the command's (`first`, `interval_s`) where given, else the link's own (its
    link set's `first`, `interval_s`), else the competitors first, all at once."""
    first = first if first is not None else link.first or FIRST_CHOICES[0]
    interval_s = interval_s if interval_s is not None else link.interval_s or 0.0
    return first, interval_s


def make_lineup(scheme: str, competitors: Sequence[str], first: str) -> Lineup:
    if first not in FIRST_CHOICES:
        raise ValueError(f"first must be one of {FIRST_CHOICES}, got {first!r}")
    if first == "scheme":
        return Lineup((scheme, *competitors), 0)
    return Lineup((*competitors, scheme), len(competitors))


def parse_against(text: str, flag: str = "--against") -> list[str]:
    """A comma-separated list of competitors, each a classic scheme; one may repeat (two
    cubic flows). UserError naming the bad item."""
    competitors = [s.strip() for s in text.split(",")]
    if not all(competitors):
        raise UserError(f"{flag} {text!r}: an empty item; e.g. {flag} cubic or {flag} cubic,bbr")
    for scheme in competitors:
        prefix = scheme.partition(":")[0]
        if prefix in STEPPED_SCHEMES or prefix == "kernel":
            raise UserError(f"{flag} {scheme}: a competitor must be a classic scheme (it runs "
                            "in C++ beside the evaluated one); kernel TCP competes in real "
                            "time: ccgym run --against kernel:cubic")
        try:
            _core.validate_classic_scheme(scheme)
        except ValueError as e:
            raise UserError(f"{flag} {scheme}: {e}") from None
    return competitors


def run_lineup(link: Link, scheme: str, lineup: Lineup, seeds: Sequence[int],
               duration_ms: float, interval_ms: float) -> list[Run]:
    """The lineup on one link once per seed, `scheme` in the evaluated flow (a learned policy
    or the oracle steps it from Python), flow i starting at i * interval_ms; runs scored with
    the evaluated flow's figures."""
    factory = stepped_scheme_factory(scheme)
    names = lineup.with_evaluated(scheme).schemes
    starts = [i * interval_ms for i in range(len(names))]
    specs = [(_core.EXTERNAL_SCHEME if factory and i == lineup.evaluated else name, starts[i], -1.0)
             for i, name in enumerate(names)]
    sims = [_core.Simulator(link.spec, specs, seed) for seed in seeds]
    if factory is None:
        _core.run_all_until(sims, duration_ms, 0)
    else:
        spans = {lineup.evaluated: (starts[lineup.evaluated], math.inf)}
        run_flows_stepped(sims, [link] * len(sims), seeds, factory, spans, duration_ms)
    runs = []
    for sim, seed in zip(sims, seeds):
        metrics, log, opportunities = score_simulation(sim, duration_ms)
        runs.append(Run(link, scheme, seed, duration_ms, evaluated_view(metrics, lineup.evaluated),
                        log, opportunities, flow_schemes=names))
    return runs


def flow_starts_ms(log: Any) -> list[float]:
    """Each flow's first send, from the earliest (ms), by flow id: where a real run's flows
    started (senders started together begin as fast as the machine lets them: ms apart, a few
    hundred ms on a loaded machine)."""
    flows = np.asarray(log["flow"])
    sends = np.asarray(log["send_ms"])
    firsts = [float(np.min(sends[flows == f])) for f in np.unique(flows)]
    return [first - min(firsts) for first in firsts]


def _flow(metrics: Metrics, flow: int) -> dict[str, float]:
    found = next((f for f in metrics.flows if f["flow"] == flow), None)
    if found is None:  # check_flow_starts lets no flow start after the run's end
        raise RuntimeError(f"flow {flow} sent nothing")
    return found


def evaluated_view(metrics: Metrics, evaluated: int) -> Metrics:
    """A shared run's metrics with the evaluated flow's throughput, delays and score on top;
    capacity, utilization and loss stay the link's (all flows)."""
    own = _flow(metrics, evaluated)
    return dataclasses.replace(metrics, throughput_mbps=own["throughput_mbps"],
                               delay_p95_ms=own["delay_p95_ms"],
                               e2e_delay_p95_ms=own["e2e_delay_p95_ms"], score=own["score"])


def _ratio(numerator: float, denominator: float) -> float:
    return max(0.0, numerator / denominator) if denominator > 0 else 0.0


def harm(with_scheme: Sequence[Run], baseline: Sequence[Run], victim: int) -> dict[str, float]:
    """The harm the evaluated flow does to flow `victim` (cubic), run by run against the
    baseline run of the same seed, averaged: throughput and p95 one-way delay harm."""
    throughput, delay = [], []
    for mine, base in zip(with_scheme, baseline, strict=True):
        if mine.seed != base.seed:
            raise ValueError(f"harm of seed {mine.seed} against a baseline of seed {base.seed}")
        hurt, alone = _flow(mine.metrics, victim), _flow(base.metrics, victim)
        throughput.append(_ratio(alone["throughput_mbps"] - hurt["throughput_mbps"],
                                 alone["throughput_mbps"]))
        delay.append(_ratio(hurt["delay_p95_ms"] - alone["delay_p95_ms"], hurt["delay_p95_ms"]))
    return {"harm_flow": victim, "harm_throughput": float(np.mean(throughput)),
            "harm_delay": float(np.mean(delay))}


def shared_row(link: Link, scheme: str, lineup: Lineup, runs: Sequence[Run],
               interval_s: float) -> dict[str, Any]:
    """The leaderboard row of one scheme beside its competitors: the evaluated flow's figures
    (evaluated_view), each flow's scheme, share and delays, Jain's index."""
    row = aggregate(link, scheme, [run.metrics for run in runs])
    names = lineup.with_evaluated(scheme).schemes
    for flow in row["flows"]:
        index = int(flow["flow"])
        flow["scheme"] = names[index]
        flow["evaluated"] = index == lineup.evaluated
    row.update(against=[s for i, s in enumerate(names) if i != lineup.evaluated],
               evaluated_flow=lineup.evaluated, interval_s=interval_s)
    return row


def check_shared(schemes: Sequence[str], flows: int) -> None:
    """What cannot run beside competitors in virtual time."""
    if flows > 1:
        raise UserError(f"--flows {flows} with competitors (--against or a link set's "
                        "competitors): give the flows as --against, e.g. --against cubic,cubic")
    for scheme in schemes:
        if scheme.startswith("kernel:"):
            raise UserError(f"--schemes {scheme}: kernel TCP beside competitors runs in real "
                            "time: ccgym run --link SPEC --scheme kernel:cubic --against ...")
        if scheme.partition(":")[0] == "oracle":
            raise UserError("--schemes oracle: its ideal window assumes the link is its own; it "
                            "cannot run beside competitors")


def evaluate_shared(links: Sequence[Link], schemes: Sequence[str],
                    against: Sequence[str] | None, first: str | None = None, runs: int = 1,
                    seed: int = 1, duration_s: float | None = None,
                    interval_s: float | None = None, progress: bool = True,
                    flows: int = 1) -> tuple[list[dict[str, Any]], list[Run]]:
    """Every scheme on every link beside the link's competitors (`against` when given, else
    the link set's), started as link_start says, `runs` times; a link without competitors
    runs each scheme alone. Rows as `evaluate` gives them, plus flows' schemes and, beside
    cubic, harm."""
    from tqdm import tqdm

    check_shared(schemes, flows)
    validate_schemes(schemes)
    competitors = {link.name: list(link.competitors if against is None else against)
                   for link in links}
    durations_ms = [link_duration_ms(link, duration_s) for link in links]
    starts = {link.name: link_start(link, first, interval_s) for link in links}
    for link, duration_ms in zip(links, durations_ms):
        check_flow_starts([link], [duration_ms], 1 + len(competitors[link.name]),
                          starts[link.name][1])
    seeds = [seed + r for r in range(runs)]
    rows: list[dict[str, Any]] = []
    all_runs: list[Run] = []
    with tqdm(total=len(links) * (len(schemes) + 1), desc="eval", unit="run",
              disable=not progress, leave=False) as bar:
        for link, duration_ms in zip(links, durations_ms):
            rows.append(aggregate(link, "omniscient", omniscient_runs(link, seeds, duration_ms)))
            bar.update()
            link_first, link_interval_s = starts[link.name]
            link_rows, link_runs = _link_rows(link, schemes, competitors[link.name], link_first,
                                              seeds, duration_ms, link_interval_s, bar)
            rows.extend(link_rows)
            all_runs.extend(link_runs)
    return rows, all_runs


def _link_rows(link: Link, schemes: Sequence[str], competitors: Sequence[str], first: str,
               seeds: Sequence[int], duration_ms: float, interval_s: float,
               bar: Any) -> tuple[list[dict[str, Any]], list[Run]]:
    rows, runs = [], []
    lineup = make_lineup(HARM_REFERENCE, competitors, first)
    victim = lineup.victim if competitors else None
    baseline = (run_lineup(link, HARM_REFERENCE, lineup, seeds, duration_ms, interval_s * 1e3)
                if victim is not None else [])
    for scheme in schemes:
        bar.set_postfix_str(f"{link.name}: {scheme}")
        # cubic runs again, not taken from the baseline: its harm of zero then shows that the
        # same seeds give the same runs.
        scheme_runs = runs_on_link(link, scheme, competitors, first, seeds, duration_ms,
                                   interval_s)
        if not competitors:
            rows.append(aggregate(link, scheme, [r.metrics for r in scheme_runs]))
        else:
            row = shared_row(link, scheme, lineup, scheme_runs, interval_s)
            if victim is not None:
                row.update(harm(scheme_runs, baseline, victim))
            rows.append(row)
        runs.extend(scheme_runs)
        bar.update()
    return rows, runs


def runs_on_link(link: Link, scheme: str, competitors: Sequence[str], first: str,
                 seeds: Sequence[int], duration_ms: float, interval_s: float) -> list[Run]:
    """One scheme on one link once per seed, alone or beside `competitors` (flows `interval_s`
    apart, `first` starting first); each run scored with the scheme's own flow's figures."""
    if not competitors:
        return run_scheme(link, scheme, seeds, duration_ms)
    lineup = make_lineup(HARM_REFERENCE, competitors, first)
    return run_lineup(link, scheme, lineup, seeds, duration_ms, interval_s * 1e3)
