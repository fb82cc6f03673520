"""`ccgym VERB ...`: one console script; each verb's code lives in its folder.

A verb module has `add_arguments(parser)` and `run(args) -> int`, and is imported
only when its verb runs, so `ccgym links` does not pay for importing torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from ccgym.errors import UserError

# verb -> (module, one-line help)
VERBS = {
    "links": ("ccgym.emulators.cli_links", "list link sets, show a link's statistics, generate traces"),
    "eval": ("ccgym.analysis.cli_eval", "score schemes on links: the contest's leaderboard"),
    "oracle": ("ccgym.oracle.cli_oracle", "the ideal window of each link and its score"),
    "train": ("ccgym.train.cli_train", "train an LSTM policy with DAgger from a TOML config"),
    "export": ("ccgym.deploy.cli_export", "export a trained policy to ONNX"),
    "run": ("ccgym.deploy.cli_run", "run a scheme over a real-time emulated link or a real path"),
    "receive": ("ccgym.deploy.cli_receive", "run the UDP receiver for a real path"),
    "shell": ("ccgym.deploy.cli_shell", "a shell whose traffic crosses an emulated link (TUN + namespace)"),
    "calibrate": ("ccgym.emulators.cli_calibrate", "fit a link spec to a measured run"),
    "report": ("ccgym.analysis.cli_report", "an HTML report of evaluation results"),
}


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    parser = argparse.ArgumentParser(
        prog="ccgym",
        description="A training gym for machine-learned congestion control.",
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    modules = {}
    for verb, (module_name, help_text) in VERBS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name == module_name:  # verb not built yet: leave it out of --help
                continue
            raise
        verb_parser = sub.add_parser(verb, help=help_text, description=module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(verb_parser)
        modules[verb] = module
    return parser, modules


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser, modules = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help()
        return 2
    try:
        return int(modules[args.verb].run(args) or 0)
    except UserError as e:
        print(f"ccgym {args.verb}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ccgym {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
