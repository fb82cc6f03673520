"""`ccgym VERB ...`: one console script; each verb's code lives in its folder.

A verb module has `add_arguments(parser)` and `run(args) -> int`, and is imported
only when its verb runs (or shows its --help), so each verb pays for its own imports only:
`ccgym links` does not pay for torch. What else stays quick is listed in pyproject.toml, beside
the import-linter contract.

How a command ends is decided here, once for every verb:
- a UserError (bad input: a flag, a file, a spec) or a bad flag: one line
  "ccgym VERB: error: ..." on stderr, exit status 2;
- Ctrl-C (or SIGTERM where a verb maps it): "interrupted", exit status 130, at any moment:
  while modules are imported and the command line parsed (ccgym/console.py), and while the verb
  runs (KeyboardInterrupt, so that its cleanup runs);
- the reader of standard output (or of an output pipe) gone early (`ccgym ... | head -1`):
  nothing said, and nothing else changes: what is left for it goes nowhere, the command
  finishes its work (its files included) and exits with its own status, whatever the timing;
- anything else is a bug in ccgym: one line saying so, the traceback written to a file
  (printed instead with --debug), exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ccgym import files, flags
from ccgym.errors import UserError
from ccgym.files import cache_root
from ccgym.interrupts import (INTERRUPTED_STATUS, exit_status, interrupt_outside_imports,
                              quit_interrupted)

DEBUG_ENV = "CCGYM_DEBUG"  # CCGYM_DEBUG=1: as --debug, for scripts and tests
SIGPIPE_STATUS = 128 + 13  # what a shell reports for a process killed by SIGPIPE

# verb -> (module, one-line help)
VERBS = {
    "links": ("ccgym.emulators.cli_links", "list link sets, show a link's statistics, generate traces"),
    "eval": ("ccgym.analysis.cli_eval", "score schemes on links: the contest's leaderboard"),
    "schemes": ("ccgym.policies.cli_schemes",
                "list the congestion-control schemes, their parameters, defaults and ranges"),
    "policies": ("ccgym.policies.cli_policies",
                 "list the reference policies ccgym ships (lstm:generalist, ...) and their figures"),
    "suite": ("ccgym.analysis.cli_suite",
              "every scheme and policy on every evaluation group: the suite's leaderboard"),
    "search": ("ccgym.analysis.cli_search",
               "find the links where a scheme falls furthest behind the best classic baseline"),
    "oracle": ("ccgym.oracle.cli_oracle", "the ideal window of each link and its score"),
    "train": ("ccgym.train.cli_train", "train an LSTM policy (DAgger or PPO) from a TOML config"),
    "ensemble": ("ccgym.policies.cli_ensemble",
                 "average trained policies (e.g. one config's seeds) into one policy file"),
    "export": ("ccgym.deploy.cli_export", "export a trained policy to ONNX"),
    "run": ("ccgym.deploy.cli_run", "run a scheme over a real-time emulated link or a real path"),
    "receive": ("ccgym.deploy.cli_receive", "run the UDP receiver for a real path"),
    "shell": ("ccgym.deploy.cli_shell", "a shell whose traffic crosses an emulated link (TUN + namespace)"),
    "calibrate": ("ccgym.measure.cli_calibrate",
                  "fit a link to measured runs of several schemes (Pantheon's calibration)"),
    "report": ("ccgym.analysis.cli_report",
               "one HTML page of eval/run/calibrate results and training runs"),
}


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad command line is one line (not the usage block) that points to --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def verb_module(verb: str) -> Any:
    """The module of a verb. Every verb's module ships with ccgym: one that is missing is a
    broken install or a typo in VERBS, never a verb to leave out quietly."""
    module_name = VERBS[verb][0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            raise ImportError(f"ccgym {verb}: its module {module_name} is missing "
                              f"(a broken install: run scripts/setup.sh)") from e
        raise


def build_parser(verb: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, Any]]:
    """Every verb listed with its help line; only `verb` gets its module's flags (and only its
    module is imported)."""
    parser = OneLineParser(
        prog="ccgym",
        description="A training gym for machine-learned congestion control.",
    )
    parser.add_argument("--version", action="version", version=f"ccgym {_version()}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=OneLineParser)
    modules = {}
    for name, (_, help_text) in VERBS.items():
        if name != verb:
            sub.add_parser(name, help=help_text)
            continue
        module = verb_module(name)
        verb_parser = sub.add_parser(name, help=help_text, description=module.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(verb_parser)
        verb_parser.add_argument("--debug", action="store_true",
                                 help="on an internal error, print its traceback")
        modules[name] = module
    return parser, modules


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ccgym")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    if threading.current_thread() is not threading.main_thread():  # no signal handlers there
        return _main(sys.argv[1:] if argv is None else argv)
    # Until the verb starts its work (imports, parsing) Ctrl-C has nothing to clean up.
    previous = signal.signal(signal.SIGINT, quit_interrupted)
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    finally:
        signal.signal(signal.SIGINT, previous)


class _ReaderMayLeave:
    """sys.stdout while a command runs: once its reader has gone, later text goes to
    /dev/null instead of raising BrokenPipeError midway through the work."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        # The real standard output too, so that Python's last flush at exit finds no pipe.
        with open(os.devnull, "wb") as null, contextlib.suppress(OSError, ValueError):
            os.dup2(null.fileno(), self._stream.fileno())
        self._stream = open(os.devnull, "w")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _main(argv: list[str]) -> int:
    stdout = sys.stdout
    sys.stdout = _ReaderMayLeave(stdout)
    try:
        return _parse_and_run(argv)
    finally:
        sys.stdout = stdout


