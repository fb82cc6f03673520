"""Every example in every verb's --help is a command line ccgym accepts as written, and the
quick ones (those that need no earlier output and no root) run and succeed."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ccgym import cli
from ccgym.emulators.links import data_dir
from ccgym.policies.policy_path import POLICY_FILE, newest_run

EXAMPLE = re.compile(r"^\s+(?:sudo )?(ccgym \S.*)$")
# Examples that run in seconds from nothing but the packaged configs and the shared data.
QUICK = {"links list", "links show", "links generate", "links sample", "oracle --link"}


def _examples() -> list[tuple[str, str]]:
    """(verb, command line) of each example in the verbs' module docstrings (their --help):
    a trailing backslash continues a line; a `#` comment or a two-space-separated
    description ends it."""
    found = []
    for verb, (module, _) in cli.VERBS.items():
        lines = (importlib.import_module(module).__doc__ or "").splitlines()
        i = 0
        while i < len(lines):
            match = EXAMPLE.match(lines[i])
            i += 1
            if not match:
                continue
            text = match.group(1)
            while text.endswith("\\") and i < len(lines):
                text = text[:-1] + " " + lines[i].strip()
                i += 1
            text = re.split(r"\s+#|\s{3,}", text)[0].strip()
            # The shell's part (a pipe, a redirection) is not ccgym's to parse.
            text = re.split(r"\s+(?:\||\d?>|<)\s", text)[0].strip()
            found.append((verb, text))
    return found


EXAMPLES = _examples()


def test_every_verb_has_examples() -> None:
    assert {verb for verb, _ in EXAMPLES} == set(cli.VERBS)


@pytest.mark.parametrize("verb, text", EXAMPLES, ids=[t for _, t in EXAMPLES])
def test_an_example_parses(verb: str, text: str, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # outputs like --json out.json are checked where they go
    argv = shlex.split(text)[1:]
    parser, _ = cli.build_parser(argv[0])  # an example may show another verb
    args = parser.parse_args(argv)  # a bad example exits (SystemExit) here
    assert args.verb == argv[0]


def _is_quick(text: str) -> bool:
    words = text.split()[1:]
    return words == ["links"] or " ".join(words[:2]) in QUICK


@pytest.mark.parametrize("text", [t for _, t in EXAMPLES if _is_quick(t)])
def test_a_quick_example_runs_as_written(text: str, tmp_path: Path) -> None:
    if "verizon" in text and data_dir() is None:
        pytest.skip("needs the shared recorded data ($CCGYM_DATA)")
    done = subprocess.run([sys.executable, "-m", "ccgym.cli", *shlex.split(text)[1:]],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_runs_name_is_the_newest_run_of_that_config(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("quick__1__20250101-120000", "quick__2__20250301-080000",
                 "quick__3__20250401-000000", "quicker__1__20260101-000000"):
        (runs / name).mkdir(parents=True)
    for name in ("quick__1__20250101-120000", "quick__2__20250301-080000"):
        (runs / name / POLICY_FILE).write_bytes(b"weights")
    # The newest run with a policy; quick__3 has none yet and quicker is another config.
    assert newest_run(runs / "quick") == runs / "quick__2__20250301-080000"
    assert newest_run(runs / "nothing") is None
