"""List every congestion-control scheme ccgym runs, with its parameters.

Each scheme is given to `ccgym eval --schemes`, `ccgym run` and the C++ sender as
`name`, `name:value` (its first parameter) or `name:key=value:key=value`; a value outside
its range is refused with one line naming the scheme, the parameter and the range.
`external` is the learned flow's slot (its window is set from outside), listed but no
baseline. Examples:

  ccgym schemes
  ccgym schemes --json schemes.json
  ccgym schemes --json - | jq '.[].name'
"""

from __future__ import annotations

import argparse
import dataclasses

from ccgym import flags
from ccgym.files import STDOUT, atomic_write_json, human_stream
from ccgym.policies.schemes import Scheme, scheme_catalog


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", metavar="OUT", type=flags.output_file, nargs="?",
                        const=STDOUT,
                        help="also write the catalog as JSON to OUT, for scripts ('-' or no "
                             "OUT: standard output, the list then going to standard error): "
                             "a list of schemes (name, summary, params: name, default, help, "
                             "range, min, max, min_open, max_open; null min or max: unbounded)")


def describe(scheme: Scheme) -> list[str]:
    """A scheme's lines: its name and summary, then one line per parameter."""
    lines = [f"{scheme.name}: {scheme.summary}"]
    width = max((len(p.name) for p in scheme.params), default=0)
    for p in scheme.params:
        lines.append(f"    {p.name:<{width}}  default {p.default:g}, {p.range}: {p.help}")
    return lines


def run(args: argparse.Namespace) -> int:
    catalog = scheme_catalog()
    out = human_stream(args.json)
    for scheme in catalog:
        print("\n".join(describe(scheme)), file=out)
    if args.json is not None:
        atomic_write_json(args.json, [dataclasses.asdict(s) for s in catalog])
    return 0
