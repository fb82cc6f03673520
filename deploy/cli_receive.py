"""Run the UDP receiver on the far end of a real path, for `ccgym run --remote HOST:PORT`.

It acknowledges every ccgym datagram (one ACK each, to its source) and logs its
arrival. It binds to loopback unless told otherwise: on a far host, give the
address the sender can reach (or 0.0.0.0). It runs until Ctrl-C or --duration-s.
Malformed datagrams are counted and ignored. Example:

  ccgym receive --port 9000 --bind 0.0.0.0 --log receiver.tsv
"""

from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, required=True, help="UDP port to listen on")
    parser.add_argument("--bind", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this host only)")
    parser.add_argument("--log", metavar="FILE", help="arrival log (TSV, as analysis/ reads it)")
    parser.add_argument("--duration-s", type=float, default=0.0,
                        help="stop after this long; 0 runs until Ctrl-C (default)")


def run(args: argparse.Namespace) -> int:
    from ccgym.deploy.harness import find_program
    from ccgym.errors import UserError

    if not 0 < args.port < 65536:
        raise UserError("--port must be between 1 and 65535")
    if args.duration_s < 0:
        raise UserError("--duration-s must not be negative")
    argv = [find_program("ccgym-receiver"), "--port", str(args.port), "--bind", args.bind,
            "--duration-s", f"{args.duration_s:g}"]
    if args.log:
        argv += ["--log", args.log]
    # The receiver replaces this process: signals reach it directly, nothing is left behind,
    # and its exit status (2 for a port in use) is ours.
    os.execv(argv[0], argv)
    return 1  # not reached
