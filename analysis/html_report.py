"""One self-contained HTML page for a set of results: what `ccgym report` writes.

The page opens with its contents, then a summary (each input's headline figures), then the
details. Inputs are recognized by their content:
- a JSON list of leaderboard rows (`ccgym eval --json`, `ccgym run --json`): per link, the
  leaderboard under the omniscient bound and the throughput-delay plane; the summary over links;
- a JSON list of oracle rows (`ccgym oracle --json`): each link's ideal window and its score;
- a JSON object with "kind": "calibration" (`ccgym calibrate --json`): the fitted link, the
  replication error per scheme and left out, measured vs calibrated points;
- a training run folder (config.toml + TensorBoard events): analysis/report_training.py;
- a JSON object with "kind": "suite" (`ccgym suite --json`): each group's summary table
  and per-link leaderboards;
- a JSON object with "kind": "search" (`ccgym search --json`): the worst links found and
  where in the space the scheme loses (each trial's gap over rate x delay);
- a plots folder (`--plots DIR` of eval or run): its figures, by link (throughput and delay
  over time).

Figures are embedded as data: URLs (SVG for the report's own, see analysis/report_parts.py)
and the style sheet is inline, so the file opens anywhere with no network access and no
script runs.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ccgym.analysis.leaderboard import (SUMMARY_HEADER, leaderboard_cells,
                                        row_problem, summary_cells)
from ccgym.analysis.report_parts import (Figures, Section, assemble, e, figure_html, fmt, label,
                                         page, percent, table)
from ccgym.analysis.report_training import TrainingRun, comparison_section, training_section
from ccgym.errors import UserError
from ccgym.files import atomic_write_text, read_toml, temporary_folder
from ccgym.train.run_folder import CONFIG_FILE, RunFolder

ORACLE_KEYS = {"link", "bdp_packets", "ideal_window", "score", "bdp_score"}
PLOT_SUFFIXES = (".png", ".svg")
# A plots folder with more figures embeds only its planes (analysis/plots.py: write_plots).
MAX_EMBEDDED_PLOTS = 48


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
class OracleInput:
    path: Path
    rows: list[dict[str, Any]]


@dataclass
class PlotsFolder:
    path: Path
    figures: list[Path]


@dataclass
class Inputs:
    rows: list[RowsInput] = field(default_factory=list)
    calibrations: list[CalibrationInput] = field(default_factory=list)
    oracles: list[OracleInput] = field(default_factory=list)
    runs: list[TrainingRun] = field(default_factory=list)
    plots: list[PlotsFolder] = field(default_factory=list)
    suites: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    searches: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)


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
        elif isinstance(doc, dict) and doc.get("kind") == "search":
            from ccgym.analysis import search

            inputs.searches.append((path, search.check_document(path, doc)))
        elif isinstance(doc, list) and doc and all(
                isinstance(r, dict) and ORACLE_KEYS <= set(r) for r in doc):
            inputs.oracles.append(OracleInput(path, doc))
        elif isinstance(doc, list) and doc and all(
                isinstance(r, dict) and {"link", "scheme"} <= set(r) for r in doc):
            _check_rows(path, doc)
            inputs.rows.append(RowsInput(path, doc))
        else:
            raise UserError(f"{path}: neither leaderboard rows (ccgym eval/run --json), an "
                            "oracle table (ccgym oracle --json), a suite (ccgym suite --json), "
                            "a search (ccgym search --json) nor a calibration (ccgym "
                            "calibrate --json)")
    if not (inputs.rows or inputs.calibrations or inputs.oracles or inputs.runs or inputs.plots
            or inputs.suites or inputs.searches):
        raise UserError("nothing to report: give at least one input")
    return inputs


def _check_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    for i, row in enumerate(rows):
        problem = row_problem(row)
        if problem:
            raise UserError(f"{path}: row {i + 1} ({row['scheme']!r} on {row['link']!r}): "
                            f"{problem}")


def _read_folder(path: Path, inputs: Inputs) -> None:
    if RunFolder(path).config.is_file():
        inputs.runs.append(read_training_run(path))
    elif figures := sorted(p for p in path.iterdir() if p.suffix in PLOT_SUFFIXES):
        inputs.plots.append(PlotsFolder(path, figures))
    else:
        raise UserError(f"{path}: a folder, but neither a training run folder "
                        f"({CONFIG_FILE}) nor a plots folder (*.png, *.svg)")


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


# ---------------------------------------------------------------- sections

def _rows_section(item: RowsInput, figures: Figures) -> Section:

    parts = []
    by_link: dict[str, list[dict[str, Any]]] = {}
    for row in item.rows:
        by_link.setdefault(str(row["link"]), []).append(row)
    boards = {}
    for link, rows in by_link.items():
        header, lines, bound_lines = leaderboard_cells(rows)
        classes = ["bound" if i < bound_lines else "" for i in range(len(lines))]
        boards[link] = table(header, lines, classes)
        parts.append(f"<h3>link: {e(link)}</h3>")
        duration = next((r.get("duration_s") for r in rows if r.get("duration_s")), None)
        mode = ", ".join(sorted({str(r["mode"]) for r in rows if r.get("mode")}))
        notes = [n for n in (f"{duration:g} s runs" if duration else "", mode) if n]
        if notes:
            parts.append(f'<p class="note">{e("; ".join(notes))}</p>')
        parts.append(boards[link])
        parts.append(_plane(link, rows, duration, figures))
    name = label(item.path)
    if len(by_link) > 1:
        summary = (f"<h3>{e(name)}: mean over {len(by_link)} links</h3>"
                   + table(SUMMARY_HEADER, summary_cells(item.rows)))
    else:
        summary = f"<h3>{e(name)}: link {e(next(iter(by_link)))}</h3>" + next(iter(boards.values()))
    return Section(f"Leaderboards: {name}", "\n".join(parts), summary)


def _plane(link: str, rows: Sequence[Mapping[str, Any]], duration: float | None,
           figures: Figures) -> str:
    from ccgym.analysis.plots import plot_tradeoff

    points = {str(r["scheme"]): [r] for r in rows if r["scheme"] != "omniscient"
              and r.get("e2e_delay_p95_ms") and r.get("throughput_mbps")}
    if not points:
        return ""
    bound = next((r for r in rows if r["scheme"] == "omniscient"), None)
    title = f"{link}: throughput-delay plane" + (f", {duration:g} s runs" if duration else "")
    return figures.embed(partial(plot_tradeoff, points, bound, title=title),
                         f"{link}: each scheme's mean over its runs; the star is the "
                         "omniscient bound, the dashed line the hull of every point")


def _suite_section(path: Path, doc: dict[str, Any]) -> Section:
    """`ccgym suite --json`: per group its summary table, then its links' leaderboards folded."""
    from ccgym.analysis.suite import SUMMARY_HEADER as SUITE_HEADER
    from ccgym.analysis.suite import group_notes
    from ccgym.analysis.suite import summary_cells as suite_cells

    options = ", ".join(f"{k} {v}" for k, v in doc["options"].items())
    parts = [f'<p class="note">{e(options)}; wall time {doc["wall_s"]:.0f} s</p>']
    parts += [f'<p class="note">skipped {e(s["group"])}: {e(s["reason"])}</p>'
              for s in doc["skipped"]]
    summaries = []
    for group, summary in doc["summary"].items():
        lines = suite_cells(summary)
        group_table = table(SUITE_HEADER, lines,
                            ["bound" if line[1] == "bound" else "" for line in lines])
        summaries.append(f"<h3>{e(group)}</h3>{group_table}")
        parts += [f"<h3>{e(group)}</h3>", f'<p class="note">{e(group_notes(group, summary))}</p>',
                  group_table,
                  f"<details><summary>{summary['links']} links, one leaderboard each</summary>"]
        by_link: dict[str, list[dict[str, Any]]] = {}
        for row in (r for r in doc["rows"] if r["group"] == group):
            by_link.setdefault(str(row["link"]), []).append(row)
        for link, rows in by_link.items():
            header, cells, bound_lines = leaderboard_cells(rows)
            parts += [f"<h4>{e(link)}</h4>", table(header, cells, ["bound"] * bound_lines)]
        parts.append("</details>")
    return Section(f"Suite: {label(path)}", "\n".join(parts), "\n".join(summaries))


