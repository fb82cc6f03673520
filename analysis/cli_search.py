"""Search a link space for where a scheme loses: the links on which its score falls furthest
below the best classic baseline's (Genet's gap-to-baseline objective).

Each trial draws a link from the space (--space: a TOML file or a packaged space's name;
configs/spaces/default.toml documents the keys), runs the scheme and every baseline on it
once per seed (seeds seed..seed+K-1, as `ccgym eval --seed S --runs K`) and scores each by its
own flow's mean score; the gap is the best baseline's score minus the scheme's. Optuna's TPE
sampler, seeded by --seed, proposes the links: the same command gives the same search. The
links of the largest gaps (twice --keep) are then confirmed: scored again at the next K seeds,
which the trials never used. The worst links by the lesser of the two gaps (--keep) are
written as a link set that every verb takes (-o), all trials as JSON (--json), and where in
the space the scheme loses as a plot (--plot). Examples:

  ccgym search --scheme fixed:5 --trials 30 -o found.toml
  ccgym search --scheme lstm:runs/mixed --trials 80 -o found.toml --json trials.json --plot where.png
  ccgym search --scheme vegas --space my-space.toml --baselines cubic,bbr -o found.toml
  ccgym eval --links found.toml --schemes lstm:runs/mixed,cubic,bbr,vegas,copa --seed 101 --runs 3
"""

from __future__ import annotations

import argparse
import time
from typing import TextIO

from tqdm import tqdm

from ccgym import flags
from ccgym.analysis import search as found
from ccgym.analysis.cli_eval import parse_schemes
from ccgym.analysis.coexist import check_shared
from ccgym.analysis.evaluate import validate_schemes
from ccgym.deploy.shell import is_kernel_scheme
from ccgym.emulators.link_space import DEFAULT_SPACE, find_space, load_space
from ccgym.emulators.links import load_link_set
from ccgym.errors import UserError
from ccgym.files import atomic_path, atomic_write_json, check_not_input, human_stream
from ccgym.policies.policy_path import resolve_policy_path

DEFAULT_TRIALS = 50
DEFAULT_KEEP = 5
PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scheme", required=True,
                        help="the scheme to search against: a classic one, or "
                             "lstm:runs/NAME|FILE.pt|FILE.onnx")
    parser.add_argument("--space", default=DEFAULT_SPACE,
                        help=f"the link space: a TOML file or a packaged space's name "
                             f"(default: {DEFAULT_SPACE})")
    parser.add_argument("--baselines",
                        help="the classic schemes whose best the scheme is measured against "
                             f"(default: {','.join(found.DEFAULT_BASELINES)}, less the scheme)")
    parser.add_argument("--trials", type=flags.count(1, flags.MAX_TRIALS), default=DEFAULT_TRIALS,
                        help=f"links to try (default {DEFAULT_TRIALS})")
    parser.add_argument("--seeds", type=flags.count(1, flags.MAX_RUNS), default=3,
                        help="runs (seeds) of each scheme on each link, averaged (default 3)")
    parser.add_argument("--seed", type=flags.seed, default=1,
                        help="the search's seed and its runs' first seed (default 1)")
    parser.add_argument("--duration-s", type=flags.duration_s, default=None,
                        help="run length (default: a generated trace once, else 30 s)")
    parser.add_argument("--keep", type=flags.count(1, flags.MAX_TRIALS), default=DEFAULT_KEEP,
                        help=f"how many of the worst links -o holds (default {DEFAULT_KEEP}); twice "
                             "as many are confirmed at fresh seeds first")
    parser.add_argument("-o", "--output", metavar="FOUND.toml", required=True,
                        type=flags.output((".toml",), what="a TOML link set"),
                        help="write the worst links as a link set ('-': standard output)")
    parser.add_argument("--json", metavar="OUT", type=flags.output_file,
                        help="write every trial as JSON ('-': standard output)")
    parser.add_argument("--plot", metavar="PNG",
                        type=flags.output(PLOT_SUFFIXES, stdout=False, what="an image"),
                        help="plot the gap of each trial over rate x delay; the format follows "
                             "the name: .png, .svg or .pdf")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    space_path = find_space(args.space)
    prefix, _, policy = args.scheme.partition(":")
    inputs = [str(space_path), *([str(resolve_policy_path(policy))] if prefix == "lstm" else [])]
    for flag, output in (("-o", args.output), ("--json", args.json), ("--plot", args.plot)):
        check_not_input(output, inputs, flag)
    space = load_space(space_path)
    baselines = _baselines(args.baselines, args.scheme)
    schemes = [args.scheme, *baselines]
    for scheme in schemes:
        if is_kernel_scheme(scheme):
            raise UserError(f"{scheme}: kernel TCP runs in real time, and a search makes "
                            "thousands of runs: give a scheme the simulator runs")
    validate_schemes(schemes)
    if space.has_competitors:
        check_shared(schemes, flows=1)
    search = found.Search(space, args.scheme, baselines, args.seeds, args.seed, args.duration_s)

    start = time.monotonic()
    confirming = found.confirm_count(args.trials, args.keep)
    with tqdm(total=args.trials + confirming, desc="search", unit="link",
              disable=args.no_progress, leave=False) as bar:
        largest_gap = [float("-inf")]

        def tried(point: found.Point) -> None:
            largest_gap[0] = max(largest_gap[0], point.gap)
            bar.set_postfix_str(f"largest gap {largest_gap[0]:.2f}", refresh=False)
            bar.update()

        def confirmed(point: found.Point) -> None:
            bar.set_postfix_str(f"trial {point.number}: gap {point.gap:.2f}, confirmed "
                                f"{point.confirmed_gap:.2f}", refresh=False)
            bar.update()

        points = found.run_search(search, args.trials, tried)
        # Shown at once: the phase changes once, and a fast confirmation can end before the
        # bar's next timed refresh.
        bar.set_description(f"confirm at seeds {found.seed_span(search.confirm_seeds)}",
                            refresh=True)
        points, kept = found.confirm_worst(search, points, args.keep, confirmed)
    seconds = time.monotonic() - start

    out = human_stream(args.output, args.json)
    print(format_found(search, kept, len(points), seconds), file=out)
    write_outputs(args, search, points, kept, seconds, out)
    return 0


