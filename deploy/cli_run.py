"""Run a scheme for real: the C++ sender over a real-time emulated link, or over a real path.

With --link, ccgym-receiver, ccgym-link (the link core on the wall clock) and
ccgym-sender run on loopback; the run is scored from their logs like a simulated
one, under the omniscient bound of the link's deliveries. --simulate adds the same
link and scheme in the simulator, for comparison.

With --remote HOST:PORT only the sender runs here, towards `ccgym receive` on the
far host. The two clocks are not synchronized, so one-way delays are RTT-based (the
smallest is taken as half the minimum RTT; queueing on the way out is exact), and
the path's capacity is unknown: no omniscient row, no utilization.

Schemes: every classic one (cubic, bbr, fixed:20, ...) and learned policies:
lstm:RUN_DIR (exported to ONNX for the run; lstm:runs/NAME is the newest run of config
NAME, e.g. runs/quick after `ccgym train`), lstm:FILE.pt, lstm:FILE.onnx, or a packaged
policy, lstm:generalist, lstm:cellular or lstm:quick (`ccgym policies`; its shipped ONNX runs).
A --link is a spec or a packaged link's name (`ccgym links list SET`); trace paths are
taken from the working folder, else from $CCGYM_DATA.
Kernel TCP (kernel:cubic, kernel:bbr, kernel:reno: what the kernel offers) runs as a
bulk transfer through the link shell (`ccgym shell`, needs root), scored from the
shell's log. --against SCHEME adds a second flow through the same bottleneck (a second
ccgym-sender through the relay, or with kernel:NAME the link shell), and the table gives
each flow's share and Jain's index; --simulate then adds the same pair in the simulator.
Every process ends with the run, also on Ctrl-C. Examples:

  ccgym run --link rate_mbps=12,delay_ms=20 --scheme cubic --duration-s 10
  ccgym run --link rate_mbps=12,delay_ms=20 --scheme lstm:generalist --simulate
  ccgym run --link trace=traces/cellular/Verizon-LTE-short.down,delay_ms=20 --duration-s 10 \\
      --scheme lstm:runs/quick --simulate --plots out/
  sudo ccgym run --link rate_mbps=24,delay_ms=20 --scheme lstm:policy.onnx --against kernel:cubic
  ccgym run --link verizon-lte-short --scheme bbr --duration-s 10
  ccgym run --remote 192.0.2.7:9000 --scheme bbr --json bbr.json
      # on the far host first: ccgym receive --port 9000 --bind 0.0.0.0 ([::1]:9000: IPv6)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ccgym import flags
from ccgym.analysis.coexist import flow_starts_ms, make_lineup, run_lineup
from ccgym.analysis.evaluate import run_scheme, write_outputs
from ccgym.analysis.leaderboard import format_leaderboard
from ccgym.deploy.harness import resolve_scheme, run_emulated, run_remote
from ccgym.deploy.shell import is_kernel_scheme, run_in_shell
from ccgym.emulators import _core
from ccgym.emulators.link_names import resolve_link
from ccgym.emulators.links import Link
from ccgym.envs.scoring import Run, aggregate, check_run_length
from ccgym.errors import UserError
from ccgym.files import human_stream, temporary_folder
from ccgym.folders import output_folder
from ccgym.interrupts import sigterm_as_interrupt
from ccgym.measure.metrics import omniscient, summarize

DEFAULT_DURATION_S = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--link", metavar="SPEC|NAME",
                       help="emulate this link in real time on loopback: a spec, e.g. "
                            "rate_mbps=12,delay_ms=20, or a packaged link's name")
    where.add_argument("--remote", metavar="HOST:PORT",
                       help="send to `ccgym receive` on another host over the real path")
    parser.add_argument("--scheme", required=True,
                        help="a classic scheme (cubic, fixed:20, bbr:...) or "
                             "lstm:RUN_DIR|FILE.pt|FILE.onnx|NAME (NAME: a packaged policy, "
                             "`ccgym policies`)")
    parser.add_argument("--duration-s", type=flags.duration_s, default=DEFAULT_DURATION_S,
                        help=f"how long the sender sends (default {DEFAULT_DURATION_S:g})")
    parser.add_argument("--seed", type=flags.seed, default=1,
                        help="seed of the link's and the scheme's randomness (default 1)")
    parser.add_argument("--against", metavar="SCHEME",
                        help="a second flow through the same bottleneck, reported with each "
                             "flow's share: a ccgym scheme (cubic, lstm:...) runs a second "
                             "sender through the relay; kernel:NAME (like --scheme kernel:NAME) "
                             "takes the link shell (`ccgym shell`, needs root)")
    parser.add_argument("--simulate", action="store_true",
                        help="also run the same link and scheme in the simulator (--link only)")
    flags.add_row_outputs(parser)
    flags.add_written_folder(parser, "--logs",
                             help="keep the endpoints' logs (sender.tsv, receiver.tsv, "
                                  "*.stderr) in DIR, also when the run fails")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


@contextlib.contextmanager
def log_folder(keep: str | os.PathLike | None, force: bool = False) -> Iterator[Path]:
    """Where the endpoints write their logs: put in --logs DIR when the run ends, also when it
    fails (a run that wrote nothing leaves no folder), else removed."""
    if keep:
        with output_folder(keep, force, keep_on_error=True) as path:
            yield path
    else:
        with temporary_folder("run") as tmp:
            yield Path(tmp)


def remote_link(remote: str):
    """The path to `ccgym receive` at HOST:PORT ([ADDRESS]:PORT for IPv6), resolved now."""

    host, sep, port = remote.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--remote {remote}: expected HOST:PORT ([ADDRESS]:PORT for IPv6, "
                        "e.g. [::1]:9000)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        socket.getaddrinfo(host, int(port), 0, socket.SOCK_DGRAM)
    except socket.gaierror as e:
        raise UserError(f"--remote {remote}: cannot resolve host {host!r} "
                        f"({e.strerror})") from None
    return Link(name=f"remote {remote}", group="remote", spec="", source="--remote")


def run(args: argparse.Namespace) -> int:
    if args.simulate and args.remote:
        raise UserError("--simulate needs --link: a real path has no simulated twin")
    if args.remote:
        link = remote_link(args.remote)
    else:
        link = resolve_link(args.link)
        check_run_length(link, args.duration_s * 1000.0)
    if args.against or args.scheme.startswith("kernel:"):
        kernel = any(name.startswith("kernel:") for name in (args.scheme, args.against or ""))
        return (_run_through_shell if kernel else _run_against_relay)(args, link)

    rows: list[dict[str, Any]] = []
    runs: list[Run] = []
    with sigterm_as_interrupt(), log_folder(args.logs, args.force) as workdir:
        schemes = resolve_scheme(args.scheme, workdir)
        if args.simulate and schemes.simulator is None:
            raise UserError(f"--simulate: {args.scheme} has no PyTorch policy beside it "
                            f"(give lstm:RUN_DIR or lstm:FILE.pt)")
        progress = not args.no_progress
        if args.remote:
            real = run_remote(args.remote, schemes.sender, args.duration_s, args.seed, workdir,
                              progress)
        else:
            real = run_emulated(link.spec, schemes.sender, args.duration_s, args.seed, workdir,
                                progress)
    metrics = summarize(real.log, real.opportunities_ms, real.duration_ms)

    if not args.remote:
        delay = _core.parse_link_spec(link.spec).delay_ms
        rows.append(aggregate(link, "omniscient",
                              [omniscient(real.opportunities_ms, real.duration_ms, delay)]))
    row = aggregate(link, args.scheme, [metrics])
    # The run's length and seed: what `ccgym calibrate` needs to simulate the same run.
    row.update(mode="real-time" if not args.remote else "real path", clock=real.clock,
               duration_s=real.duration_ms / 1000.0, seed=args.seed)
    if args.remote:
        row.update(capacity_mbps=None, utilization=None)  # unknown, not zero
    else:
        _mark_fidelity(row, real, link)
    rows.append(row)
    runs.append(Run(link, args.scheme, args.seed, real.duration_ms, metrics,
                    real.log.columns(), real.opportunities_ms))
    if args.simulate:
        assert schemes.simulator is not None
        sim_row, sim_run = _simulated(link, args.scheme, schemes.simulator, args.seed,
                                      real.duration_ms)
        rows.append(sim_row)
        runs.append(sim_run)

    out = human_stream(args.json)
    print(format_leaderboard(rows), file=out)
    _print_notes(rows, out)
    if args.remote:
        print(f"one-way delays are RTT-based (clocks not synchronized): the smallest is taken "
              f"as half the minimum RTT, {real.min_rtt_ms:.2f} ms; the path's capacity is unknown",
              file=out)
    write_outputs(rows, runs, args.json, args.plots, args.force)
    return 0


def _simulated(link: Link, scheme: str, simulator: str, seed: int,
               duration_ms: float) -> tuple[dict[str, Any], Run]:
    """--simulate: the same link, scheme and seed in the simulator, as long as the real run."""
    [simulated] = run_scheme(link, simulator, [seed], duration_ms)
    name = f"{scheme} (simulated)"
    row = aggregate(link, name, [simulated.metrics])
    row.update(mode="simulated", clock="virtual", duration_s=duration_ms / 1000.0, seed=seed)
    return row, Run(link, name, seed, duration_ms, simulated.metrics, simulated.log,
                    simulated.opportunities_ms)


def _mark_fidelity(row: dict[str, Any], real: Any, link: Link) -> None:
    """The relay's lateness in a real-time row, and a note where it was too late for the row
    to measure the link (RealRun.relay_problem): such a row is no result to compare."""
    row["relay_late_ms"] = real.relay_late_ms
    problem = real.relay_problem(_core.parse_link_spec(link.spec).delay_ms)
    if problem:
        row["note"] = problem


def _print_notes(rows: list[dict[str, Any]], out: Any) -> None:
    for row in rows:
        if row.get("note"):
            print(f"{row['scheme']}: {row['note']}", file=out)


def _run_through_shell(args: argparse.Namespace, link) -> int:
    """`ccgym run` with a kernel scheme or --against kernel:NAME: the flows go through the
    link shell, each from inside to its receiver outside, and are scored from the shell's
    log. Several flows get their shares and Jain's index."""
    names = [args.scheme] + ([args.against] if args.against else [])
    if args.remote:
        raise UserError(f"{' and '.join(names)}: kernel schemes run in the link shell, which "
                        "needs --link")
    if args.simulate:
        raise UserError("--simulate: a kernel scheme has no simulated twin (compare with "
                        "`ccgym eval --schemes cubic --against cubic` etc.)")
    with sigterm_as_interrupt(), log_folder(args.logs, args.force) as workdir:
        senders = [name if is_kernel_scheme(name) else resolve_scheme(name, workdir).sender
                   for name in names]
        real = run_in_shell(link.spec, senders, args.duration_s, args.seed, workdir,
                            progress=not args.no_progress)
    row, run = _real_row(link, names, real, mode="link shell", clock="link", seed=args.seed)
    if real.kernel_min_rtt_ms:
        row["kernel_min_rtt_ms"] = real.kernel_min_rtt_ms
    _report(args, link, real, [row], [run])
    return 0


