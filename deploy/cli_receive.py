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
import socket

from ccgym import flags
from ccgym.deploy.harness import find_program
from ccgym.errors import UserError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=flags.count(1, 65535), required=True,
                        help="UDP port to listen on")
    parser.add_argument("--bind", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1: this host only)")
    parser.add_argument("--log", metavar="FILE", type=flags.output(stdout=False, what="a log"),
                        help="arrival log (TSV, as analysis/ reads it)")
    parser.add_argument("--duration-s", type=flags.nonnegative_s, default=0.0,
                        help="stop after this long; 0 runs until Ctrl-C (default)")


def check_bind_address(address: str) -> None:
    """The address must be one of this host's (or 0.0.0.0): checked here, where the error can
    say so, rather than by the receiver after this process has become it."""
    try:
        family, _, _, _, where = socket.getaddrinfo(address, 0, 0, socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind(where)
    except socket.gaierror:
        raise UserError(f"--bind {address}: not an address of this host "
                        "(e.g. 0.0.0.0 or :: for every interface)") from None
    except OSError as e:
        raise UserError(f"--bind {address}: cannot listen there ({e.strerror}); give an address "
                        "of this host, or 0.0.0.0 for every interface") from None


def run(args: argparse.Namespace) -> int:
    check_bind_address(args.bind)
    argv = [find_program("ccgym-receiver"), "--port", str(args.port), "--bind", args.bind,
            "--duration-s", f"{args.duration_s:g}"]
    if args.log:
        argv += ["--log", str(args.log)]
    # The receiver replaces this process: signals reach it directly, nothing is left behind,
    # and its exit status (2 for a port in use) is ours.
    os.execv(argv[0], argv)
    return 1  # not reached
