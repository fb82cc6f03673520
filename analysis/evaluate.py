"""`ccgym eval`'s runs: every scheme on every link, in the simulator (envs/scoring.py) or,
for kernel TCP, in real time through the link shell (deploy/shell.py); and its outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ccgym.deploy.shell import check_kernel_scheme, is_kernel_scheme, run_kernel_scheme
from ccgym.emulators.links import Link
from ccgym.envs.scoring import (Run, aggregate, check_flow_starts, link_duration_ms,
                                omniscient_runs, simulate_scheme, validate_simulated_schemes)
from ccgym.files import atomic_write_json, human_stream
from ccgym.folders import output_folder


def validate_schemes(schemes: Sequence[str]) -> None:
    """UserError for a scheme `ccgym eval` cannot run: kernel TCP or one of the simulator's."""
    for scheme in schemes:
        if is_kernel_scheme(scheme):  # real TCP through the link shell
            check_kernel_scheme(scheme)
        else:
            validate_simulated_schemes([scheme], others=["kernel:NAME"])


def run_scheme(link: Link, scheme: str, seeds: Sequence[int], duration_ms: float,
               flows: int = 1, interval_ms: float = 0.0, threads: int = 0) -> list[Run]:
    """Runs one scheme on one link once per seed: kernel TCP in real time through the link
    shell, any other scheme in the simulator; returns the scored runs."""
    if is_kernel_scheme(scheme):
        return run_kernel_scheme(link, scheme, seeds, duration_ms, flows, interval_ms)
    return simulate_scheme(link, scheme, seeds, duration_ms, flows, interval_ms, threads)


def evaluate(links: Sequence[Link], schemes: Sequence[str], runs: int = 1, seed: int = 1,
             duration_s: float | None = None, flows: int = 1, interval_s: float = 0.0,
             progress: bool = True) -> tuple[list[dict[str, Any]], list[Run]]:
    """Every scheme on every link, `runs` times: leaderboard rows and the runs themselves."""
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
                  plots_dir: str | None, force: bool = False) -> None:
    """--json OUT (the rows) and --plots DIR (the runs' plots, by ccgym.folders' rule for output
    folders; force: --force), as `ccgym eval` and `ccgym run` write them."""
    if json_path:
        atomic_write_json(json_path, rows)
    if plots_dir:
        from ccgym.analysis.plots import write_plots  # matplotlib: only when plots are asked for

        # The folder is written whole: Ctrl-C or a failure leaves it as it was, and no plot
        # of an earlier run stays beside the new ones.
        with output_folder(plots_dir, force) as folder:
            written = write_plots(rows, runs, folder)
        # One line, not one per file: over a link set they are hundreds; the index shows them.
        print(f"wrote {len(written) - 1} plots into {plots_dir}: open "
              f"{Path(plots_dir) / written[-1].name}", file=human_stream(json_path))