def _search_section(path: Path, doc: dict[str, Any], figures: Figures) -> Section:
    """`ccgym search --json`: the worst links found, and each trial's gap over rate x delay."""
    from ccgym.analysis import search
    from ccgym.analysis.plots import plot_search

    rows = search.kept_rows(doc)
    note = (f"{doc['scheme']} against the best of {', '.join(doc['baselines'])} on "
            f"{len(doc['trials'])} links of {doc['space']}, seeds "
            f"{', '.join(map(str, doc['seeds']))}; {fmt(doc.get('seconds'), 0)} s")
    kept = table(search.KEPT_HEADER, rows)
    plot = figures.embed(partial(plot_search, search.plot_points(doc), search.plot_title(doc)),
                         "each trial at its rate and one-way delay, coloured by its gap (red: "
                         "the scheme loses), marked by its delivery process; the kept links "
                         "ringed")
    body = "\n".join([f'<p class="note">{e(note)}</p>', kept, plot])
    name = label(path)
    worst = (f"largest gap <b>{e(rows[0][0])}</b> on {e(rows[0][-1])}" if rows
             else "nothing kept")
    return Section(f"Search: {name}", body,
                   f"<p>{e(name)}: where {e(doc['scheme'])} loses; {worst}.</p>")


def _calibration_section(item: CalibrationInput, figures: Figures) -> Section:
    from ccgym.analysis.plots import plot_calibration

    c = item.result
    link = c.get("link", {})
    headline = (f"Path <code>{e(c.get('path'))}</code>; calibrated link "
                f"<code>{e(link.get('spec'))}</code>. Replication error "
                f"<b>{percent(c.get('error'))}</b>"
                + (f", leave-one-out <b>{percent(c['leave_one_out']['error'])}</b>"
                   if c.get("leave_one_out") else ""))
    parts = [f"<p>{headline}; {e(c.get('trials'))} trials in {fmt(c.get('wall_time_s'), 0)} s.</p>"]
    left = {s["scheme"]: s["error"] for s in (c.get("leave_one_out") or {}).get("schemes", [])}
    header = ["scheme", "measured Mbit/s", "calibrated Mbit/s", "measured p95 ms",
              "calibrated p95 ms", "error"] + (["left out"] if left else [])
    rows = []
    for s in c.get("schemes", []):
        rows.append([s["scheme"], fmt(s["measured_throughput_mbps"]),
                     fmt(s["emulated_throughput_mbps"]), fmt(s["measured_delay_p95_ms"], 1),
                     fmt(s["emulated_delay_p95_ms"], 1), percent(s["error"])]
                    + ([percent(left.get(s["scheme"]))] if left else []))
    parts.append(table(header, rows))
    measured = {s["scheme"]: (s["measured_delay_p95_ms"], s["measured_throughput_mbps"])
                for s in c.get("schemes", [])}
    emulated = {s["scheme"]: (s["emulated_delay_p95_ms"], s["emulated_throughput_mbps"])
                for s in c.get("schemes", [])}
    if measured:
        title = f"{c.get('path')}: measured vs calibrated ({percent(c.get('error'))} error)"
        parts.append(figures.embed(
            lambda png: plot_calibration(measured, emulated, title, png),
            "each scheme measured (filled) and over the calibrated link (hollow)"))
    name = label(item.path)
    return Section(f"Calibration: {name}", "\n".join(parts), f"<p>{e(name)}: {headline}.</p>")


