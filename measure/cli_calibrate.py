"""Fit a link to measured runs: Pantheon's calibrated emulators, on one machine.

MEASURED are `ccgym run --json` files: several schemes on one path (a real one with
--remote, or any link), one or more runs each. The fit searches five link parameters
(bottleneck rate, one-way propagation delay, DropTail queue in packets, i.i.d. loss,
constant or Poisson deliveries) by Bayesian optimization (Optuna's Gaussian-process
sampler), scoring each candidate by simulating every measured scheme over it in virtual
time. The score is Pantheon's replication error: per scheme, the mean of the relative
differences in throughput and in 95th-percentile one-way delay between emulated and
measured runs; averaged over schemes. Each delivery process is searched with --trials
candidates; the better fit is the result.

--leave-one-out fits on all schemes but one and predicts the one left out, for each
scheme, with the delivery process of the full fit. Examples:

  ccgym run --remote far:9000 --scheme cubic --json cubic.json     # ... and bbr, vegas, ...
  ccgym calibrate cubic.json bbr.json vegas.json copa.json -o path.toml --plot path.png
  ccgym calibrate runs/*.json --schemes cubic,bbr,vegas --trials 100 --leave-one-out --json fit.json
  ccgym eval --links path.toml                                     # the calibrated link
"""

from __future__ import annotations

import argparse
import contextlib
import re
import time
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from ccgym import flags
from ccgym.emulators.links import check_link_name, load_link_set
from ccgym.errors import UserError
from ccgym.files import atomic_path, atomic_write_json, check_not_input, human_stream
from ccgym.measure import calibrate as cal
from ccgym.measure import measurements as meas
from ccgym.measure.calibrate import link_set_toml

DEFAULT_TRIALS = 60
PLOT_SUFFIXES = (".png", ".svg", ".pdf")
MAX_SIM_RUNS = 10
PERCENT = 100.0
_NAME_RE = re.compile(r"[^A-Za-z0-9._+-]+")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("measured", nargs="+", metavar="MEASURED",
                        help="`ccgym run --json` files of several schemes on one path")
    parser.add_argument("--schemes", help="fit only these measured schemes (comma-separated)")
    parser.add_argument("--trials", type=flags.count(1, flags.MAX_TRIALS),
                        default=DEFAULT_TRIALS,
                        help=f"candidates per delivery process (default {DEFAULT_TRIALS})")
    parser.add_argument("--sim-runs", type=flags.count(1, MAX_SIM_RUNS), default=2,
                        help="simulated runs (seeds) of each scheme per candidate (default 2)")
    parser.add_argument("--seed", type=flags.seed, default=1, help="seed of the search (default 1)")
    parser.add_argument("--leave-one-out", action="store_true",
                        help="also fit without each scheme in turn and predict it")
    parser.add_argument("-o", "--output", metavar="LINK.toml",
                        type=flags.output((".toml",), what="a TOML link set"),
                        help="write the calibrated link as a one-link TOML link set ('-': "
                             "standard output)")
    parser.add_argument("--name", help="the calibrated link's name (default: from -o, else "
                                       "'calibrated')")
    parser.add_argument("--json", metavar="OUT", type=flags.output_file,
                        help="write the fit, the errors per scheme and leave-one-out as JSON "
                             "('-': standard output)")
    parser.add_argument("--plot", metavar="PNG",
                        type=flags.output(PLOT_SUFFIXES, stdout=False, what="an image"),
                        help="plot measured vs calibrated points in the throughput-delay "
                             "plane; the format follows the name: .png, .svg or .pdf")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="score candidates as Ray tasks on this cluster, as many at once as "
                             "it has CPUs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def link_name(args: argparse.Namespace) -> str:
    """The calibrated link's name, checked before any work as every link's name is (a long
    one would fail the link set's check only after the whole search)."""
    if args.name is not None:
        if not args.name or _NAME_RE.search(args.name) or not args.name[0].isalnum():
            raise UserError(f"--name {args.name!r}: use letters, digits and . _ + - "
                            f"(starting with a letter or digit)")
        check_link_name(args.name, "--name")
        return args.name
    if args.output is not None:
        name = _NAME_RE.sub("-", Path(args.output).stem).strip("-.+_") or "calibrated"
        check_link_name(name, f"-o {args.output} (the link's name; give a shorter --name)")
        return name
    return "calibrated"


