"""Train an LSTM congestion-control policy by DAgger against the oracle (Indigo's recipe).

A run is a folder runs/<name>__<seed>__<YYYYmmdd-HHMMSS>/ holding the resolved config
(config.toml), TensorBoard events (`tensorboard --logdir runs`), checkpoint.pt (written after
every iteration) and policy.pt (the best policy so far, for `ccgym eval --schemes lstm:DIR` and
`ccgym export DIR`). At the end the policy is scored beside the baselines and the oracle on the
validation links. Examples:

  ccgym train                                   # the packaged quick config (minutes, 2 cores)
  ccgym train configs/train/indigo.toml --iterations 20
  for s in 1 2 3; do ccgym train configs/train/cellular.toml --seed $s; done   # seed spread
  ccgym train --resume runs/quick__1__20250101-120000    # continue a killed run
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ccgym import flags
from ccgym.analysis.evaluate import evaluate, validate_schemes
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.errors import UserError
from ccgym.files import atomic_write_text
from ccgym.train.config import load_config, load_packaged_config, resolve_validation_links, with_overrides
from ccgym.train.run_folder import RunFolder

DEFAULT_CONFIG = "quick"  # ccgym/configs/train/quick.toml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", nargs="?", metavar="CONFIG.toml",
                        help=f"training config (default: the packaged {DEFAULT_CONFIG}.toml)")
    parser.add_argument("--resume", metavar="RUN_DIR",
                        help="continue the run in RUN_DIR from its last checkpoint")
    parser.add_argument("--name", help="run name (default: [run] name of the config)")
    parser.add_argument("--out", default="runs", metavar="DIR", type=flags.output_folder,
                        help="folder of run folders (default: runs)")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="seed of the run's rollouts, splits and initial weights "
                             "(overrides [run] seed; the run folder's name carries it)")
    parser.add_argument("--iterations", type=int, metavar="N",
                        help="total DAgger iterations (overrides [run] iterations)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="rollout workers, 0 for in-process (overrides [run] workers)")
    parser.add_argument("--ray-address", metavar="ADDR",
                        help="join this Ray cluster, e.g. auto or HOST:PORT "
                             "(overrides [run] ray_address)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("--no-leaderboard", action="store_true",
                        help="skip the final leaderboard")


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The flags that override [run] keys; with_overrides checks them as the config's own."""
    flags = {"run.iterations": args.iterations, "run.workers": args.workers,
             "run.ray_address": args.ray_address, "run.name": args.name, "run.seed": args.seed}
    return {key: value for key, value in flags.items() if value is not None}


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


def run(args: argparse.Namespace) -> int:
    changes = _overrides(args)
    if args.resume:
        if args.config:
            raise UserError("give CONFIG.toml or --resume RUN_DIR, not both "
                            "(a resumed run uses its own config.toml)")
        if args.name is not None or args.seed is not None:
            raise UserError("--name and --seed cannot change a resumed run")
        folder = RunFolder.existing(args.resume)
        folder.check_resumable()
        config = folder.load_config()
    else:
        config = load_config(args.config) if args.config else load_packaged_config(DEFAULT_CONFIG)
        folder = None
    if changes:
        config = with_overrides(config, **changes)

    from ccgym.train.validation import check_config

    if config.algorithm.name == "ppo":
        from ccgym.train.ppo import init_policy, train

        init_policy(config)  # a missing or mismatched init_from fails before the run folder
    else:
        from ccgym.train.dagger import train

    check_config(config)  # before a run folder exists: a bad config leaves nothing behind
    if folder is None:
        folder = RunFolder.create(Path(args.out), config.run.name, config.run.seed)
        folder.write_config(config)
    elif changes:  # a resumed run records its new target (--iterations, --workers)
        folder.write_config(config)
    print(f"run folder: {folder.path}")

    progress = not args.no_progress
    try:
        state = train(config, folder.path, resume=bool(args.resume),
                      extend=args.iterations is not None, progress=progress)
    except KeyboardInterrupt:
        print(f"interrupted; continue with: ccgym train --resume {folder.path}", file=sys.stderr)
        raise
    best_iteration = state.early_stopping.best_iteration
    best = next((h for h in state.history if int(h["iteration"]) == best_iteration), None)
    if best is not None:
        agreement = (f", held-out expert agreement {best['agreement']:.3f}"
                     if "agreement" in best else "")
        print(f"best policy: {folder.policy} (iteration {best_iteration}, "
              f"validation score {best['score']:.3f}{agreement})")
    if config.eval.leaderboard and not args.no_leaderboard:
        text = leaderboard(config, folder, progress)
        print(text, end="")
        atomic_write_text(folder.leaderboard, text)
    return 0
