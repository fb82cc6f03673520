"""Plots of runs: throughput against capacity, signal delay, the throughput-delay plane;
and `write_plots`, what `ccgym eval --plots DIR` and `ccgym run --plots DIR` write.

Figures are drawn with matplotlib's object API on an Agg canvas, never pyplot,
so importing this module neither changes the caller's backend nor needs a
display, and plots can be drawn from several threads. Each figure is written to a
temporary file beside its target and renamed over it, so a reader never sees a
half-written plot and a failed plot leaves nothing behind. Labels never sit beside
points (close points would overlap them): a legend below the axes names each series.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import rc_context, ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from numpy.typing import ArrayLike
from PIL import Image

from ccgym.analysis.html_report import write_plots_index
from ccgym.emulators import _core
from ccgym.envs.scoring import Run
from ccgym.files import atomic_open
from ccgym.measure.logs import as_packet_log
from ccgym.measure.metrics import (
    BYTES_PER_OPPORTUNITY,
    LogLike,
    Metrics,
    signal_delay_series,
    window_edges,
    window_mbps,
)

FIGURE_SIZE_IN = (10.0, 5.0)
DPI = 110
VECTOR_FORMATS = ("svg", "pdf")
PNG_COLORS = 256
# Schemes of one plane: colour and marker together tell up to 40 apart, and the legend names
# them (labels beside close points would overlap).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
HULL_LABEL = "hull of every run and the bound"
MS_PER_S = 1000.0
ELLIPSE_POINTS = 100  # segments of each 1-sigma ellipse's outline
CAPACITY_ALPHA = 0.25
GRID_ALPHA = 0.3
PACKET_DOT_ALPHA = 0.3
PACKET_DOT_COLOR = "grey"
TITLE_WIDTH_CHARS = 100  # at FIGURE_SIZE_IN and matplotlib's default title font
DELAY_TICKS = (1.0, 2.0, 5.0)  # labelled delays per decade: 10, 20, 50, 100, ...

# A point of the throughput-delay plane: (95% end-to-end delay ms, Mbit/s).
Point = tuple[float, float]
PointLike = Metrics | Mapping[str, Any] | Sequence[float]


def _figure(title: str) -> tuple[Figure, Any]:
    """A figure with one axes, its title wrapped to fit; constrained layout, so that a legend
    placed outside the axes (_legend) gets room of its own and never covers data."""
    fig = Figure(figsize=FIGURE_SIZE_IN, layout="constrained")
    ax = fig.add_subplot()
    if title:
        ax.set_title(_wrapped(title))
    return fig, ax


def _legend(fig: Figure, ax: Any) -> None:
    """The legend below the axes, in columns, outside the data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 4),
                   frameon=False)


def _write_png(fig: Figure, path: str | os.PathLike[str]) -> None:
    """The figure in the format its name says (.svg, .pdf), PNG otherwise (a pipe's name).
    SVG keeps its text as text (a fraction of the size of glyphs drawn as paths); PNG is
    reduced to a palette of 256 colours, which a plot's few flat colours survive at a third
    of the size."""
    target = Path(path)
    kind = target.suffix.lower().lstrip(".")
    FigureCanvasAgg(fig)  # render with Agg whatever backend the caller's pyplot uses
    if kind in VECTOR_FORMATS:
        with rc_context({"svg.fonttype": "none", "svg.hashsalt": target.stem}), \
                atomic_open(target, "wb") as f:
            fig.savefig(f, format=kind, metadata={"Date": None})
        return
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    buffer.seek(0)
    with Image.open(buffer) as image, atomic_open(target, "wb") as f:
        palette = image.convert("RGB").quantize(PNG_COLORS, method=Image.Quantize.FASTOCTREE)
        palette.save(f, format="png", optimize=True)


