"""Regenerates docs/results.md's suite tables from `ccgym suite`, so that every figure in them
is reproducible with one command.

Runs the suite with the flags given (any `ccgym suite` flag: --groups, --schemes, --policies,
--duration-s, --runs, --seed), or reads a suite JSON written before (--from-json), and replaces
the text between the markers `<!-- suite:begin -->` and `<!-- suite:end -->` in the document
with one Markdown table per group, captioned with the command that measured it, its date,
wall time and the machine's load. Prints one JSON object (what it wrote) to stdout.

  python benchmarks/results_tables.py                               # the whole suite
  python benchmarks/results_tables.py --groups pantheon-calibrated --duration-s 10
  python benchmarks/results_tables.py --policies lstm:runs/quick__1__20260101-120000
  python benchmarks/results_tables.py --from-json suite.json --doc docs/results.md
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

from ccgym.analysis.suite import check_document, format_tables, render_markdown, span
from ccgym.cli import main as ccgym_main
from ccgym.errors import UserError
from ccgym.files import atomic_write_text

BEGIN = "<!-- suite:begin -->"
END = "<!-- suite:end -->"
DEFAULT_DOC = Path(__file__).resolve().parents[1] / "docs" / "results.md"
SCRIPT = ("python", "benchmarks/results_tables.py")
CAPTION_WIDTH = 95  # as docs/results.md's prose


def caption(doc: dict[str, Any]) -> str:
    """Says how the tables were measured and how to measure them again."""
    options = doc["options"]
    command = options["command"]
    rerun = shlex.join([*SCRIPT, *shlex.split(command)[2:]])
    runs = f"{options['runs']} run{'s' if options['runs'] > 1 else ''} per scheme and link"
    length = (f"{options['duration_s']:g} s runs" if options["duration_s"]
              else "each trace once, other links 30 s")
    text = (f"Measured {doc['measured']} with `{command}` ({runs}, seed {options['seed']}, "
            f"{length}): {span(doc['wall_s'])} of wall time on {doc['cpus']} cores at a load "
            f"average of {doc['load_average']:.1f}. Regenerate with `{rerun}`. Per group: each "
            "scheme's mean score over the group's links, its mean gap to the omniscient "
            "bound's score, and its wins (links where it scored best among the baselines and "
            "policies; the oracle knows each link's ideal window and does not compete).")
    return textwrap.fill(text, width=CAPTION_WIDTH, break_on_hyphens=False,
                         break_long_words=False)


def markdown(doc: dict[str, Any]) -> str:
    tables = format_tables(doc, render_markdown).rstrip("\n")
    # Each group's note line becomes a bold heading line above its table.
    blocks = []
    for block in tables.split("\n\n"):
        first, _, rest = block.partition("\n")
        blocks.append(f"**{first}**\n\n{rest}" if rest else f"*{first}*")
    return "\n\n".join([caption(doc), *blocks])


def replace_between_markers(text: str, body: str, where: Path) -> str:
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"{where}: needs one {BEGIN} line and one {END} line after it")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{body}\n{END}{tail}"


def suite_json(suite_flags: list[str], out: Path) -> Path:
    code = ccgym_main(["suite", *suite_flags, "--json", str(out)])
    if code != 0:
        sys.exit(code)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--from-json", type=Path, help="a `ccgym suite --json` file to use")
    parser.add_argument("--doc", type=Path, default=DEFAULT_DOC, help="the Markdown to update")
    parser.add_argument("--json", type=Path, help="keep the suite's JSON here (for ccgym report)")
    args, suite_flags = parser.parse_known_args()
    if args.from_json and (suite_flags or args.json):
        sys.exit(f"--from-json reads a finished suite: drop {' '.join(suite_flags) or '--json'}")
    with tempfile.TemporaryDirectory(prefix="ccgym-results-") as tmp:
        path = args.from_json or suite_json(suite_flags, args.json or Path(tmp) / "suite.json")
        try:
            doc = check_document(path, json.loads(path.read_text()))
        except (UserError, OSError, json.JSONDecodeError) as e:
            sys.exit(f"{path}: {e}" if not isinstance(e, UserError) else str(e))
    text = replace_between_markers(args.doc.read_text(), markdown(doc), args.doc)
    atomic_write_text(args.doc, text)
    print(json.dumps({"doc": str(args.doc), "groups": list(doc["summary"]),
                      "skipped": [s["group"] for s in doc["skipped"]], "wall_s": doc["wall_s"],
                      "command": doc["options"]["command"]}))


if __name__ == "__main__":
    main()