def _run_against_relay(args: argparse.Namespace, link) -> int:
    """`ccgym run --against` with ccgym schemes: one sender per flow through the relay, both
    started together; --simulate adds the same pair in the simulator."""
    names = [args.scheme, args.against]
    if args.remote:
        raise UserError("--against runs both flows through an emulated link: give --link")
    with sigterm_as_interrupt(), log_folder(args.logs, args.force) as workdir:
        resolved = []
        for i, name in enumerate(names):  # each learned policy exported into its own folder
            folder = workdir / f"flow{i}"
            folder.mkdir(exist_ok=True)
            resolved.append(resolve_scheme(name, folder))
        real = run_emulated(link.spec, [s.sender for s in resolved], args.duration_s, args.seed,
                            workdir, progress=not args.no_progress)
    row, run = _real_row(link, names, real, mode="real-time", clock=real.clock, seed=args.seed)
    _mark_fidelity(row, real, link)
    # The senders start together as fast as the machine lets them: where they did start.
    row["starts_ms"] = flow_starts_ms(real.log.columns())
    rows, runs = [row], [run]
    if args.simulate:
        simulated = [s.simulator for s in resolved]
        if simulated[0] is None or (simulated[1] or "lstm:").startswith("lstm:"):
            raise UserError("--simulate with --against: the simulator runs a learned policy "
                            "only as --scheme, from its PyTorch file (lstm:RUN_DIR or lstm:FILE.pt)")
        sim_row, sim_run = _simulated_pair(link, names, simulated[0], args.seed,
                                           real.duration_ms)
        rows.append(sim_row)
        runs.append(sim_run)
    _report(args, link, real, rows, runs)
    return 0


