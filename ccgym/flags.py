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
from pathlib import Path

# Seeds reach the C++ core as unsigned 64-bit integers, and a run's seeds are seed..seed+runs-1:
# 32 bits leave room for that and are what a person types.
MAX_SEED = 2**32 - 1
# The longest run a verb accepts: an hour of a simulated or real link. Longer runs are rarely
# meant (a typo in units), and would take long enough to look like a hang.
MAX_DURATION_S = 3600.0


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


def output_file(text: str) -> Path:
    """A file to write (--json OUT): not a folder, in a folder that exists."""
    path = Path(text).expanduser()
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    parent = path.resolve().parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"folder {path.parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise argparse.ArgumentTypeError(f"{text} is not writable")
    return path


def output_folder(text: str) -> Path:
    """A folder to write into (--plots DIR): an existing folder, or a new one whose nearest
    existing ancestor is a writable folder (no file in the way)."""
    path = Path(text).expanduser()
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path")
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    existing = path.resolve()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(f"{existing} is a file, so {text} cannot be a folder")
    if not os.access(existing, os.W_OK):
        raise argparse.ArgumentTypeError(f"{existing} is not writable")
    return path


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