def _oracle_section(item: OracleInput) -> Section:
    def ideal(row: Mapping[str, Any]) -> str:
        if row.get("margin") is not None:
            return f"time-varying, margin {row['margin']:g}, lookback {row.get('lookback', 0):g}"
        return fmt(row.get("ideal_window"), 1)

    rows = [[r["link"], fmt(r.get("bdp_packets"), 1), ideal(r), fmt(r.get("score"), 3),
             fmt(r.get("bdp_score"), 3)] for r in item.rows]
    header = ["link", "BDP (packets)", "ideal window (packets)", "score", "BDP's score"]
    scores = [float(r["score"]) for r in item.rows
              if isinstance(r.get("score"), (int, float)) and math.isfinite(r["score"])]
    mean = f"mean score {sum(scores) / len(scores):.3f}" if scores else "no finite score"
    name = label(item.path)
    return Section(f"Oracle: {name}", table(header, rows),
                   f"<p>{e(name)}: the oracle's window on {len(rows)} links, {mean}.</p>")


def _plots_section(folder: PlotsFolder, base: Path | None, drawn: set[str]) -> Section:
    """The folder's figures, each once: not the planes of links whose leaderboards the page
    already draws (`drawn`: their file slugs); from a large folder (a link set's time
    series: hundreds) only its throughput-delay planes, so that the page stays a few
    megabytes, and a note that the rest are a link to files outside the page."""
    from ccgym.analysis.plots import PLANE_SUFFIX

    figures = [f for f in folder.figures if f.stem.removesuffix(PLANE_SUFFIX) not in drawn
               or not f.stem.endswith(PLANE_SUFFIX)]
    parts = []
    if len(figures) < len(folder.figures):
        parts.append(f'<p class="note">{len(folder.figures) - len(figures)} throughput-delay '
                     "planes are above, with their links' leaderboards.</p>")
    shown = figures
    if len(shown) > MAX_EMBEDDED_PLOTS:
        shown = [f for f in figures if f.stem.endswith(PLANE_SUFFIX)]
        index = folder.path.resolve() / "index.html"
        href = os.path.relpath(index, base.resolve()) if base is not None else index.as_uri()
        parts.append(f'<p class="note">{len(figures) - len(shown)} more figures, too many to '
                     "embed, are not in this page: they stay files of the folder, shown by "
                     f'<a href="{e(href)}">{e(label(folder.path))}/index.html</a> (a link '
                     "that works while the folder is where it was).</p>")
    parts += [figure_html(image, image.stem.replace("__", " · ")) for image in shown]
    return Section(f"Plots: {label(folder.path)}", "\n".join(parts))


