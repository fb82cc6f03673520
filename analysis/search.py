"""Where does a scheme lose? A search of a link space for the links on which its score falls
furthest below the best classic baseline's: Genet's gap-to-baseline objective (Xia et al.,
SIGCOMM 2022).

A point of the search is a link drawn from the space (emulators/link_space.py). On it the
scheme and every baseline run once per seed (seeds seed..seed+K-1, as `ccgym eval --seed S
--runs K` runs them, with the same engine: analysis/coexist.py's runs_on_link), each scored
by its own flow's mean score over the seeds; the point's gap is the best baseline's score minus
the scheme's. A positive gap is a link where some classic scheme does better. Optuna's TPE
sampler, seeded, proposes the points: the same seed, trials and space give the same search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass
class Point:
    """One trial: the link drawn, each scheme's mean score over the seeds, and the gap."""

    number: int
    table: dict[str, Any]     # the link as a [[link]] table
    link: Link
    params: dict[str, Any]    # what the sampler chose (the table holds them rounded)
    score: float              # the searched scheme's
    baselines: dict[str, float]
    seconds: float

    @property
    def best_baseline(self) -> str:
        return max(self.baselines, key=lambda name: self.baselines[name])

    @property
    def gap(self) -> float:
        return gap_to_best(self.baselines, self.score)

    def to_dict(self) -> dict[str, Any]:
        return {"trial": self.number, "link": self.link.name, "spec": self.link.spec,
                "competitors": list(self.link.competitors), "params": self.params,
                "table": self.table,
                "gap": self.gap, "score": self.score, "best_baseline": self.best_baseline,
                "baseline_scores": self.baselines, "seconds": self.seconds}


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

    def score(self, link: Link, scheme: str, duration_ms: float) -> float:
        return mean_score(link, scheme, self.run_seeds, duration_ms)

    def point(self, number: int, trial: Any) -> Point:
        """Trial `number`: a link drawn by `trial`, scored for the scheme and each baseline."""
        start = time.monotonic()
        table = self.space.draw(trial, f"t{number}", trace_seed(self.seed, number))
        link = build_links(self.space.path, SEARCH_GROUP, [table])[0]
        duration_ms = link_duration_ms(link, self.duration_s)
        check_flow_starts([link], [duration_ms], 1 + len(link.competitors), link_start(link)[1])
        score = self.score(link, self.scheme, duration_ms)
        baselines = {name: self.score(link, name, duration_ms) for name in self.baselines}
        return Point(number, table, link, dict(trial.params), score, baselines,
                     time.monotonic() - start)


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


def worst(points: Sequence[Point], keep: int) -> list[Point]:
    """The `keep` points of the largest gap, largest first (ties: the earlier trial)."""
    return sorted(points, key=lambda p: (-p.gap, p.number))[:keep]


def found_link_set(search: Search, kept: Sequence[Point], trials: int, path: str) -> str:
    """The kept links as a link set (configs/links form) to be written at `path`: each link's
    source says its gap."""
    tables = []
    for point in kept:
        table = dict(point.table)
        best = point.best_baseline
        table["source"] = (f"ccgym search trial {point.number}: {search.scheme} scores "
                           f"{point.score:.3f}, {best} {point.baselines[best]:.3f} (gap "
                           f"{point.gap:.3f}; seeds {search.seed}-{search.seed + search.seeds - 1})")
        tables.append(table)
    replay = replay_command(search, path)
    comment = (f"Found by ccgym search: the {len(kept)} links of {trials} trials where "
               f"{search.scheme} falls furthest below the best of {', '.join(search.baselines)}."
               f"\nSpace: {search.space.path}; search seed {search.seed}.\nScored as the "
               f"search scored it (another --seed: at seeds it never used):\n{replay}")
    description = (f"Where {search.scheme} loses: the worst {len(kept)} of {trials} links drawn "
                   f"from {search.space.path.name}")
    return link_set_text(SEARCH_GROUP, description, tables, comment)


def trials_document(search: Search, points: Sequence[Point], kept: Sequence[Point],
                    seconds: float) -> dict[str, Any]:
    """Every trial of a search and which were kept: what --json writes, and what `ccgym
    report` and plot_points read."""
    return {"kind": SEARCH_KIND, "scheme": search.scheme, "baselines": list(search.baselines),
            "space": str(search.space.path), "seed": search.seed, "seeds": search.run_seeds,
            "duration_s": search.duration_s, "seconds": seconds,
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


KEPT_HEADER = ["gap", "score", "best baseline", "link"]


def kept_rows(document: dict[str, Any]) -> list[list[str]]:
    """The kept trials of a trials document as table rows (KEPT_HEADER), worst first."""
    trials = {t["trial"]: t for t in document["trials"]}
    rows = []
    for number in document["kept"]:
        trial = trials[number]
        best = str(trial["best_baseline"])
        rows.append([f"{float(trial['gap']):.3f}", f"{float(trial['score']):.3f}",
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
