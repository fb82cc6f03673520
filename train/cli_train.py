"""Train an LSTM congestion-control policy: by DAgger against the oracle (Indigo's recipe) or by
PPO on the reward, as the config's [algorithm] name says.

A run is a folder runs/<name>__<seed>__<YYYYmmdd-HHMMSS>/ holding the resolved config
(config.toml), TensorBoard events (`tensorboard --logdir runs`), checkpoint.pt (written after
every iteration) and policy.pt (the best policy so far, for `ccgym eval --schemes lstm:DIR` and
`ccgym export DIR`). At the end the policy is scored beside the baselines and the oracle on the
validation links. Examples:

  ccgym train                                   # the packaged quick config (minutes, 2 cores)
  ccgym train cellular                          # a packaged config by name
  ccgym train configs/train/indigo.toml --iterations 20
  ccgym train quick --set dagger.epochs=8 --set run.patience=4   # a variant, no file edited
  ccgym train --describe-config                 # every section and key, with its default
  for s in 1 2 3; do ccgym train configs/train/cellular.toml --seed $s; done   # seed spread
  ccgym train --resume runs/quick__1__20250101-120000    # continue a killed run
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from ccgym import flags
from ccgym.analysis.evaluate import evaluate, validate_schemes
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.errors import UserError
from ccgym.files import atomic_write_text
from ccgym.train.config import (config_path, describe_config, load_config,
                                packaged_names, resolve_validation_links, with_overrides)
from ccgym.train.run_folder import RunFolder

DEFAULT_CONFIG = "quick"  # ccgym/configs/train/quick.toml


def load_named_config(argument: str) -> Any:
    """The config a CONFIG argument names: a TOML file, or a packaged config ("cellular")."""
    return load_config(config_path(argument, Path.cwd(), argument))  # a missing file: named


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG",
                        help="training config: a TOML file, or the name of a packaged one ("
                             f"{', '.join(packaged_names())}; default: {DEFAULT_CONFIG})")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        dest="assignments",
                        help="override a config key, typed as the key is (repeatable), e.g. "
                             "--set dagger.epochs=8 --set eval.baselines='[\"cubic\"]'; "
                             "--describe-config lists the keys")
    parser.add_argument("--describe-config", action="store_true",
                        help="print every config section and key with its type, default and "
                             "description, and exit")
    parser.add_argument("--resume", metavar="RUN_DIR",
                        help="continue the run in RUN_DIR from its last checkpoint")
    parser.add_argument("--name", help="run name (default: [run] name of the config)")
    parser.add_argument("--out", default="runs", metavar="DIR", type=flags.output_folder,
                        help="folder of run folders (default: runs)")
    parser.add_argument("--seed", type=flags.seed, metavar="N",
                        help="seed of the run's rollouts, splits and initial weights "
                             "(overrides [run] seed; the run folder's name carries it)")
    parser.add_argument("--iterations", type=flags.count(1), metavar="N",
                        help="total iterations (overrides [run] iterations)")
    parser.add_argument("--workers", type=flags.count(0), metavar="N",
                        help="rollout workers, 0 for in-process (overrides [run] workers)")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="join this Ray cluster, e.g. auto or HOST:PORT "
                             "(overrides [run] ray_address)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-leaderboard", action="store_true",
                        help="skip the final leaderboard")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The --set assignments, then the flags that override [run] keys (a flag wins);
    with_overrides checks them as the config's own."""
    from ccgym.train.config import parse_assignment

    changes = dict(parse_assignment(text) for text in args.assignments)
    flags = {"run.iterations": args.iterations, "run.workers": args.workers,
             "run.ray_address": args.ray_address, "run.name": args.name, "run.seed": args.seed}
    changes.update({key: value for key, value in flags.items() if value is not None})
    return changes


def leaderboard(config: Any, folder: RunFolder, progress: bool) -> str:
    """The trained policy beside the baselines and the oracle on the validation links."""
    links, _ = resolve_validation_links(config)
    schemes = [f"lstm:{folder.path}"]
    if config.eval.oracle:
        try:
            validate_schemes(["oracle"])
            schemes.append("oracle")
        except UserError as e:
            print(f"leaderboard without the oracle: {e}", file=sys.stderr)
    schemes.extend(config.eval.baselines)
    rows, _ = evaluate(links, schemes, runs=config.eval.runs, seed=config.run.seed,
                       duration_s=config.eval.final_length_s, progress=progress)
    return format_leaderboard(rows)


def _train(config, links, folder: RunFolder, args: argparse.Namespace, extend: bool,
           progress: bool):
    """The training loop in the run folder; Ctrl-C says how to go on, and a failure before
    the first iteration ended removes a new folder (nothing in it to resume from: it would
    only mislead `ccgym report` and lstm:runs/NAME, which take the newest run)."""
    from ccgym.train.loop import train

    try:
        return train(config, folder.path, resume=bool(args.resume), extend=extend,
                     progress=progress, links=links)
    except KeyboardInterrupt:
        print(f"interrupted; continue with: ccgym train --resume {folder.path}", file=sys.stderr)
        raise
    except Exception:
        if not args.resume and not folder.checkpoint.exists():
            shutil.rmtree(folder.path, ignore_errors=True)
        raise


def run(args: argparse.Namespace) -> int:
    if args.describe_config:
        print(describe_config(), end="")
        return 0
    changes = _overrides(args)
    if args.resume:
        if args.config:
            raise UserError("give CONFIG or --resume RUN_DIR, not both "
                            "(a resumed run uses its own config.toml)")
        if {"run.name", "run.seed"} & changes.keys():
            raise UserError("--name and --seed (run.name, run.seed) cannot change a resumed run")
        folder = RunFolder.existing(args.resume)
        folder.check_resumable()
        config = folder.load_config()
    else:
        config = load_named_config(args.config or DEFAULT_CONFIG)
        folder = None
    if changes:
        config = with_overrides(config, **changes)

    from ccgym.train.registry import trainer_class
    from ccgym.train.validation import check_config

    trainer_class(config.algorithm.name, config.links.shared).check_config(config)
    links = check_config(config)  # before a run folder exists: a bad config leaves nothing behind
    if folder is None:
        folder = RunFolder.create(Path(args.out), config.run.name, config.run.seed)
        folder.write_config(config)
        folder.write_machine()
    elif changes:  # a resumed run records its new target (--iterations, --workers)
        folder.write_config(config)
    print(f"run folder: {folder.path}")

    progress = not args.no_progress
    state = _train(config, links, folder, args, extend="run.iterations" in changes,
                   progress=progress)
    best_iteration = state.early_stopping.best_iteration
    best = next((h for h in state.history if int(h["iteration"]) == best_iteration), None)
    if best is not None:
        agreement = (f", held-out expert agreement {best['agreement']:.3f}"
                     if "agreement" in best else "")
        shares = "".join(f", {tag.removeprefix('shares/').replace('_', ' ')} {value:.2f}"
                         for tag, value in best.items()
                         if tag.startswith("shares/beside_"))
        print(f"best policy: {folder.policy} (iteration {best_iteration}, "
              f"validation score {best['score']:.3f}{agreement}{shares})")
    if config.eval.leaderboard and not args.no_leaderboard:
        text = leaderboard(config, folder, progress)
        print(text, end="")
        atomic_write_text(folder.leaderboard, text)
    return 0
