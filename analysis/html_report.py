"""One self-contained HTML page for a set of results: what `ccgym report` writes.

Inputs are recognized by their content:
- a JSON list of leaderboard rows (`ccgym eval --json`, `ccgym run --json`): per link, the
  leaderboard under the omniscient bound and the throughput-delay plane; the summary over links;
- a JSON object with "kind": "calibration" (`ccgym calibrate --json`): the fitted link, the
  replication error per scheme and left out, measured vs calibrated points;
- a training run folder (config.toml + TensorBoard events): its hyperparameters, loss, expert
  agreement, validation score against the oracle's and the best baseline's, the validation
  score per link group (train vs validation where a trainer logs both), its final leaderboard;
  several run folders are also compared side by side;
- a JSON object with "kind": "suite" (`ccgym suite --json`): each group's summary table and
  per-link leaderboards;
- a plots folder (`--plots DIR` of eval or run): its PNGs, by link (throughput and delay over
  time).

Figures are PNGs embedded as data: URLs and the style sheet is inline, so the file opens
anywhere with no network access and no script runs.
"""

from __future__ import annotations

import base64
import html
import json
import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ccgym.errors import UserError

STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1150px; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: .9em; }
th, td { padding: .25em .7em; border-bottom: 1px solid #e4e4e4; text-align: right; }
th:first-child, td:first-child { text-align: left; }
table.text td, table.text th { text-align: left; }
tr.bound td { font-style: italic; background: #f6f6f6; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: .85em; color: #555; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: .85em; }
.note { color: #666; font-size: .9em; }
.side { display: flex; gap: 1em; flex-wrap: wrap; } .side > div { flex: 1; min-width: 320px; }
"""

# TensorBoard tags the training sections draw (DAgger's; PPO logs the same eval/ tags).
LOSS_TAGS = ("losses/loss", "losses/policy_loss", "losses/value_loss")
AGREEMENT_TAGS = ("dagger/expert_agreement", "dagger/balanced_agreement",
                  "dagger/rollout_agreement")
SCORE_TAG = "eval/score"
REFERENCE_TAGS = {"eval/oracle_score": "oracle", "eval/best_baseline_score": "best baseline"}
GROUP_SCORE_SUFFIX = "/score"
TRAIN_GROUP_NAMES = ("train", "training")


# ---------------------------------------------------------------- inputs

@dataclass
class RowsInput:
    path: Path
    rows: list[dict[str, Any]]


@dataclass
class CalibrationInput:
    path: Path
    result: dict[str, Any]


@dataclass
class TrainingRun:
    path: Path
    config: dict[str, Any]
    scalars: dict[str, tuple[list[int], list[float]]]
    leaderboard: str | None


@dataclass
class PlotsFolder:
    path: Path
    pngs: list[Path]


@dataclass
class Inputs:
    rows: list[RowsInput] = field(default_factory=list)
    calibrations: list[CalibrationInput] = field(default_factory=list)
    runs: list[TrainingRun] = field(default_factory=list)
    plots: list[PlotsFolder] = field(default_factory=list)
    suites: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)


def read_inputs(paths: Sequence[str | Path]) -> Inputs:
    """Sorts each input into its kind; UserError naming the input for anything unreadable."""
    inputs = Inputs()
    for path in map(Path, paths):
        if path.is_dir():
            _read_folder(path, inputs)
            continue
        doc = _read_json(path)
        if isinstance(doc, dict) and doc.get("kind") == "calibration":
            inputs.calibrations.append(CalibrationInput(path, doc))
        elif isinstance(doc, dict) and doc.get("kind") == "suite":
            from ccgym.analysis.suite import check_document

            inputs.suites.append((path, check_document(path, doc)))
        elif isinstance(doc, list) and doc and all(
                isinstance(r, dict) and {"link", "scheme"} <= set(r) for r in doc):
            _check_rows(path, doc)
            inputs.rows.append(RowsInput(path, doc))
        else:
            raise UserError(f"{path}: neither leaderboard rows (ccgym eval/run --json), a suite "
                            f"(ccgym suite --json) nor a calibration (ccgym calibrate --json)")
    if not (inputs.rows or inputs.calibrations or inputs.runs or inputs.plots or inputs.suites):
        raise UserError("nothing to report: give at least one input")
    return inputs


def _check_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    from ccgym.analysis.leaderboard import row_problem

    for i, row in enumerate(rows):
        problem = row_problem(row)
        if problem:
            raise UserError(f"{path}: row {i + 1} ({row['scheme']!r} on {row['link']!r}): "
                            f"{problem}")


def _read_folder(path: Path, inputs: Inputs) -> None:
    from ccgym.train.run_folder import CONFIG_FILE, RunFolder

    if RunFolder(path).config.is_file():
        inputs.runs.append(read_training_run(path))
    elif list(path.glob("*.png")):
        inputs.plots.append(PlotsFolder(path, sorted(path.glob("*.png"))))
    else:
        raise UserError(f"{path}: a folder, but neither a training run folder "
                        f"({CONFIG_FILE}) nor a plots folder (*.png)")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{path}: no such file or folder") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"{path}: cannot read: {e}") from None
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON ({e}); give ccgym eval/run/calibrate --json "
                        f"files or run folders") from None


def read_training_run(path: Path) -> TrainingRun:
    """A run folder's config (as TOML data), its TensorBoard scalars and final leaderboard."""
    from ccgym.files import read_toml
    from ccgym.train.run_folder import RunFolder

    folder = RunFolder(path)
    config = read_toml(folder.config, "training config")
    scalars: dict[str, tuple[list[int], list[float]]] = {}
    if list(path.glob("events.out.tfevents.*")):
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        # size_guidance 0: every event, not TensorBoard's reservoir sample of them.
        events = EventAccumulator(str(path), size_guidance={"scalars": 0})
        try:
            events.Reload()
        except Exception as e:  # noqa: BLE001 - a damaged file, whatever TensorBoard raises
            raise UserError(f"{path}: cannot read its TensorBoard events: {e}") from None
        for tag in events.Tags().get("scalars", []):
            points = events.Scalars(tag)
            scalars[tag] = ([p.step for p in points], [p.value for p in points])
    board = folder.leaderboard
    return TrainingRun(path, config, scalars, board.read_text() if board.is_file() else None)


# ---------------------------------------------------------------- HTML pieces

def _e(value: Any) -> str:
    return html.escape(str(value))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], classes: Sequence[str] = (),
           kind: str = "") -> str:
    """A table; kind "text" aligns every column left (values that are words, not numbers)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = f' class="{classes[i]}"' if i < len(classes) and classes[i] else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>")
    table_class = f' class="{kind}"' if kind else ""
    return f"<table{table_class}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _label(path: Path) -> str:
    """An input's name in headings: with its folder, as several inputs share a file name."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


def _png_data(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _figure_html(png: Path, caption: str) -> str:
    return (f'<figure><img src="{_png_data(png)}" alt="{_e(caption)}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


class Figures:
    """Draws plots into a private temporary folder and embeds them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.count = 0

    def embed(self, draw: Callable[[Path], None], caption: str) -> str:
        self.count += 1
        png = self.folder / f"figure{self.count}.png"
        draw(png)
        return _figure_html(png, caption)


def _fmt(value: Any, digits: int = 2, scale: float = 1.0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{float(value) * scale:.{digits}f}"


def _percent(value: Any) -> str:
    return _fmt(value, 1, 100.0) + ("%" if value is not None else "")


# ---------------------------------------------------------------- sections

def _rows_section(item: RowsInput, figures: Figures) -> str:
    from ccgym.analysis.leaderboard import format_summary, leaderboard_cells
    from ccgym.analysis.plots import plot_tradeoff

    parts = [f"<h2>Leaderboards: {_e(_label(item.path))}</h2>"]
    by_link: dict[str, list[dict[str, Any]]] = {}
    for row in item.rows:
        by_link.setdefault(str(row["link"]), []).append(row)
    for link, rows in by_link.items():
        header, lines, bound_lines = leaderboard_cells(rows)
        classes = ["bound" if i < bound_lines else "" for i in range(len(lines))]
        parts.append(f"<h3>link: {_e(link)}</h3>")
        duration = next((r.get("duration_s") for r in rows if r.get("duration_s")), None)
        mode = ", ".join(sorted({str(r["mode"]) for r in rows if r.get("mode")}))
        notes = [n for n in (f"{duration:g} s runs" if duration else "", mode) if n]
        if notes:
            parts.append(f'<p class="note">{_e("; ".join(notes))}</p>')
        parts.append(_table(header, lines, classes))
        points = {str(r["scheme"]): [r] for r in rows if r["scheme"] != "omniscient"
                  and r.get("e2e_delay_p95_ms") and r.get("throughput_mbps")}
        bound = next((r for r in rows if r["scheme"] == "omniscient"), None)
        if points:
            title = f"{link}: throughput-delay plane" + (f", {duration:g} s runs" if duration else "")
            parts.append(figures.embed(
                partial(plot_tradeoff, points, bound, title=title),
                f"{link}: each scheme's mean over its runs; the star is the omniscient bound"))
    summary = format_summary(item.rows)
    if summary:
        parts.append(f"<h3>Summary over links</h3><pre>{_e(summary)}</pre>")
    return "\n".join(parts)


def _suite_section(path: Path, doc: dict[str, Any]) -> str:
    """`ccgym suite --json`: per group its summary table, then its links' leaderboards folded."""
    from ccgym.analysis.leaderboard import leaderboard_cells
    from ccgym.analysis.suite import SUMMARY_HEADER, group_notes, summary_cells

    options = ", ".join(f"{k} {v}" for k, v in doc["options"].items())
    parts = [f"<h2>Suite: {_e(_label(path))}</h2>",
             f'<p class="note">{_e(options)}; wall time {doc["wall_s"]:.0f} s</p>']
    parts += [f'<p class="note">skipped {_e(s["group"])}: {_e(s["reason"])}</p>'
              for s in doc["skipped"]]
    for group, summary in doc["summary"].items():
        lines = summary_cells(summary)
        parts += [f"<h3>{_e(group)}</h3>", f'<p class="note">{_e(group_notes(group, summary))}</p>',
                  _table(SUMMARY_HEADER, lines, ["bound" if line[1] == "bound" else ""
                                                 for line in lines]),
                  f"<details><summary>{summary['links']} links, one leaderboard each</summary>"]
        by_link: dict[str, list[dict[str, Any]]] = {}
        for row in (r for r in doc["rows"] if r["group"] == group):
            by_link.setdefault(str(row["link"]), []).append(row)
        for link, rows in by_link.items():
            header, cells, bound_lines = leaderboard_cells(rows)
            parts += [f"<h4>{_e(link)}</h4>",
                      _table(header, cells, ["bound"] * bound_lines)]
        parts.append("</details>")
    return "\n".join(parts)


def _calibration_section(item: CalibrationInput, figures: Figures) -> str:
    from ccgym.analysis.plots import plot_calibration

    c = item.result
    link = c.get("link", {})
    parts = [f"<h2>Calibration: {_e(_label(item.path))}</h2>",
             f"<p>Path <code>{_e(c.get('path'))}</code>; calibrated link "
             f"<code>{_e(link.get('spec'))}</code>. Replication error "
             f"<b>{_percent(c.get('error'))}</b>"
             + (f", leave-one-out <b>{_percent(c['leave_one_out']['error'])}</b>"
                if c.get("leave_one_out") else "")
             + f"; {_e(c.get('trials'))} trials in {_fmt(c.get('wall_time_s'), 0)} s.</p>"]
    left = {s["scheme"]: s["error"] for s in (c.get("leave_one_out") or {}).get("schemes", [])}
    header = ["scheme", "measured Mbit/s", "calibrated Mbit/s", "measured p95 ms",
              "calibrated p95 ms", "error"] + (["left out"] if left else [])
    rows = []
    for s in c.get("schemes", []):
        rows.append([s["scheme"], _fmt(s["measured_throughput_mbps"]),
                     _fmt(s["emulated_throughput_mbps"]), _fmt(s["measured_delay_p95_ms"], 1),
                     _fmt(s["emulated_delay_p95_ms"], 1), _percent(s["error"])]
                    + ([_percent(left.get(s["scheme"]))] if left else []))
    parts.append(_table(header, rows))
    measured = {s["scheme"]: (s["measured_delay_p95_ms"], s["measured_throughput_mbps"])
                for s in c.get("schemes", [])}
    emulated = {s["scheme"]: (s["emulated_delay_p95_ms"], s["emulated_throughput_mbps"])
                for s in c.get("schemes", [])}
    if measured:
        title = f"{c.get('path')}: measured vs calibrated ({_percent(c.get('error'))} error)"
        parts.append(figures.embed(
            lambda png: plot_calibration(measured, emulated, title, png),
            "each scheme measured (filled) and over the calibrated link (hollow)"))
    return "\n".join(parts)


def _flat(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def _run_name(run: TrainingRun) -> str:
    return run.path.resolve().name


def _series(run: TrainingRun, tags: Sequence[str]) -> dict[str, tuple[list[int], list[float]]]:
    return {tag: run.scalars[tag] for tag in tags if tag in run.scalars}


def _group_score_tags(run: TrainingRun) -> list[str]:
    return sorted(t for t in run.scalars
                  if t.startswith("eval/") and t.endswith(GROUP_SCORE_SUFFIX) and t != SCORE_TAG)


def _best(run: TrainingRun) -> tuple[int | None, float | None]:
    steps, values = run.scalars.get(SCORE_TAG, ([], []))
    finite = [(v, s) for s, v in zip(steps, values) if math.isfinite(v)]
    if not finite:
        return None, None
    value, step = max(finite)
    return step, value


def _training_section(run: TrainingRun, figures: Figures) -> str:
    from ccgym.analysis.plots import plot_curves

    name = _run_name(run)
    parts = [f"<h2>Training run: {_e(name)}</h2>"]
    step, best = _best(run)
    if best is not None:
        parts.append(f"<p>Best validation score <b>{best:.3f}</b> at iteration {step}.</p>")
    parts.append("<h3>Hyperparameters</h3>")
    parts.append(_table(["parameter", "value"],
                        [[k, json.dumps(v) if not isinstance(v, str) else v]
                         for k, v in _flat(run.config).items()], kind="text"))
    if not run.scalars:
        parts.append('<p class="note">No TensorBoard events in this folder yet.</p>')
    curves = [
        ("loss", _series(run, LOSS_TAGS), {}, "training loss"),
        ("expert agreement", _series(run, AGREEMENT_TAGS), {},
         "how often the policy picks the expert's action (held-out steps, balanced over "
         "actions, and on the policy's own rollouts)"),
        ("validation score", _series(run, [SCORE_TAG]),
         {label: run.scalars[tag][1][-1] for tag, label in REFERENCE_TAGS.items()
          if tag in run.scalars and run.scalars[tag][1]},
         "mean score on the validation links, against the oracle's and the best baseline's"),
    ]
    for what, series, lines, caption in curves:
        if series:
            title = f"{name}: {what}"
            parts.append(figures.embed(
                partial(plot_curves, series, title, what, references=lines), caption))
    groups = _group_score_tags(run)
    train = [t for t in groups if t.split("/")[1] in TRAIN_GROUP_NAMES]
    parts.append("<h3>Train versus validation</h3>")
    if len(groups) > 1 or train:
        series = _series(run, groups)
        title = f"{name}: score per link group"
        parts.append(figures.embed(
            lambda png: plot_curves(series, title, "score", png, {}),
            "the mean score of each group of links over iterations: a training group rising "
            "while the validation groups fall is overfitting"))
        if train:
            parts.append(_gap_table(run, train[0], [t for t in groups if t != train[0]]))
    else:
        parts.append('<p class="note">This run logs a score on its validation links only '
                     f'({_e(", ".join(groups) or SCORE_TAG)}), none on its training links: '
                     "no train-versus-validation gap to show.</p>")
    if run.leaderboard:
        parts.append(f"<h3>Final leaderboard</h3><pre>{_e(run.leaderboard)}</pre>")
    return "\n".join(parts)


def _gap_table(run: TrainingRun, train_tag: str, validation_tags: Sequence[str]) -> str:
    rows = []
    train_steps, train_values = run.scalars[train_tag]
    train_at = dict(zip(train_steps, train_values))
    for tag in validation_tags:
        steps, values = run.scalars[tag]
        common = [(s, train_at[s] - v) for s, v in zip(steps, values) if s in train_at]
        if common:
            rows.append([tag, _fmt(common[-1][1], 3), common[-1][0]])
    return _table(["validation group", "train minus validation score (last)", "iteration"], rows)


def _comparison_section(runs: Sequence[TrainingRun], figures: Figures) -> str:
    from ccgym.analysis.plots import plot_curves

    flats = [_flat(r.config) for r in runs]
    keys = sorted({k for f in flats for k in f})
    differing = [k for k in keys if len({json.dumps(f.get(k)) for f in flats}) > 1]
    header = ["run", "best validation score", "at iteration", "iterations logged"] + differing
    rows = []
    for run, flat in zip(runs, flats):
        step, best = _best(run)
        logged = max((s[-1] for s, _ in run.scalars.values() if s), default=0)
        rows.append([_run_name(run), _fmt(best, 3), step if step is not None else "-", logged]
                    + [json.dumps(flat.get(k)) for k in differing])
    parts = [f"<h2>Comparison of {len(runs)} training runs</h2>",
             '<p class="note">Columns after the scores are the hyperparameters that differ.</p>',
             _table(header, rows)]
    series = {_run_name(r): r.scalars[SCORE_TAG] for r in runs if SCORE_TAG in r.scalars}
    if series:
        parts.append(figures.embed(
            lambda png: plot_curves(series, "validation score of each run", "validation score",
                                    png, {}),
            "validation score over iterations, run by run"))
    return "\n".join(parts)


def _plots_section(folder: PlotsFolder) -> str:
    parts = [f"<h2>Plots: {_e(_label(folder.path))}</h2>"]
    for png in folder.pngs:
        parts.append(_figure_html(png, png.stem.replace("__", " · ")))
    return "\n".join(parts)


# ---------------------------------------------------------------- the page

def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{STYLE}</style></head>\n"
            f"<body>\n<h1>{_e(title)}</h1>\n{body}\n</body></html>\n")


def build_report(inputs: Inputs, title: str = "ccgym report") -> str:
    """The whole page as a string."""
    with tempfile.TemporaryDirectory(prefix="ccgym-report-") as tmp:
        figures = Figures(Path(tmp))
        sections = [_rows_section(r, figures) for r in inputs.rows]
        sections += [_calibration_section(c, figures) for c in inputs.calibrations]
        sections += [_suite_section(path, doc) for path, doc in inputs.suites]
        if len(inputs.runs) > 1:
            sections.append(_comparison_section(inputs.runs, figures))
        sections += [_training_section(r, figures) for r in inputs.runs]
        sections += [_plots_section(p) for p in inputs.plots]
    every = ([str(r.path) for r in inputs.rows] + [str(c.path) for c in inputs.calibrations]
             + [str(r.path) for r in inputs.runs] + [str(p.path) for p in inputs.plots]
             + [str(path) for path, _ in inputs.suites])
    intro = (f'<p class="note">Made {time.strftime("%Y-%m-%d %H:%M:%S %Z")} from: '
             f"{_e(', '.join(every))}</p>")
    return _page(title, intro + "\n" + "\n".join(sections))


def write_plots_index(folder: Path, sections: Mapping[str, Sequence[Path]]) -> Path:
    """DIR/index.html beside a --plots folder's PNGs: one page of them by link, linking the
    files (not embedding them), so the folder stays the one copy."""
    from ccgym.files import atomic_write_text

    parts = []
    for link, pngs in sections.items():
        parts.append(f"<h2>{_e(link)}</h2>")
        for png in pngs:
            name = png.name
            parts.append(f'<figure><a href="{_e(name)}"><img src="{_e(name)}" alt="{_e(name)}" '
                         f'loading="lazy"></a><figcaption>{_e(name)}</figcaption></figure>')
    index = folder / "index.html"
    atomic_write_text(index, _page(f"ccgym plots: {len(sections)} links", "\n".join(parts)))
    return index
