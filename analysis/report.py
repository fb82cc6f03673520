"""Plots of an evaluation: what `ccgym eval --plots DIR` writes.

Per link: the throughput–delay plane of every scheme (mean and 1-sigma ellipse
over runs, the omniscient point, the hull), and per scheme its first run's
throughput against capacity and its end-to-end delay over time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ccgym.analysis.evaluate import Run
from ccgym.analysis.plots import plot_delay, plot_throughput, plot_tradeoff


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "link"


def write_plots(rows: Sequence[dict[str, Any]], runs: Sequence[Run], out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    by_link: dict[str, list[Run]] = {}
    for run in runs:
        by_link.setdefault(run.link.name, []).append(run)
    for link_name, link_runs in by_link.items():
        slug = _slug(link_name)
        points: dict[str, list[Any]] = {}
        first: dict[str, Run] = {}
        for run in link_runs:
            points.setdefault(run.scheme, []).append(run.metrics)
            first.setdefault(run.scheme, run)
        omniscient = next((r for r in rows if r["link"] == link_name and r["scheme"] == "omniscient"), None)
        path = out_dir / f"{slug}__tradeoff.png"
        plot_tradeoff(points, omniscient, path)
        written.append(path)
        for scheme, run in first.items():
            stem = f"{slug}__{_slug(scheme)}"
            path = out_dir / f"{stem}__throughput.png"
            plot_throughput(run.log, run.opportunities_ms, run.duration_ms, path)
            written.append(path)
            path = out_dir / f"{stem}__delay.png"
            plot_delay(run.log, run.duration_ms, path)
            written.append(path)
    return written
