"""A reader of standard output that leaves early (`ccgym ... | head -1`): one rule for every
verb, whatever the timing. Nothing is said, the command finishes its work (its files too)
and exits with its own status. Here the reader is gone before the command starts, so that
every write to standard output meets a closed pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LINK = "rate_mbps=12,delay_ms=20"
TIMEOUT_S = 600


def run_with_reader_gone(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "ccgym.cli", *args], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=TIMEOUT_S, cwd=cwd)
    finally:
        os.close(write_end)


VERBS = [
    ["--help"], ["eval", "--help"], ["schemes"], ["schemes", "--json", "-"], ["links", "list"],
    ["links", "show", LINK, "--json", "-"], ["train", "--describe-config"],
    ["oracle", "--link", LINK, "--duration-s", "1", "--no-progress"],
]


@pytest.mark.parametrize("args", VERBS)
def test_every_verb_ends_as_it_would_have(args: list[str], tmp_path: Path) -> None:
    done = run_with_reader_gone(args, tmp_path)
    assert done.returncode == 0, done.stderr
    # Nothing said about it (a table for people still goes to standard error under '-').
    assert b"error" not in done.stderr and b"Traceback" not in done.stderr, done.stderr


def test_the_files_are_written_all_the_same(tmp_path: Path) -> None:
    done = run_with_reader_gone(["eval", "--link", LINK, "--schemes", "fixed:20",
                                 "--duration-s", "1", "--no-progress", "--json", "-",
                                 "--plots", "plots"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "plots" / "index.html").is_file()
