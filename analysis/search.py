"""Where does a scheme lose? A search of a link space for the links on which its score falls
furthest below the best classic baseline's: Genet's gap-to-baseline objective (Xia et al.,
SIGCOMM 2022).

A point of the search is a link drawn from the space (emulators/link_space.py). On it the
scheme and every baseline run once per seed (seeds seed..seed+K-1, as `ccgym eval --seed S
--runs K` runs them, with the same engine: analysis/coexist.py's runs_on_link), each scored
by its own flow's mean score over the seeds; the point's gap is the best baseline's score minus
the scheme's. A positive gap is a link where some classic scheme does better. Optuna's TPE
sampler, seeded, proposes the points: the same seed, trials and space give the same search.

The largest of many noisy gaps is larger than its link's true gap (the winner's curse), so the
points of the largest trial gaps (twice as many as are kept) are confirmed: scored again at the
next K seeds (seed+K..seed+2K-1), which the trials never used, and the kept links are the
largest by the lesser of the two gaps (Point.kept_gap).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.analysis.coexist import link_start, runs_on_link
from ccgym.emulators.link_space import (NO_COMPETITOR, LinkSpace, rate_and_delivery,
                                        trace_seed)
from ccgym.emulators.links import Link, build_links, link_set_text
from ccgym.envs.scoring import check_flow_starts, check_run_length, link_duration_ms
from ccgym.errors import UserError

DEFAULT_BASELINES = ("cubic", "bbr", "vegas", "copa")
SEARCH_GROUP = "search"
SEARCH_KIND = "search"  # the --json document's "kind", by which `ccgym report` knows it
# A run that delivers nothing scores -inf (measure/metrics.py), and one too short to measure
# NaN; the search needs a number to rank, so both count as this floor: 1 kbit/s at a 10 s
# delay, below any run that delivers. (+inf, a zero delay, cannot occur: a space's delays are
# above 0.)
SCORE_FLOOR = math.log(1e-3) - math.log(10_000.0)


@dataclass(frozen=True)
class Point:
    """One trial: the link drawn, each scheme's mean score over the seeds, and the gap; for a
    confirmed point, the same at the confirmation's seeds."""

    number: int
    table: dict[str, Any]     # the link as a [[link]] table
    link: Link
    params: dict[str, Any]    # what the sampler chose (the table holds them rounded)
    score: float              # the searched scheme's
    baselines: dict[str, float]
    seconds: float
    confirmed_score: float | None = None
    confirmed_baselines: dict[str, float] | None = None

    @property
    def best_baseline(self) -> str:
        return max(self.baselines, key=lambda name: self.baselines[name])

    @property
    def gap(self) -> float:
        return gap_to_best(self.baselines, self.score)

    @property
    def confirmed_gap(self) -> float | None:
        if self.confirmed_score is None or self.confirmed_baselines is None:
            return None
        return gap_to_best(self.confirmed_baselines, self.confirmed_score)

    @property
    def kept_gap(self) -> float:
        """The gap by which kept links are ranked: the lesser of the trial's and the
        confirmation's. The trial gap of a point among the largest is inflated by its
        selection; the confirmed gap is not, but ranking the candidates by it alone selects
        again. The lesser claims only what both independent measurements support, so a link
        is kept only when it is bad at both sets of seeds."""
        confirmed = self.confirmed_gap
        return self.gap if confirmed is None else min(self.gap, confirmed)

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.number, "link": self.link.name, "spec": self.link.spec,
                "competitors": list(self.link.competitors), "params": self.params,
                "table": self.table,
                "gap": self.gap, "score": self.score, "best_baseline": self.best_baseline,
                "baseline_scores": self.baselines, "seconds": self.seconds,
                "confirmed_gap": self.confirmed_gap, "confirmed_score": self.confirmed_score,
                "confirmed_baseline_scores": self.confirmed_baselines,
                "kept_gap": self.kept_gap}