# ---------------------------------------------------------------- the page

def build_report(inputs: Inputs, title: str = "ccgym report", base: Path | None = None) -> str:
    """The whole page as a string; `base` is the folder it will be in (for links to large
    plots folders; None: absolute links)."""
    with temporary_folder("report") as tmp:
        figures = Figures(Path(tmp))
        sections = [_rows_section(r, figures) for r in inputs.rows]
        sections += [_oracle_section(o) for o in inputs.oracles]
        sections += [_calibration_section(c, figures) for c in inputs.calibrations]
        sections += [_suite_section(path, doc) for path, doc in inputs.suites]
        sections += [_search_section(path, doc, figures) for path, doc in inputs.searches]
        if len(inputs.runs) > 1:
            sections.append(comparison_section(inputs.runs, figures))
        runs = [training_section(r, figures) for r in inputs.runs]
        if len(runs) > 1:  # the comparison sums them up
            runs = [Section(s.title, s.body) for s in runs]
        sections += runs
        if inputs.plots:
            from ccgym.analysis.plots import file_slug

            drawn = {file_slug(str(r["link"])) for item in inputs.rows for r in item.rows}
            sections += [_plots_section(p, base, drawn) for p in inputs.plots]
    every = ([str(r.path) for r in inputs.rows] + [str(o.path) for o in inputs.oracles]
             + [str(c.path) for c in inputs.calibrations]
             + [str(r.path) for r in inputs.runs] + [str(p.path) for p in inputs.plots]
             + [str(path) for path, _ in inputs.suites]
             + [str(path) for path, _ in inputs.searches])
    intro = (f'<p class="note">Made {time.strftime("%Y-%m-%d %H:%M:%S %Z")} from: '
             f"{e(', '.join(every))}</p>")
    return assemble(title, intro, sections)


def write_plots_index(folder: Path, sections: Mapping[str, Sequence[Path]]) -> Path:
    """DIR/index.html beside a --plots folder's figures: one page of them by link, linking the
    files (not embedding them), so the folder stays the one copy."""
    parts = []
    for link, images in sections.items():
        parts.append(f"<h2>{e(link)}</h2>")
        for image in images:
            name = image.name
            parts.append(f'<figure><a href="{e(name)}"><img src="{e(name)}" alt="{e(name)}" '
                         f'loading="lazy"></a><figcaption>{e(name)}</figcaption></figure>')
    index = folder / "index.html"
    atomic_write_text(index, page(f"ccgym plots: {len(sections)} links", "\n".join(parts)))
    return index
