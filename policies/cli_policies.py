"""List the reference policies ccgym ships, each with one line: its name, what it is for and
the headline figure of its model card.

Every verb that takes a policy takes these by name: `lstm:generalist` (the one to deploy),
`lstm:cellular`, `lstm:quick`, with no training first. A policy whose catalog entry gives
options runs with them unless others are given (the generalist in its competitive mode;
`lstm:generalist:compete=none` runs it without). A name whose files are not there yet
says so. `ccgym policies NAME` prints NAME's model card (how it was made: config, seeds,
commit, machine and library versions; its figures with the commands that made them).
Examples:

  ccgym policies
  ccgym policies generalist
  ccgym policies --json > policies.json
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ccgym.policies import packaged_policies


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="print this packaged policy's model card instead")
    parser.add_argument("--json", action="store_true",
                        help="print JSON instead, for scripts: a list of policies (name, summary, "
                             "config, seeds, options, present, missing, pt, onnx, card: the "
                             "files' paths, headline); with NAME, its card as JSON")


def entry(policy: packaged_policies.PackagedPolicy) -> dict[str, Any]:
    missing = policy.missing()
    return {"name": policy.name, "summary": policy.summary, "config": policy.config,
            "seeds": list(policy.seeds), "options": policy.options,
            "present": not missing, "missing": missing,
            "pt": str(policy.pt), "onnx": str(policy.onnx), "card": str(policy.card),
            "headline": None if missing else packaged_policies.headline(policy.read_card())}


def run(args: argparse.Namespace) -> int:
    if args.name is not None:
        policy = packaged_policies.find(args.name, "")
        policy.require("")
        if args.json:
            print(json.dumps(policy.read_card(), indent=2))
        else:
            print(policy.card.read_text(), end="")
        return 0
    entries = [entry(p) for p in packaged_policies.catalog()]
    if args.json:
        print(json.dumps(entries, indent=2))
        return 0
    width = max(len(e["name"]) for e in entries)
    for e in entries:
        figure = e["headline"] or f"not packaged yet ({packaged_policies.MAKER} makes it)"
        runs_as = f" (runs as lstm:{e['name']}:{e['options']})" if e["options"] else ""
        print(f"lstm:{e['name']:<{width}}  {e['summary']}; {figure}{runs_as}")
    return 0