@dataclass(frozen=True)
class Search:
    """What to search: the scheme against the baselines over a space, K seeds a point."""

    space: LinkSpace
    scheme: str
    baselines: tuple[str, ...] = DEFAULT_BASELINES
    seeds: int = 3
    seed: int = 1
    duration_s: float | None = None  # None: a trace once, other links 30 s (as ccgym eval)

    @property
    def run_seeds(self) -> list[int]:
        return [self.seed + k for k in range(self.seeds)]

    @property
    def confirm_seeds(self) -> list[int]:
        """The confirmation's seeds: the K after the trials', so that the trials never used
        them and `ccgym eval --seed S+K --runs K` replays them."""
        return [self.seed + self.seeds + k for k in range(self.seeds)]

    def check(self) -> None:
        """UserError for a space whose runs could not be measured, judged on the link of each
        delivery process that is hardest to measure (the longest delay, a competitor where the
        space has one) by the rules every run is held to: a run (of its default length, as
        eval's) shorter than MIN_RUN_RTTS, or a competitor that would start after its end."""
        space = self.space
        for delivery in space.deliveries:
            table = space.draw(_HardestToMeasure(delivery), "longest-delay",
                               trace_seed(self.seed, 0))
            link = build_links(space.path, SEARCH_GROUP, [table])[0]
            duration_ms = link_duration_ms(link, self.duration_s)
            try:
                check_run_length(link, duration_ms, "--duration-s or cellular.trace_s, or a "
                                                    "shorter delay_ms.max")
            except UserError as e:
                raise UserError(f"{space.path}: {e}") from None
            interval_s = link_start(link)[1]
            try:
                check_flow_starts([link], [duration_ms], 1 + len(link.competitors), interval_s)
            except UserError:
                raise UserError(f"{space.path}: interval_s {interval_s:g}: the second flow "
                                f"would start after the run's end ({duration_ms / 1000:g} s)"
                                ) from None

    def scores(self, link: Link, seeds: Sequence[int]) -> tuple[float, dict[str, float]]:
        """The scheme's mean score on the link over `seeds`, and each baseline's."""
        duration_ms = link_duration_ms(link, self.duration_s)
        check_flow_starts([link], [duration_ms], 1 + len(link.competitors), link_start(link)[1])
        return (mean_score(link, self.scheme, seeds, duration_ms),
                {name: mean_score(link, name, seeds, duration_ms) for name in self.baselines})

    def point(self, number: int, trial: Any) -> Point:
        """Trial `number`: a link drawn by `trial`, scored for the scheme and each baseline."""
        start = time.monotonic()
        table = self.space.draw(trial, f"t{number}", trace_seed(self.seed, number))
        link = build_links(self.space.path, SEARCH_GROUP, [table])[0]
        score, baselines = self.scores(link, self.run_seeds)
        return Point(number, table, link, dict(trial.params), score, baselines,
                     time.monotonic() - start)

    def confirmed(self, point: Point) -> Point:
        """The point scored again at the confirmation's seeds."""
        score, baselines = self.scores(point.link, self.confirm_seeds)
        return replace(point, confirmed_score=score, confirmed_baselines=baselines)


class _HardestToMeasure:
    """A trial, as LinkSpace.draw asks one, that picks the space's link of one delivery process
    hardest to measure: the longest delay, a competitor where there is one and its latest
    start; the low end of every other range and the first of every other list."""

    def __init__(self, delivery: str) -> None:
        self.delivery = delivery

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        return high if name in ("delay_ms", "interval_s") else low

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        if name == "delivery":
            return self.delivery
        if name == "competitor":
            return next((c for c in choices if c != NO_COMPETITOR), choices[0])
        return choices[0]


def gap_to_best(baselines: dict[str, float], score: float) -> float:
    """Genet's gap: the best baseline's score minus the scheme's; above 0 where some classic
    scheme does better."""
    return max(baselines.values()) - score


def mean_score(link: Link, scheme: str, seeds: Sequence[int], duration_ms: float) -> float:
    """The mean score of the scheme's own flow on the link over `seeds`, beside the link's
    competitors started as the link says (link_start)."""
    first, interval_s = link_start(link)
    runs = runs_on_link(link, scheme, link.competitors, first, seeds, duration_ms, interval_s)
    return float(np.mean([_finite(run.metrics.score) for run in runs]))


def _finite(score: float) -> float:
    return score if math.isfinite(score) else SCORE_FLOOR


Progress = Callable[[Point], None]


