"""Argument types shared by every verb: each flag's value is checked when the command line is
parsed, before any work, and a bad one is a one-line error naming the flag and what is valid.

Use them as argparse `type=`: `parser.add_argument("--seed", type=flags.seed, default=1)`.
An argparse type raises ArgumentTypeError; the CLI prints "ccgym VERB: error: argument --seed:
..." and exits with status 2.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from pathlib import Path

from ccgym import files, folders

# Seeds reach the C++ core as unsigned 64-bit integers, and a run's seeds are seed..seed+runs-1:
# 32 bits leave room for that and are what a person types.
MAX_SEED = 2**32 - 1
# The longest run a verb accepts: an hour of a simulated or real link. Longer runs are rarely
# meant (a typo in units), and would take long enough to look like a hang.
MAX_DURATION_S = 3600.0
# Runs (seeds) of one scheme on one link: beyond 100 a mean's error no longer shrinks in a way
# a leaderboard shows, and a typo (--runs 1000000) would run for days.
MAX_RUNS = 100
# Search trials and generated traces: larger counts are typos or jobs for a script.
MAX_TRIALS = 2000
MAX_TRACES = 10000


def seed(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed is an integer in 0..{MAX_SEED}, got {text}")
    return value


def count(minimum: int = 1, maximum: int | None = None):
    """An integer in [minimum, maximum]."""
    def parse(text: str) -> int:
        value = _integer(text)
        if value < minimum or (maximum is not None and value > maximum):
            valid = f"at least {minimum}" if maximum is None else f"in {minimum}..{maximum}"
            raise argparse.ArgumentTypeError(f"must be an integer {valid}, got {text}")
        return value
    return parse


def duration_s(text: str) -> float:
    """A run length in seconds: finite, > 0 and at most MAX_DURATION_S."""
    value = _number(text)
    if not 0 < value <= MAX_DURATION_S:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds in (0, {MAX_DURATION_S:g}], got {text}")
    return value


def nonnegative_s(text: str) -> float:
    """Seconds that may be 0 (an interval, 'until Ctrl-C'), at most MAX_DURATION_S."""
    value = _number(text)
    if not 0 <= value <= MAX_DURATION_S:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds in [0, {MAX_DURATION_S:g}], got {text}")
    return value


def output(suffixes: Sequence[str] = (), stdout: bool = True, what: str = ""):
    """A file to write, checked before any work (ccgym.files.check_output): '-' is standard
    output where `stdout` (text and JSON), a pipe or a device is written in place, a symlink
    followed. With `suffixes`, the name must end in one of them: the file's format (`what`) is
    fixed, and a name that says another would mislead whoever opens it."""
    def parse(text: str) -> Path:
        if text != files.STDOUT:
            text = os.path.expanduser(text)
        problem = files.check_output(text, stdout)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        name = Path(text).name.lower()
        if suffixes and text != files.STDOUT and not files.writes_in_place(text) \
                and not name.endswith(tuple(suffixes)):
            raise argparse.ArgumentTypeError(
                f"{text}: this output is {what or 'a file'}; name it {' or '.join(suffixes)}")
        return Path(text)
    parse.writes_output = True  # type: ignore[attr-defined]  # see one_standard_output
    return parse


output_file = output()
output_file.__doc__ = "A text or JSON file to write (--json OUT), '-' for standard output."


def one_standard_output(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """Why the parsed outputs cannot be written (two of them given '-': their contents would
    be one stream no reader could split), or None."""
    given = [flag for dest, flag in _output_flags(parser).items()
             if files.is_stdout(getattr(args, dest, None))]
    if len(given) > 1:
        return (f"{' and '.join(given)} all go to standard output ('-'), where they would run "
                "together; give a file to all but one")
    return None


def _output_flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """{dest: flag} of every output flag (output()'s type) of a parser and its sub-parsers."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.update(_output_flags(sub))
        elif getattr(action.type, "writes_output", False) and action.option_strings:
            found[action.dest] = action.option_strings[0]
    return found


def output_folder(text: str) -> Path:
    """A folder that a command adds new folders to (`ccgym train --out`, its run folders): an
    existing folder, or a new one, judged by ccgym.folders.place_problem."""
    path = os.path.expanduser(text)
    problem = folders.place_problem(path, replaced=False)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(path)


def written_folder(text: str) -> Path:
    """A folder the command writes (--plots, --logs): what can be judged before --force is
    known; check_written_folders judges the rest."""
    path = os.path.expanduser(text)
    problem = folders.folder_problem(path, force=True)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return Path(path)


WRITTEN_FOLDERS = "written_folders"  # the parsed namespace's {dest: flag} of such folders


def add_written_folder(parser: argparse.ArgumentParser, *names: str, help: str) -> None:
    """A flag naming a folder the command writes, under ccgym.folders' one rule for output
    folders (a folder holding files ccgym did not write is refused), and --force, once per
    parser, to write into such a folder anyway."""
    action = parser.add_argument(*names, metavar="DIR", type=written_folder, help=help)
    declared = dict(parser.get_default(WRITTEN_FOLDERS) or {})
    declared[action.dest] = action.option_strings[-1]
    parser.set_defaults(**{WRITTEN_FOLDERS: declared})
    if "--force" not in parser._option_string_actions:
        parser.add_argument("--force", action="store_true",
                            help="write into a folder that holds files ccgym did not write "
                                 "there: files of the names ccgym writes are replaced, every "
                                 "other file is kept")


def check_written_folders(args: argparse.Namespace) -> str | None:
    """Why one of the parsed folder flags cannot be written (before any work), or None."""
    for dest, flag in (getattr(args, WRITTEN_FOLDERS, None) or {}).items():
        value = getattr(args, dest, None)
        if value is not None:
            problem = folders.folder_problem(value, getattr(args, "force", False))
            if problem:
                return f"argument {flag}: {problem}"
    return None


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def add_row_outputs(parser: argparse.ArgumentParser) -> None:
    """--json and --plots of the verbs that print leaderboard rows (eval, run)."""
    parser.add_argument("--json", metavar="OUT", type=output_file,
                        help="write the rows as JSON (a list of objects); '-': standard output "
                             "(the table then goes to standard error)")
    add_written_folder(parser, "--plots",
                       help="write plots and their index.html into DIR, replacing what an "
                            "earlier command of ccgym wrote there (a folder holding other "
                            "files is refused unless --force)")