def plot_throughput(log: LogLike, opportunities_ms: ArrayLike, duration_ms: float,
                    path: str | os.PathLike[str], window_ms: float = 500.0, title: str = "",
                    flow_names: Sequence[str] = ()) -> None:
    """Throughput in windows of window_ms against the link's capacity; each flow too when
    several, named by flow_names (flow id -> scheme) where given."""
    log = as_packet_log(log)
    edges = window_edges(duration_ms, window_ms)
    edges_s = edges / MS_PER_S
    opportunities = np.asarray(opportunities_ms, dtype=np.float64)
    capacity = window_mbps(opportunities, np.full(opportunities.shape, float(BYTES_PER_OPPORTUNITY)), edges)
    arrived = log.arrived(duration_ms)

    fig, ax = _figure(title)
    ax.stairs(capacity, edges_s, fill=True, alpha=CAPACITY_ALPHA, label="capacity")
    total = window_mbps(log.arrival_ms[arrived], log.bytes[arrived].astype(np.float64), edges)
    ax.stairs(total, edges_s, linewidth=2, label="throughput")
    flows = log.flows()
    if len(flows) > 1:
        for flow in flows:
            mine = arrived & (log.flow == flow)
            tput = window_mbps(log.arrival_ms[mine], log.bytes[mine].astype(np.float64), edges)
            name = f" {flow_names[flow]}" if flow < len(flow_names) else ""
            ax.stairs(tput, edges_s, linewidth=1, label=f"flow {flow}{name}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(f"throughput (Mbit/s, {window_ms:g} ms windows)")
    ax.set_xlim(0, duration_ms / MS_PER_S)
    ax.set_ylim(bottom=0)
    _legend(fig, ax)
    _write_png(fig, path)


def plot_delay(log: LogLike, duration_ms: float, path: str | os.PathLike[str],
               propagation_ms: float | None = None, title: str = "") -> None:
    """End-to-end (signal) delay over time, with each packet's one-way delay, on a log axis;
    the link's one-way propagation delay (the least any packet can take) as a line."""
    log = as_packet_log(log)
    times, delays = signal_delay_series(log, duration_ms)
    arrived = log.arrived(duration_ms)
    one_way = log.arrival_ms[arrived] - log.send_ms[arrived]

    fig, ax = _figure(title)
    # A log axis has no zero: the first instants of a run (signal delay 0) are left out.
    positive = delays > 0
    ax.plot(times[positive] / MS_PER_S, delays[positive], linewidth=1, label="end-to-end (signal) delay")
    shown = one_way > 0
    ax.scatter(log.arrival_ms[arrived][shown] / MS_PER_S, one_way[shown], s=1,
               color=PACKET_DOT_COLOR, alpha=PACKET_DOT_ALPHA, label="per-packet one-way delay")
    if propagation_ms is not None and propagation_ms > 0:
        ax.axhline(propagation_ms, color="black", linestyle="--", linewidth=1,
                   label=f"propagation delay ({propagation_ms:g} ms)")
    ax.set_yscale("log")
    _label_delays(ax.yaxis)
    # The axis starts just below the least delay a packet had (or could have): the first
    # milliseconds' near-zero signal delay would otherwise stretch it over decades.
    floors = [float(np.min(one_way[shown]))] if np.any(shown) else []
    if propagation_ms is not None and propagation_ms > 0:
        floors.append(propagation_ms)
    if floors:
        ax.set_ylim(bottom=min(floors) * 0.8)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("delay (ms)")
    ax.set_xlim(0, duration_ms / MS_PER_S)
    _legend(fig, ax)
    _write_png(fig, path)


def _wrapped(title: str) -> str:
    """A title on lines that fit the figure (a link spec alone can be wider than it)."""
    return "\n".join(textwrap.wrap(title, TITLE_WIDTH_CHARS, break_on_hyphens=False))


def _label_delays(axis: Any) -> None:
    """Plain numbers (20, 50, 100 ms) on a log delay axis, where powers of ten alone say little."""
    axis.set_major_locator(ticker.LogLocator(subs=DELAY_TICKS))
    axis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    axis.set_minor_formatter(ticker.NullFormatter())


def _as_point(run: PointLike) -> Point:
    if isinstance(run, Metrics):
        return run.e2e_delay_p95_ms, run.throughput_mbps
    if isinstance(run, Mapping):
        return float(run["e2e_delay_p95_ms"]), float(run["throughput_mbps"])
    delay, tput = run
    return float(delay), float(tput)


def _plane(points: Sequence[Point]) -> np.ndarray:
    """Points in the plot's own coordinates (log10 delay, Mbit/s), where means and ellipses are taken."""
    array = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    keep = np.all(np.isfinite(array), axis=1) & (array[:, 0] > 0)
    return np.column_stack([np.log10(array[keep, 0]), array[keep, 1]])


def _ellipse(plane: np.ndarray) -> np.ndarray | None:
    """Outline of the 1-sigma covariance ellipse of plane points, or None under two runs."""
    if len(plane) < 2:
        return None
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(plane, rowvar=False))
    angles = np.linspace(0, 2 * math.pi, ELLIPSE_POINTS + 1)
    circle = np.stack([np.cos(angles), np.sin(angles)])
    axes = eigenvectors * np.sqrt(np.clip(eigenvalues, 0, None))
    return plane.mean(axis=0) + (axes @ circle).T


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def convex_hull(points: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull, counter-clockwise (Andrew's monotone chain)."""
    unique = np.unique(np.asarray(points, dtype=np.float64).reshape(-1, 2), axis=0)
    if len(unique) < 3:
        return unique

    def half(ordered: np.ndarray) -> list[np.ndarray]:
        chain: list[np.ndarray] = []
        for p in ordered:
            while len(chain) >= 2 and _cross(chain[-2], chain[-1], p) <= 0:
                chain.pop()
            chain.append(p)
        return chain

    lower, upper = half(unique), half(unique[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _from_plane(plane: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return 10 ** plane[:, 0], plane[:, 1]


def plot_tradeoff(points: Mapping[str, Sequence[PointLike]], omniscient: PointLike | None,
                  path: str | os.PathLike[str], title: str = "") -> None:
    """The throughput-delay plane, as in the contest's and Pantheon's plots.

    points maps each scheme to its runs; a run is a Metrics, a mapping with
    e2e_delay_p95_ms and throughput_mbps (Metrics.to_dict()), or a
    (delay ms, Mbit/s) pair. Each scheme is drawn at its mean with its runs'
    1-sigma ellipse, both taken in the plotted coordinates (log delay,
    throughput): the mean delay is geometric. The delay axis is logarithmic and
    decreases to the right, so better is up and right. The dashed outline is the
    convex hull of every run and the omniscient point.
    """
    _write_png(tradeoff_figure(points, omniscient, title), path)


def tradeoff_figure(points: Mapping[str, Sequence[PointLike]], omniscient: PointLike | None,
                    title: str = "") -> Figure:
    """plot_tradeoff's figure: each scheme a colour and marker named in the legend below."""
    fig, ax = _figure(title)
    every = []
    for i, (scheme, runs) in enumerate(points.items()):
        plane = _plane([_as_point(r) for r in runs])
        if not len(plane):
            continue
        every.append(plane)
        delay, tput = _from_plane(plane.mean(axis=0, keepdims=True))
        marker = ax.plot(delay, tput, MARKERS[i % len(MARKERS)], color=f"C{i % 10}",
                         label=scheme)[0]
        outline = _ellipse(plane)
        if outline is not None:
            ax.plot(*_from_plane(outline), color=marker.get_color(), linewidth=1)
    if omniscient is not None:
        plane = _plane([_as_point(omniscient)])
        if len(plane):
            every.append(plane)
            delay, tput = _from_plane(plane)
            ax.plot(delay, tput, "*", color="black", markersize=12, label="omniscient bound")
    if every:
        hull = convex_hull(np.concatenate(every))
        if len(hull) >= 3:
            closed = np.vstack([hull, hull[:1]])
            ax.plot(*_from_plane(closed), "--", color="grey", linewidth=1, label=HULL_LABEL)
    ax.set_xscale("log")
    _label_delays(ax.xaxis)
    ax.invert_xaxis()
    ax.margins(x=0.08, y=0.1)
    # From zero (a 0.1% spread must not look wide).
    top = max((float(np.max(_from_plane(p)[1])) for p in every), default=1.0)
    ax.set_ylim(0, top * 1.1 if top > 0 else 1.0)
    ax.set_xlabel("95% end-to-end delay (ms, log scale; better to the right)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.grid(True, which="both", alpha=GRID_ALPHA)
    _legend(fig, ax)
    return fig


# The longest part of a plot's file name a link or a scheme gives: two of them and the longest
# suffix stay well within a file system's 255 bytes, whatever a scheme's path or a spec holds.
MAX_SLUG = 100
PLANE_SUFFIX = "__tradeoff"  # LINK__tradeoff.png: a link's throughput-delay plane


def file_slug(text: str) -> str:
    """`text` as part of a file name; a long one is cut, with a hash of the whole so that two
    names that differ only past the cut stay two files."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "link"
    if len(slug) <= MAX_SLUG:
        return slug
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return f"{slug[:MAX_SLUG - len(digest) - 1]}-{digest}"


def write_plots(rows: Sequence[Mapping[str, Any]], runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """Per link: the throughput-delay plane of every scheme (mean and 1-sigma ellipse over
    runs, the omniscient point, the hull), and per scheme its first run's throughput against
    capacity and its end-to-end delay over time; then DIR/index.html, one page showing them
    all by link. Returns the plots written, the index last."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    by_link: dict[str, list[Run]] = {}
    for run in runs:
        by_link.setdefault(run.link.name, []).append(run)
    sections: dict[str, list[Path]] = {}
    for link_name, link_runs in by_link.items():
        slug = file_slug(link_name)
        points: dict[str, list[Any]] = {}
        first: dict[str, Run] = {}
        for run in link_runs:
            points.setdefault(run.scheme, []).append(run.metrics)
            first.setdefault(run.scheme, run)
        seconds = max(run.duration_ms for run in link_runs) / MS_PER_S
        propagation = _propagation_ms(link_runs[0].link.spec)
        omniscient = next((r for r in rows if r["link"] == link_name and r["scheme"] == "omniscient"), None)
        path = out_dir / f"{slug}{PLANE_SUFFIX}.png"
        plot_tradeoff(points, omniscient, path,
                      title=f"{link_name}: every scheme, {seconds:g} s runs")
        link_plots = [path]
        for scheme, run in first.items():
            stem = f"{slug}__{file_slug(scheme)}"
            lineup = " vs ".join(run.flow_schemes) if run.flow_schemes else scheme
            what = f"{link_name}: {lineup}, {run.duration_ms / MS_PER_S:g} s, seed {run.seed}"
            path = out_dir / f"{stem}__throughput.png"
            plot_throughput(run.log, run.opportunities_ms, run.duration_ms, path,
                            title=f"throughput of {what}", flow_names=run.flow_schemes)
            link_plots.append(path)
            path = out_dir / f"{stem}__delay.png"
            plot_delay(run.log, run.duration_ms, path, propagation_ms=propagation,
                       title=f"delay of {what}")
            link_plots.append(path)
        sections[link_name] = link_plots
        written.extend(link_plots)
    written.append(write_plots_index(out_dir, sections))
    return written


def _propagation_ms(spec: str) -> float | None:
    """A link spec's one-way propagation delay; None for a real path (no spec)."""
    if not spec:
        return None

    return float(_core.parse_link_spec(spec).delay_ms)


def plot_curves(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], title: str,
                ylabel: str, path: str | os.PathLike[str],
                references: Mapping[str, float] | None = None) -> None:
    """Training curves: each series' (iterations, values) as a line, and reference values (the
    oracle's score, the best baseline's) as dashed horizontal lines."""
    fig, ax = _figure(title)
    for label, (steps, values) in series.items():
        ax.plot(steps, values, marker="." if len(steps) < 50 else None, label=label)
    for label, value in (references or {}).items():
        if math.isfinite(value):
            ax.axhline(value, linestyle="--", linewidth=1, color="black" if label == "oracle"
                       else "grey", label=f"{label} ({value:.3g})")
    ax.set_xlabel("iteration")
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    ax.grid(True, alpha=GRID_ALPHA)
    _legend(fig, ax)
    _write_png(fig, path)


def plot_calibration(measured: Mapping[str, Point], emulated: Mapping[str, Point], title: str,
                     path: str | os.PathLike[str]) -> None:
    """Measured against calibrated runs in the throughput-delay plane, one pair per scheme.

    Points are (95th-percentile one-way delay ms, Mbit/s), the two figures the calibration
    fits; a line joins each scheme's measured point to its emulated one, so its length is the
    replication error to see. Axes as in plot_tradeoff: log delay, better to the right.
    """
    fig, ax = _figure(title)
    for i, (scheme, (delay, tput)) in enumerate(measured.items()):
        marker = ax.plot(delay, tput, "o", markersize=8, color=f"C{i % 10}", label=scheme)[0]
        if scheme in emulated:
            sim_delay, sim_tput = emulated[scheme]
            ax.plot(sim_delay, sim_tput, "s", markersize=8, markerfacecolor="none",
                    color=marker.get_color())
            ax.plot([delay, sim_delay], [tput, sim_tput], ":", color=marker.get_color(),
                    linewidth=1)
    # Legend entries for the two kinds of marker, in neutral colours.
    ax.plot([], [], "o", color="grey", label="measured")
    ax.plot([], [], "s", color="grey", markerfacecolor="none", label="calibrated link (simulated)")
    ax.set_xscale("log")
    _label_delays(ax.xaxis)
    ax.invert_xaxis()
    ax.margins(x=0.08, y=0.1)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("95th-percentile one-way delay (ms, log scale; better to the right)")
    ax.set_ylabel("throughput (Mbit/s)")
    ax.grid(True, which="both", alpha=GRID_ALPHA)
    _legend(fig, ax)
    _write_png(fig, path)


def plot_search(points: Sequence[Mapping[str, Any]], title: str,
                path: str | os.PathLike[str]) -> None:
    """A search's trials over rate x one-way delay (both log): colour the gap to the best
    baseline (red: the scheme loses), the marker the delivery process, a ring the links kept.
    Each point: rate_mbps, delay_ms, delivery, gap, kept."""
    from matplotlib.colors import TwoSlopeNorm

    fig, ax = _figure(title)
    gaps = [p["gap"] for p in points]
    reach = max(1e-6, *(abs(g) for g in gaps))
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-reach, vmax=reach)  # white where it draws level
    deliveries = sorted({p["delivery"] for p in points})
    mappable = None
    for i, delivery in enumerate(deliveries):
        mine = [p for p in points if p["delivery"] == delivery]
        marker = MARKERS[i % len(MARKERS)]
        mappable = ax.scatter([p["rate_mbps"] for p in mine], [p["delay_ms"] for p in mine],
                              c=[p["gap"] for p in mine], cmap="coolwarm", norm=norm, s=40,
                              marker=marker, edgecolors="grey", linewidths=0.5)
        ax.scatter([], [], marker=marker, color="grey", label=delivery)  # the colour is the gap's
    kept = [p for p in points if p["kept"]]
    ax.scatter([p["rate_mbps"] for p in kept], [p["delay_ms"] for p in kept], s=160,
               facecolors="none", edgecolors="black", linewidths=1.5,
               label=f"kept: the worst {len(kept)}")
    if mappable is not None:
        fig.colorbar(mappable, ax=ax, label="gap to the best baseline (> 0: the scheme loses)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rate (Mbit/s, log scale)")
    ax.set_ylabel("one-way delay (ms, log scale)")
    ax.grid(True, which="both", alpha=GRID_ALPHA)
    _legend(fig, ax)
    _write_png(fig, path)