def run_search(search: Search, trials: int, progress: Progress | None = None) -> list[Point]:
    """`trials` points proposed by a seeded TPE sampler to maximize the gap; in trial order."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    search.check()
    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.TPESampler(seed=search.seed))
    points = []
    for number in range(trials):
        trial = study.ask()
        point = search.point(number, trial)
        study.tell(trial, point.gap)
        points.append(point)
        if progress is not None:
            progress(point)
    return points


def confirm_count(trials: int, keep: int) -> int:
    """How many points the confirmation scores again: twice as many as are kept, so that a
    lucky draw among them can give way to a link the trial seeds undersold."""
    return min(trials, 2 * keep)


def confirm_worst(search: Search, points: Sequence[Point], keep: int,
                  progress: Progress | None = None) -> tuple[list[Point], list[Point]]:
    """The points of the largest trial gaps (confirm_count) scored again at the confirmation's
    seeds; (every point, the confirmed ones replaced, in trial order; the `keep` of the
    largest kept_gap, largest first, ties to the earlier trial)."""
    candidates = sorted(points, key=lambda p: (-p.gap, p.number))[:confirm_count(len(points),
                                                                                  keep)]
    confirmed = {}
    for point in candidates:
        confirmed[point.number] = search.confirmed(point)
        if progress is not None:
            progress(confirmed[point.number])
    kept = sorted(confirmed.values(), key=lambda p: (-p.kept_gap, p.number))[:keep]
    return [confirmed.get(p.number, p) for p in points], kept


def found_link_set(search: Search, kept: Sequence[Point], trials: int, path: str) -> str:
    """The kept links as a link set (configs/links form) to be written at `path`: each link's
    source says its gap."""
    tables = []
    for point in kept:
        table = dict(point.table)
        best = point.best_baseline
        table["source"] = (f"ccgym search trial {point.number}: {search.scheme} scores "
                           f"{point.score:.3f}, {best} {point.baselines[best]:.3f} (gap "
                           f"{point.gap:.3f}; seeds {seed_span(search.run_seeds)}; confirmed "
                           f"gap {_confirmed_text(point)} at seeds "
                           f"{seed_span(search.confirm_seeds)})")
        tables.append(table)
    replay = replay_command(search, path)
    comment = (f"Found by ccgym search: the {len(kept)} links of {trials} trials where "
               f"{search.scheme} falls furthest below the best of {', '.join(search.baselines)}"
               f", by the lesser of the gap at the trial's seeds and at the confirmation's."
               f"\nSpace: {search.space.path}; search seed {search.seed}.\nScored as the "
               f"search scored it (--seed {search.confirm_seeds[0]}: as it confirmed; another "
               f"--seed: at seeds it never used):\n{replay}")
    description = (f"Where {search.scheme} loses: the worst {len(kept)} of {trials} links drawn "
                   f"from {search.space.path.name}")
    return link_set_text(SEARCH_GROUP, description, tables, comment)


def seed_span(seeds: Sequence[int]) -> str:
    return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])


def _confirmed_text(point: Point) -> str:
    confirmed = point.confirmed_gap
    return "-" if confirmed is None else f"{confirmed:.3f}"


def trials_document(search: Search, points: Sequence[Point], kept: Sequence[Point],
                    seconds: float) -> dict[str, Any]:
    """Every trial of a search and which were kept: what --json writes, and what `ccgym
    report` and plot_points read."""
    return {"kind": SEARCH_KIND, "scheme": search.scheme, "baselines": list(search.baselines),
            "space": str(search.space.path), "seed": search.seed, "seeds": search.run_seeds,
            "confirm_seeds": search.confirm_seeds, "duration_s": search.duration_s,
            "seconds": seconds,
            "kept": [p.number for p in kept], "trials": [p.to_dict() for p in points]}


def plot_points(document: dict[str, Any]) -> list[dict[str, Any]]:
    """A trials document's points as plots.plot_search draws them."""
    kept = set(document["kept"])
    return [{"rate_mbps": rate, "delay_ms": t["table"]["delay_ms"], "delivery": delivery,
             "gap": t["gap"], "kept": t["trial"] in kept}
            for t in document["trials"] for rate, delivery in [rate_and_delivery(t["table"])]]


def plot_title(document: dict[str, Any]) -> str:
    return (f"Where {document['scheme']} loses: its gap to the best of "
            f"{', '.join(document['baselines'])} on {len(document['trials'])} links of "
            f"{Path(document['space']).name} ({len(document['seeds'])} seeds each)")


KEPT_HEADER = ["gap", "trial gap", "confirmed gap", "score", "best baseline", "link"]


def kept_rows(document: dict[str, Any]) -> list[list[str]]:
    """The kept trials of a trials document as table rows (KEPT_HEADER), worst first; the gap
    is the one they were kept by (a document written before confirmation: the trial's)."""
    trials = {t["trial"]: t for t in document["trials"]}
    rows = []
    for number in document["kept"]:
        trial = trials[number]
        best = str(trial["best_baseline"])
        confirmed = trial.get("confirmed_gap")
        rows.append([f"{float(trial.get('kept_gap', trial['gap'])):.3f}",
                     f"{float(trial['gap']):.3f}",
                     "-" if confirmed is None else f"{float(confirmed):.3f}",
                     f"{float(trial['score']):.3f}",
                     f"{best} {float(trial['baseline_scores'][best]):.3f}", str(trial["link"])])
    return rows


def check_document(path: Any, document: dict[str, Any]) -> dict[str, Any]:
    """A trials document read from `path`, checked enough to report and plot; UserError naming
    the file and what is wrong."""
    try:
        points = plot_points(document)
        plot_title(document)
        kept_rows(document)
        numbers = all(isinstance(p[k], (int, float)) and not isinstance(p[k], bool)
                      for p in points for k in ("rate_mbps", "delay_ms", "gap"))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise UserError(f"{path}: not a whole search document ({type(e).__name__}: {e}); "
                        "write it with ccgym search --json") from None
    if not points or not numbers:
        raise UserError(f"{path}: a search document needs trials, each with a number for its "
                        "rate, delay and gap; write it with ccgym search --json")
    return document


def replay_command(search: Search, found: str) -> str:
    """The `ccgym eval` command that scores the found links as the search did."""
    words = ["ccgym eval --links", found, "--schemes",
             ",".join([search.scheme, *search.baselines]), "--seed", str(search.seed),
             "--runs", str(search.seeds)]
    if search.duration_s is not None:
        words += ["--duration-s", f"{search.duration_s:g}"]
    return " ".join(words)
