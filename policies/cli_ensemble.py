"""Average trained policies into one: an ensemble that acts on the mean of their outputs.

Policies of one config trained at several seeds differ where their training left the choice
open; acting on their mean output (the mean log window change for the log_change head, the
mean logits for classes) averages those differences out. The ensemble is one LSTM holding every
member's units side by side (policies/lstm.py: ensemble), written as an ordinary policy.pt:
`ccgym eval --schemes lstm:FILE`, `ccgym export FILE` and `ccgym-sender` take it unchanged.
It costs the members' decision time together. Example:

  ccgym ensemble runs/cellular__* -o cellular.pt          # every seed of one config
"""

from __future__ import annotations

import argparse
import os

from ccgym import flags
from ccgym.errors import UserError
from ccgym.files import check_not_input
from ccgym.policies.policy_path import resolve_policy_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("policies", metavar="RUN_DIR_OR_PT", nargs="+",
                        help="run folders (their policy.pt) or policy .pt files, two or more")
    parser.add_argument("-o", "--output", metavar="OUT.pt", required=True,
                        type=flags.output((".pt",), stdout=False,
                                          what="a PyTorch policy file (`ccgym export` makes "
                                               "ONNX of it)"),
                        help="the ensemble's policy file to write (.pt; never one of the "
                             "members)")


def run(args: argparse.Namespace) -> int:
    from ccgym.policies.lstm import LstmPolicy, ensemble

    if len(args.policies) < 2:
        raise UserError("give two or more policies to average")
    members = []
    sources = [resolve_policy_path(argument, "") for argument in args.policies]
    for i, source in enumerate(sources):
        for argument, earlier in zip(args.policies, sources[:i]):
            if os.path.samefile(source, earlier):
                raise UserError(f"{args.policies[i]} and {argument} are one policy "
                                f"({source}): an ensemble of a policy with itself is that "
                                "policy, at twice the cost; give each member once")
    check_not_input(args.output, sources, "-o")
    for source in sources:
        try:
            members.append(LstmPolicy.load(source))
        except (ValueError, OSError) as e:
            raise UserError(f"cannot load the policy: {e}") from None
    try:
        policy = ensemble(members)
    except ValueError as e:
        raise UserError(str(e)) from None
    policy.save(args.output)
    print(f"wrote {args.output}: {len(members)} policies, hidden size {policy.hidden_size} "
          f"({' + '.join(str(m.hidden_size) for m in members)}), head {policy.head_kind}")
    return 0
