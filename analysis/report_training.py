"""The HTML report's training sections: one per run folder (hyperparameters, curves, train
versus validation, final leaderboard) and the comparison of several runs.

Series are named for people, not by their TensorBoard tags: "held-out steps", not
"dagger/expert_agreement".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ccgym.analysis.report_parts import Figures, Section, e, fmt, table, text_tables

# TensorBoard tags the training sections draw (DAgger's; PPO logs the same eval/ tags), with
# the name each series has in a legend.
LOSS_TAGS = {"losses/loss": "loss", "losses/policy_loss": "policy loss",
             "losses/value_loss": "value loss"}
AGREEMENT_TAGS = {"dagger/expert_agreement": "held-out steps",
                  "dagger/balanced_agreement": "held-out steps, balanced over actions",
                  "dagger/rollout_agreement": "the policy's own rollouts"}
SCORE_TAG = "eval/score"
SCORE_LABEL = "validation links (mean)"
# train/share_validation.py's scalars: the share beside each competitor (mean over its links,
# and per link: the band of [eval] share_floor and share_ceiling holds each link's).
SHARE_PREFIX = "eval/shares/beside_"
REFERENCE_TAGS = {"eval/oracle_score": "oracle", "eval/best_baseline_score": "best baseline"}
GROUP_SCORE_SUFFIX = "/score"
TRAIN_GROUP_NAMES = ("train", "training")

Series = dict[str, tuple[list[int], list[float]]]


@dataclass
class TrainingRun:
    path: Path
    config: dict[str, Any]
    scalars: Series
    leaderboard: str | None


def group_label(tag: str) -> str:
    """eval/GROUP/score -> "GROUP links"."""
    return f"{tag.split('/')[1]} links"


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def run_name(run: TrainingRun) -> str:
    return run.path.resolve().name


def _series(run: TrainingRun, labels: Mapping[str, str]) -> Series:
    return {label: run.scalars[tag] for tag, label in labels.items() if tag in run.scalars}


def _group_score_tags(run: TrainingRun) -> list[str]:
    return sorted(t for t in run.scalars
                  if t.startswith("eval/") and t.endswith(GROUP_SCORE_SUFFIX) and t != SCORE_TAG)


def share_band(run: TrainingRun) -> tuple[float, float]:
    """The run's [eval] share_floor and share_ceiling: (0, 1) when it chose its policy by
    score alone."""
    ev = run.config.get("eval", {})
    return float(ev.get("share_floor", 0.0) or 0.0), float(ev.get("share_ceiling", 1.0))


def best(run: TrainingRun) -> tuple[int | None, float | None]:
    """The iteration whose policy the run kept, and its validation score: the highest score,
    or with a share floor or ceiling, as training chooses (train/early_stopping.py): first the
    held share, then the score."""
    from ccgym.train.share_validation import held_share

    steps, values = run.scalars.get(SCORE_TAG, ([], []))
    floor, ceiling = share_band(run)
    # The least and greatest share on any link beside any competitor, as training takes them
    # (train/share_validation.py), from the per-link series: runs from before the ceiling
    # logged only the least of the competitors' means.
    per_link = [dict(zip(*series)) for tag, series in run.scalars.items()
                if tag.startswith(SHARE_PREFIX) and tag.count("/") == 3]

    def held(step: int) -> float:
        values = [shares[step] for shares in per_link if step in shares]
        if not values:
            return held_share({}, floor, ceiling)
        return held_share({"shares/lowest": min(values), "shares/highest": max(values)},
                          floor, ceiling)

    finite = [((held(s), v), s) for s, v in zip(steps, values) if math.isfinite(v)]
    if not finite:
        return None, None
    (_, value), step = max(finite)
    return step, value


def training_section(run: TrainingRun, figures: Figures) -> Section:
    from ccgym.analysis.plots import plot_curves

    name = run_name(run)
    parts = []
    step, best_score = best(run)
    summary = f"<p>Training run <b>{e(name)}</b>: "
    floor, ceiling = share_band(run)
    band = (f"its lowest share up to {floor:g}" if ceiling >= 1 else
            f"its shares within {floor:g}-{ceiling:g}")
    if best_score is not None:
        kept = (f"policy kept at iteration {step} (validation score <b>{best_score:.3f}</b>; "
                f"chosen first by {band}, then by score)" if floor > 0 or ceiling < 1
                else f"best validation score <b>{best_score:.3f}</b> at iteration {step}")
        parts.append(f"<p>{kept[0].upper()}{kept[1:]}.</p>")
        summary += f"{kept}.</p>"
    else:
        summary += "no validation score logged yet.</p>"
    if not run.scalars:
        parts.append('<p class="note">No TensorBoard events in this folder yet.</p>')
    curves = [
        ("loss", _series(run, LOSS_TAGS), {}, "training loss"),
        ("expert agreement", _series(run, AGREEMENT_TAGS), {},
         "how often the policy picks the expert's action"),
        ("validation score", _series(run, {SCORE_TAG: SCORE_LABEL}),
         {label: run.scalars[tag][1][-1] for tag, label in REFERENCE_TAGS.items()
          if tag in run.scalars and run.scalars[tag][1]},
         "mean score on the validation links, against the oracle's and the best baseline's"),
        ("share of the link", {f"beside {tag.removeprefix(SHARE_PREFIX)}": run.scalars[tag]
                               for tag in sorted(run.scalars)
                               if tag.startswith(SHARE_PREFIX) and tag.count("/") == 2},
         {"share floor": floor} if floor else {},
         "the policy's share beside each competitor of [eval] share_against (mean over its "
         "links; the competitor first, the policy later)"),
    ]
    for what, series, lines, caption in curves:
        if series:
            parts.append(figures.embed(
                partial(plot_curves, series, f"{name}: {what}", what, references=lines), caption))
    parts.append(_train_versus_validation(run, name, figures))
    if run.leaderboard:
        parts.append(f"<h3>Final leaderboard</h3>{text_tables(run.leaderboard)}")
    parts.append("<h3>Hyperparameters</h3>")
    parts.append(table(["parameter", "value"],
                       [[k, json.dumps(v) if not isinstance(v, str) else v]
                        for k, v in _flat(run.config).items()], kind="text"))
    return Section(f"Training run: {name}", "\n".join(parts), summary)


def _train_versus_validation(run: TrainingRun, name: str, figures: Figures) -> str:
    """The score per link group over iterations and the last gap; nothing where the run logs
    no score on its training links (no gap to show)."""
    from ccgym.analysis.plots import plot_curves

    groups = _group_score_tags(run)
    train = [t for t in groups if t.split("/")[1] in TRAIN_GROUP_NAMES]
    if not train:
        return ""
    series = {group_label(t): run.scalars[t] for t in groups}
    title = f"{name}: score per link group"
    return "\n".join([
        "<h3>Train versus validation</h3>",
        figures.embed(lambda png: plot_curves(series, title, "score", png, {}),
                      "the mean score of each group of links over iterations: a training group "
                      "rising while the validation groups fall is overfitting"),
        _gap_table(run, train[0], [t for t in groups if t != train[0]])])


def _gap_table(run: TrainingRun, train_tag: str, validation_tags: Sequence[str]) -> str:
    rows = []
    train_steps, train_values = run.scalars[train_tag]
    train_at = dict(zip(train_steps, train_values))
    for tag in validation_tags:
        steps, values = run.scalars[tag]
        common = [(s, train_at[s] - v) for s, v in zip(steps, values) if s in train_at]
        if common:
            rows.append([group_label(tag), fmt(common[-1][1], 3), common[-1][0]])
    return table(["validation group", "train minus validation score (last)", "iteration"], rows)


def comparison_section(runs: Sequence[TrainingRun], figures: Figures) -> Section:
    from ccgym.analysis.plots import plot_curves

    flats = [_flat(r.config) for r in runs]
    keys = sorted({k for f in flats for k in f})
    differing = [k for k in keys if len({json.dumps(f.get(k)) for f in flats}) > 1]
    header = ["run", "validation score (kept policy)", "at iteration", "iterations logged"] + differing
    rows = []
    for run, flat in zip(runs, flats):
        step, best_score = best(run)
        logged = max((s[-1] for s, _ in run.scalars.values() if s), default=0)
        rows.append([run_name(run), fmt(best_score, 3), step if step is not None else "-", logged]
                    + [json.dumps(flat.get(k)) for k in differing])
    parts = ['<p class="note">Columns after the scores are the hyperparameters that differ.</p>',
             table(header, rows)]
    series = {run_name(r): r.scalars[SCORE_TAG] for r in runs if SCORE_TAG in r.scalars}
    if series:
        parts.append(figures.embed(
            lambda png: plot_curves(series, "validation score of each run", "validation score",
                                    png, {}),
            "validation score over iterations, run by run"))
    return Section(f"Comparison of {len(runs)} training runs", "\n".join(parts),
                   table(header[:4], [r[:4] for r in rows]))
