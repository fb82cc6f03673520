"""A shell whose traffic crosses an emulated link in real time, as mahimahi's mm-link.

COMMAND (default: your $SHELL) runs in a new network namespace. Every IP packet it
sends out goes through the link's data direction (rate, queue, loss, delay), every
packet coming back through its ACK direction, in the same link core as the
simulator and `ccgym run`; bytes are counted by packet size. Inside, the outside
is reached at the address in $CCGYM_SHELL_OUTSIDE (also $MAHIMAHI_BASE); nothing is
routed beyond this machine. The namespace, its devices, addresses and whatever
still runs inside are removed when COMMAND exits, on an error, Ctrl-C or SIGTERM.
Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN). Exits with COMMAND's status.

--log DIR keeps the per-packet log (DIR/shell.tsv: direction, flow, size, when each
packet entered and left the link, drops) and prints each outgoing flow's figures.
Examples:

  sudo ccgym shell --link rate_mbps=12,delay_ms=20,queue=droptail:packets=100
  sudo ccgym shell --link trace=traces/cellular/Verizon-LTE-short.up,delay_ms=20 --log out -- \\
      sh -c 'iperf3 -c $CCGYM_SHELL_OUTSIDE -t 10'
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ccgym import flags
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.deploy.harness import _die_with_parent
from ccgym.deploy.shell import link_shell
from ccgym.emulators import _core
from ccgym.emulators.link_names import resolve_link
from ccgym.envs.scoring import aggregate
from ccgym.errors import UserError
from ccgym.files import temporary_folder
from ccgym.folders import output_folder
from ccgym.interrupts import interrupt_after, sigterm_as_interrupt
from ccgym.measure.logs import packet_log_from_shell, read_tsv_log, shell_flow_names
from ccgym.measure.metrics import omniscient, summarize

LINK_CHECK_S = 0.5
LOG_FILE = "shell.tsv"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--link", metavar="SPEC", required=True,
                        help="the link, e.g. rate_mbps=12,delay_ms=20 (data direction: out of the shell)")
    flags.add_written_folder(parser, "--log",
                             help="write the per-packet log to DIR/shell.tsv and print each "
                                  "flow's figures")
    parser.add_argument("--seed", type=flags.seed, default=1,
                        help="seed of the link's randomness: loss, Poisson deliveries (default 1)")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND ...",
                        help="what to run inside (default: $SHELL)")


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        command = [os.environ.get("SHELL") or "/bin/sh"]
    link = resolve_link(args.link)
    with sigterm_as_interrupt(), _work_folder(args.log, args.force) as workdir:
        log_path = workdir / LOG_FILE if args.log else None
        with link_shell(link.spec, args.seed, log_path, workdir) as shell:
            status = _run_inside(shell, command)
    if args.log is not None:
        _print_flows(args.log / LOG_FILE, link, args.seed)
    return status


@contextlib.contextmanager
def _work_folder(log: Path | None, force: bool) -> Iterator[Path]:
    """--log DIR (by ccgym.folders' rule for output folders, kept also when the run fails), else
    a temporary folder for the link's own files."""
    if log is None:
        with temporary_folder("shell") as tmp:
            yield Path(tmp)
    else:
        with output_folder(log, force, keep_on_error=True) as path:
            yield path


def _run_inside(shell, command: list[str]) -> int:
    """COMMAND inside the shell, on this terminal. With a terminal, Ctrl-C belongs to COMMAND
    (an interactive shell survives it, as in mm-link); without one it ends the run."""
    try:
        child = subprocess.Popen(shell.enter(command), env=shell.environment(),
                                 preexec_fn=_die_with_parent)
    except OSError as e:
        raise UserError(f"cannot run {command[0]}: {e.strerror}") from e
    # A signal that ends the run kills COMMAND; the interrupt is raised once it is reaped,
    # never inside Popen.wait (ccgym.interrupts.interrupt_after): `ccgym shell` hung so in CI.
    interactive = sys.stdin.isatty()
    ending = [signal.SIGTERM] if interactive else [signal.SIGTERM, signal.SIGINT]
    previous_sigint = signal.signal(signal.SIGINT, signal.SIG_IGN) if interactive else None
    try:
        with interrupt_after(child.kill, ending):
            try:
                # Watches the link too: if it died, COMMAND would be left with no way out.
                while True:
                    try:
                        status = child.wait(timeout=LINK_CHECK_S)
                        break
                    except subprocess.TimeoutExpired:
                        if shell.link.popen.poll() is not None:
                            raise shell.link.failure("stopped while COMMAND was running") from None
            finally:
                if child.poll() is None:
                    child.kill()
                    child.wait()
    finally:
        if previous_sigint is not None:
            signal.signal(signal.SIGINT, previous_sigint)
    return status if status >= 0 else 128 - status  # killed by a signal: as a shell says it


def _print_flows(log_path: Path, link, seed: int) -> None:
    """The traffic that left the shell, scored as any run is, from the link's first packet to
    its last delivery: the omniscient bound over that span, then all flows and each flow."""
    tsv = read_tsv_log(log_path)
    log = packet_log_from_shell(tsv)
    print(f"per-packet log: {log_path}")
    if not np.isfinite(log.arrival_ms).any():
        print("no packet left the shell through the link")
        return
    duration_ms = float(np.nanmax(log.arrival_ms)) + 1.0
    opportunities = _core.opportunities(link.spec, duration_ms, seed)
    delay = _core.parse_link_spec(link.spec).delay_ms
    rows = [aggregate(link, "omniscient", [omniscient(opportunities, duration_ms, delay)]),
            aggregate(link, f"leaving the shell ({duration_ms / 1000:.1f} s)",
                      [summarize(log, opportunities, duration_ms)])]
    print(format_leaderboard(rows), end="")
    for flow, name in sorted(shell_flow_names(tsv).items()):
        print(f"  flow {flow}: {name}")