def run(args: argparse.Namespace) -> int:
    import torch

    # The Gaussian process's matrices are tiny (one row per trial): one torch thread fits them
    # faster than several (measured: 0.37 s against 0.90 s per trial with two threads on a busy
    # 2-core machine), and leaves the cores to the simulations.
    torch.set_num_threads(1)

    name = link_name(args)
    for flag, output in (("-o", args.output), ("--json", args.json), ("--plot", args.plot)):
        check_not_input(output, args.measured, flag)
    schemes = None
    if args.schemes is not None:
        schemes = [s.strip() for s in args.schemes.split(",")]
        if not all(schemes):
            raise UserError(f"--schemes {args.schemes!r}: an empty item")
    measurements = meas.read_measurements(args.measured, schemes)
    measured = measurements.schemes
    if args.leave_one_out and len(measured) < meas.MIN_SCHEMES + 1:
        raise UserError(f"--leave-one-out needs at least {meas.MIN_SCHEMES + 1} schemes, so that "
                        f"each fit without one still has {meas.MIN_SCHEMES}")

    fits = len(cal.DELIVERIES) + (len(measured) if args.leave_one_out else 0)
    start = time.monotonic()
    with contextlib.ExitStack() as stack:
        batch, evaluator_for = 1, None
        if args.ray_address:
            batch, evaluator_for = stack.enter_context(
                cal.ray_evaluators(args.ray_address, args.sim_runs))
        bar = stack.enter_context(tqdm(total=fits * args.trials, desc="calibrate", unit="trial",
                                       disable=args.no_progress, leave=False))
        best = [float("inf")]

        def progress(done: int, best_error: float) -> None:
            best[0] = min(best[0], best_error)
            bar.set_postfix_str(f"best error {best_error * PERCENT:.1f}%")
            bar.update(done)

        evaluate = evaluator_for(measured) if evaluator_for else None
        fit = cal.fit(measured, args.trials, args.seed, args.sim_runs, batch, evaluate, progress)
        left_out = None
        if args.leave_one_out:
            left_out = cal.leave_one_out(measured, fit.params.delivery, args.trials, args.seed,
                                         args.sim_runs, batch, evaluator_for, progress)
    calibration = cal.Calibration(measurements, fit, left_out, time.monotonic() - start)

    out = human_stream(args.output, args.json)
    print(format_calibration(calibration, name), file=out)
    write_outputs(calibration, args, name, out)
    return 0


def format_calibration(c, name: str) -> str:
    """The fit as text: the link, then measured vs emulated per scheme with its error."""
    p = c.fit.params
    lines = [f"path: {c.measurements.path}",
             f"calibrated link {name}: {p.spec()}",
             f"replication error {c.fit.error * PERCENT:.1f}% (best "
             + ", ".join(f"{d}: {e * PERCENT:.1f}%" for d, e in c.fit.error_by_delivery.items())
             + f"); {c.fit.trials} trials in {c.wall_time_s:.0f} s",
             ""]
    header = ["scheme", "measured Mbit/s", "emulated", "measured p95 ms", "emulated", "error %"]
    table = [header]
    left = {x.scheme: x for x in c.left_out or []}
    if left:
        header.append("left out %")
    for s in c.fit.schemes:
        cells = [s.scheme, f"{s.measured_throughput_mbps:.2f}", f"{s.emulated_throughput_mbps:.2f}",
                 f"{s.measured_delay_p95_ms:.1f}", f"{s.emulated_delay_p95_ms:.1f}",
                 f"{s.error * PERCENT:.1f}"]
        if left:
            cells.append(f"{left[s.scheme].predicted.error * PERCENT:.1f}")
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        lines.append("  ".join([row[0].ljust(widths[0])]
                               + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]))
    if left:
        mean = sum(x.predicted.error for x in left.values()) / len(left)
        lines.append(f"\nleave-one-out error {mean * PERCENT:.1f}% (each scheme predicted by a "
                     f"link fitted to the others)")
    return "\n".join(lines)


def write_outputs(c, args: argparse.Namespace, name: str, out: TextIO) -> None:
    """-o LINK.toml (checked by loading it back before it replaces anything), --json, --plot."""
    if args.output is not None:
        files = ", ".join(c.measurements.files)
        text = link_set_toml(
            c.fit.params, name,
            description=f"Calibrated by ccgym calibrate to {c.measurements.path}: replication "
                        f"error {c.fit.error * PERCENT:.1f}% over "
                        f"{', '.join(s.scheme for s in c.fit.schemes)}",
            source=f"ccgym calibrate {files}")
        with atomic_path(args.output) as tmp:
            tmp.write_text(text)
            load_link_set(tmp)  # the file must be a link set every verb accepts
        print(f"wrote {args.output}", file=out)
    if args.json is not None:
        atomic_write_json(args.json, c.to_dict())
        print(f"wrote {args.json}", file=out)
    if args.plot is not None:
        from ccgym.analysis.plots import plot_calibration

        measured = {s.scheme: (s.measured_delay_p95_ms, s.measured_throughput_mbps)
                    for s in c.fit.schemes}
        emulated = {s.scheme: (s.emulated_delay_p95_ms, s.emulated_throughput_mbps)
                    for s in c.fit.schemes}
        duration = max(m.duration_s for m in c.measurements.schemes)
        title = (f"{c.measurements.path}: measured vs calibrated ({name}, "
                 f"{c.fit.error * PERCENT:.1f}% error), {duration:g} s runs")
        plot_calibration(measured, emulated, title, args.plot)
        print(f"wrote {args.plot}", file=out)