def _parse_and_run(argv: list[str]) -> int:
    parser, modules = build_parser(argv[0] if argv and argv[0] in VERBS else None)
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or a bad flag (already reported in one line)
        return e.code if isinstance(e.code, int) else 2
    if args.verb is None:
        parser.print_help()
        return 2
    problem = flags.check_written_folders(args) or flags.one_standard_output(parser, args)
    if problem:  # refused before any work, as a bad flag is
        print(f"ccgym {args.verb}: error: {problem}", file=sys.stderr)
        return 2
    from ccgym.files import remove_stale_temporaries

    remove_stale_temporaries()  # what a killed ccgym (SIGKILL, a crash) left in the temp folder
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupt_outside_imports)  # the verb's cleanup runs
    try:
        status = int(modules[args.verb].run(args) or 0)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is seen below
        return status
    except BrokenPipeError:
        return _reader_gone()
    except UserError as e:
        print(f"ccgym {args.verb}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"ccgym {args.verb}: interrupted", file=sys.stderr)
        return INTERRUPTED_STATUS
    except OSError as e:
        if e.errno != errno.ENAMETOOLONG:
            return _internal_error(args, e)
        # A name too long for the file system, wherever the user gave it (a trace path, a
        # policy): their mistake, whichever check did not catch it first.
        print(f"ccgym {args.verb}: error: {files.shortened(str(e.filename or ''))}: file name "
              "too long", file=sys.stderr)
        return 2
    except Exception as e:  # the last resort: every other failure is a bug
        return _internal_error(args, e)


def _internal_error(args: argparse.Namespace, e: Exception) -> int:
    """A failure no check foresaw: one line, the traceback in a file (raised with --debug)."""
    if args.debug or os.environ.get(DEBUG_ENV):
        raise e
    log = _write_traceback(args.verb)
    where = f"the traceback is in {log}" if log else "--debug prints the traceback"
    if isinstance(e, OSError) and e.strerror:
        # The system refused something no check foresaw (a full disk, a permission).
        what = f"{e.filename}: {e.strerror}" if e.filename else e.strerror
        print(f"ccgym {args.verb}: error: {what}; {where}", file=sys.stderr)
    else:
        print(f"ccgym {args.verb}: internal error (a bug in ccgym, not in your input): "
              f"{type(e).__name__}: {_one_line(str(e))}; {where}", file=sys.stderr)
    return 1


def _reader_gone() -> int:
    """A pipe's reader gone where neither _ReaderMayLeave nor ccgym.files' outputs could carry
    on (a pipe a verb writes by itself): the work stopped there, so end quietly with the status
    a Unix tool killed by SIGPIPE has. Standard output is pointed at /dev/null so that
    Python's final flush does not complain either."""
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), sys.stdout.fileno())
    return SIGPIPE_STATUS


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _write_traceback(verb: str) -> Path | None:
    """The current exception's traceback in $CCGYM_CACHE/crashes/, for a bug report."""
    try:
        folder = cache_root() / "crashes"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{verb}-{os.getpid()}.txt"
        path.write_text(f"ccgym {' '.join(sys.argv[1:])}\n\n{traceback.format_exc()}")
        return path
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(exit_status(main()))
