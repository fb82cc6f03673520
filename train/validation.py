"""Validation: the policy's score on held-out links, every iteration, for any trainer.

The figures are those of `ccgym eval` on the same links, seeds and lengths (one scoring code,
envs/scoring.py), so that a run's eval/ curves and its final leaderboard agree. The reference
lines (the oracle, the best baseline) are scored once at the start of a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.links import Link
from ccgym.emulators.stepping import Slot, run_stepped
from ccgym.envs.scoring import (aggregate, check_run_length, link_duration_ms, score_simulation,
                                simulate_scheme, validate_simulated_schemes)
from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.lstm_scheme import LstmScheme
from ccgym.train import curriculum
from ccgym.train.config import RunLinks, TrainConfig, resolve_run_links
from ccgym.train.share_validation import check_shares


def validate_policy(policy: LstmPolicy, links: Sequence[Any], duration_s: float | None, runs: int,
                    seed: int) -> list[dict[str, Any]]:
    """The policy on every validation link (runs seeds each) for duration_s, or None: each
    link's default length (a trace once, as ccgym eval runs it). All simulations are stepped
    in lockstep so that inference is one batch; one leaderboard row per link."""
    seeds = [seed + r for r in range(runs)]
    ends = [link_duration_ms(link, duration_s) for link in links]
    runs_of = [(link, s) for link in links for s in seeds]
    sims = [_core.Simulator(link.spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], s) for link, s in runs_of]
    slots = [Slot(sim, 0, link, s, end) for sim, (link, s), end in
             zip(sims, runs_of, [end for end in ends for _ in seeds])]
    scheme = LstmScheme.from_policy(policy)
    scheme.reset(slots)
    # The Poisson traces end at 60 s, att-lte-driving at 786 s: each simulation stops at its own.
    run_stepped(sims, [end for end in ends for _ in seeds], lambda _: scheme.decide(slots), 0)
    rows = []
    for i, (link, end_ms) in enumerate(zip(links, ends)):
        metrics = [score_simulation(sim, end_ms)[0] for sim in sims[i * runs:(i + 1) * runs]]
        rows.append(aggregate(link, "lstm", metrics))
    return rows


def finite_mean(values: Sequence[float | None]) -> float:
    """Mean of the scores; -inf if any is -inf (a link where nothing got through)."""
    numbers = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(np.mean(numbers)) if numbers else math.nan


def summarize_rows(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    """eval/ scalars: the mean score over links, and per link group the mean score,
    throughput and 95% end-to-end delay."""
    out = {"score": finite_mean([r["score"] for r in rows])}
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row.get("group") or "links"), []).append(row)
    for group, members in groups.items():
        out[f"{group}/score"] = finite_mean([r["score"] for r in members])
        out[f"{group}/throughput_mbps"] = finite_mean([r["throughput_mbps"] for r in members])
        out[f"{group}/e2e_delay_ms"] = finite_mean([r["e2e_delay_p95_ms"] for r in members])
    return out


def mean_score(links: Sequence[Link], scheme: str, runs: int, seed: int,
               duration_s: float | None) -> float:
    """A scheme's mean score over the links, each run as `ccgym eval` runs it."""
    seeds = [seed + r for r in range(runs)]
    scores = []
    for link in links:
        duration_ms = link_duration_ms(link, duration_s)
        check_run_length(link, duration_ms, "[eval] validation_length_s")
        scored = simulate_scheme(link, scheme, seeds, duration_ms)
        scores.append(aggregate(link, scheme, [r.metrics for r in scored])["score"])
    return finite_mean(scores)


def reference_scores(config: TrainConfig, links: Sequence[Any],
                     warn: Callable[[str], None]) -> dict[str, float]:
    """Mean validation score of the oracle and of the best baseline: reference lines."""
    ev = config.eval
    out: dict[str, float] = {}
    schemes = list(ev.baselines)
    if schemes:
        by_scheme = {s: mean_score(links, s, ev.runs, config.run.seed, ev.validation_length_s)
                     for s in schemes}
        best = max(by_scheme, key=lambda s: by_scheme[s])
        out["best_baseline_score"] = by_scheme[best]
        warn(f"best baseline on the validation links: {best} ({by_scheme[best]:.3f})")
    if ev.oracle:
        try:
            out["oracle_score"] = mean_score(links, "oracle", ev.runs, config.run.seed,
                                             ev.validation_length_s)
        except UserError as e:
            warn(f"no oracle reference: {e}")
    return out


def check_config(config: TrainConfig) -> RunLinks:
    """What can only be checked against the build and the files: the baselines exist and the
    links resolve. A misspelt baseline fails now, not after the training it was to be
    compared with. Returns the links resolved, so that a run resolves them no more."""
    for scheme in config.eval.baselines:
        try:
            validate_simulated_schemes([scheme])
        except UserError as e:
            raise UserError(f"[eval] baselines: {scheme!r}: {e}") from None
    check_shares(config.eval)
    links = resolve_run_links(config)  # with the fallbacks where the shared data is absent
    curriculum.check(config.curriculum)
    if config.run.ray_address:
        from ccgym.train.pool import check_address

        check_address(config.run.ray_address)
    return links