def _simulated_pair(link, names: list[str], scheme: str, seed: int,
                    duration_ms: float) -> tuple[dict[str, Any], Any]:
    """The same two flows in the simulator, started together as the real senders were asked
    to: the real run's twin, scored as the real run is (all flows on top)."""
    lineup = make_lineup(scheme, [names[1]], first="scheme")
    sim = run_lineup(link, scheme, lineup, [seed], duration_ms, 0.0)[0]
    return _real_row(link, names, sim, mode="simulated", clock="virtual", seed=seed,
                     label=f"{' vs '.join(names)} (simulated)")


def _real_row(link, names: list[str], real: Any, mode: str, clock: str, seed: int,
              label: str = "") -> tuple[dict[str, Any], Any]:
    """The row and run of a run of one or more flows (a RealRun, or a simulated Run): each
    flow's scheme and share, Jain's index."""
    label = label or " vs ".join(names)
    opportunities = real.opportunities_ms
    metrics = summarize(real.log, opportunities, real.duration_ms)
    row = aggregate(link, label, [metrics])
    row.update(mode=mode, clock=clock, duration_s=real.duration_ms / 1000.0, seed=seed)
    for flow in row.get("flows", []):
        flow["scheme"] = names[int(flow["flow"])]
    log = real.log if isinstance(real.log, dict) else real.log.columns()
    run = Run(link, label, seed, real.duration_ms, metrics, log, opportunities,
              flow_schemes=tuple(names))
    return row, run


def _report(args: argparse.Namespace, link, real: Any, rows: list[dict[str, Any]],
            runs: list[Any]) -> None:
    """The omniscient row over the real run's link, the rows, each real flow's share and
    Jain's index; then --json and --plots."""
    delay = _core.parse_link_spec(link.spec).delay_ms
    bound = aggregate(link, "omniscient", [omniscient(real.opportunities_ms, real.duration_ms,
                                                      delay)])
    out = human_stream(args.json)
    print(format_leaderboard([bound, *rows]), file=out)
    _print_notes(rows, out)
    for flow in rows[0].get("flows", []):
        print(f"flow {flow['flow']}: {flow['scheme']}: {flow['share'] * 100:.1f}% of the "
              f"throughput, {flow['throughput_mbps']:.2f} Mbit/s", file=out)
    if "jain_index" in rows[0]:
        print(f"Jain's fairness index: {rows[0]['jain_index']:.3f}", file=out)
    write_outputs([bound, *rows], runs, args.json, args.plots, args.force)