def _baselines(text: str | None, scheme: str) -> tuple[str, ...]:
    """--baselines, or the defaults less the scheme itself: a scheme is never its own
    baseline (its gap could not be above 0)."""
    if text is None:
        return tuple(b for b in found.DEFAULT_BASELINES if b != scheme)
    baselines = tuple(parse_schemes(text, "--baselines"))
    if scheme in baselines:
        raise UserError(f"--baselines {text}: {scheme} is the scheme searched; it cannot be its "
                        "own baseline")
    return baselines


def format_found(search: found.Search, kept: list[found.Point], trials: int,
                 seconds: float) -> str:
    confirming = found.confirm_count(trials, len(kept))
    lines = [f"{trials} links of {search.space.path}, the {confirming} largest gaps confirmed "
             f"at seeds {found.seed_span(search.confirm_seeds)}, in "
             f"{seconds:.0f} s ({seconds / (trials + confirming):.2f} s a link, {search.seeds} "
             f"seeds of {1 + len(search.baselines)} schemes); the worst {len(kept)} for "
             f"{search.scheme}, by the lesser of the two gaps:", ""]
    table = [["gap", "trial gap", "confirmed", search.scheme, "best baseline", "link"]]
    for point in kept:
        table.append([f"{point.kept_gap:.3f}", f"{point.gap:.3f}",
                      f"{point.confirmed_gap:.3f}", f"{point.score:.3f}",
                      f"{point.best_baseline} {point.baselines[point.best_baseline]:.3f}",
                      point.link.name])
    numbers = 4  # the right-aligned columns
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for row in table:
        lines.append("  ".join(cell.rjust(w) if i < numbers else cell.ljust(w)
                               for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    if kept and kept[0].kept_gap <= 0:
        lines.append(f"\n{search.scheme} is ahead of the best baseline on every link confirmed")
    return "\n".join(lines)


def write_outputs(args: argparse.Namespace, search: found.Search, points: list[found.Point],
                  kept: list[found.Point], seconds: float, out: TextIO) -> None:
    """-o (loaded back as a link set before it replaces anything), --json, --plot."""
    with atomic_path(args.output) as tmp:
        tmp.write_text(found.found_link_set(search, kept, len(points), str(args.output)))
        load_link_set(tmp)  # the file must be a link set every verb accepts
    print(f"wrote {args.output}; scored as the search scored it (another --seed: at seeds it "
          f"never used): {found.replay_command(search, str(args.output))}", file=out)
    document = found.trials_document(search, points, kept, seconds)
    if args.json is not None:
        atomic_write_json(args.json, document)
        print(f"wrote {args.json}", file=out)
    if args.plot is not None:
        from ccgym.analysis.plots import plot_search

        plot_search(found.plot_points(document), found.plot_title(document), args.plot)
        print(f"wrote {args.plot}", file=out)

