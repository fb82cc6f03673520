"""Real runs: the C++ receiver, relay and sender as processes, and their logs scored.

`run_emulated` starts ccgym-receiver, ccgym-link (the real-time link) and
ccgym-sender on loopback, waits for the sender, lets the link drain, stops the
others, and joins the endpoints' logs into the packet log `analysis/` scores.
`run_remote` runs only the sender, towards a ccgym-receiver on another host
(`ccgym receive`), and scores the sender's log with RTT-based one-way delays.

Every process is stopped when the run ends, however it ends (and, on Linux, is
told to stop if this process dies), so no port stays bound.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ccgym.emulators import _core
from ccgym.envs.scoring import check_not_external
from ccgym.errors import UserError
from ccgym.measure.logs import (PacketLog, packet_log_from_acks, packet_log_from_endpoints,
                                 read_tsv_log)
from ccgym.policies import packaged_policies
from ccgym.policies.onnx_policy import OnnxPolicy
from ccgym.policies.policy_path import (resolve_policy_path, split_policy_options,
                                       with_policy_options)

PROGRAMS = ("ccgym-sender", "ccgym-receiver", "ccgym-link")
# A program prints this first line once its socket is bound.
LISTENING = re.compile(r"listening on (\S+):(\d+)")
STARTUP_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
# After the sender stops, what is still queued in the link reaches the receiver.
DRAIN_S = 0.5


def find_program(name: str) -> str:
    """An endpoint program: $CCGYM_BIN_DIR, beside this Python (where the package installs
    them), PATH, then the newest CMake build tree of a source checkout."""
    candidates: list[Path] = []
    if os.environ.get("CCGYM_BIN_DIR"):
        base = Path(os.environ["CCGYM_BIN_DIR"])
        candidates += [base / name, base / "deploy" / "cpp" / name]
    candidates.append(Path(sys.executable).parent / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    repo = Path(__file__).resolve().parents[1]
    candidates += sorted(repo.glob(f"build/*/deploy/cpp/{name}"),
                         key=lambda p: p.stat().st_mtime, reverse=True)
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise UserError(f"{name} is not built: run scripts/setup.sh (or set CCGYM_BIN_DIR to the "
                    f"folder that holds it)")


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up here, not in the child: between fork and exec only the call itself runs.
_PRCTL = _libc_prctl()
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies, so that even a `ccgym run`
    killed with SIGKILL leaves no endpoint behind."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


class Process:
    """One endpoint program; stdout is a pipe (for its 'listening on' line), stderr a file."""

    def __init__(self, args: list[str], stderr_path: Path, name: str | None = None) -> None:
        self.name = name or Path(args[0]).name
        self.stderr_path = stderr_path
        with open(stderr_path, "wb") as err:
            self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err,
                                          stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    def failure(self, what: str) -> UserError:
        text = self.stderr().strip()
        return UserError(f"{self.name} {what} (exit status {self.popen.returncode})"
                         + (f": {text}" if text else ""))

    def listening_port(self) -> int:
        """Waits for the 'listening on ADDR:PORT' line; a program that exits first failed."""
        return int(self.first_line(LISTENING).group(2))

    def first_line(self, pattern: re.Pattern[str]) -> re.Match[str]:
        """Waits for the program's first line, which says it is ready and must match pattern;
        a program that exits first failed."""
        assert self.popen.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.popen.stdout, selectors.EVENT_READ)
            ready = sel.select(STARTUP_TIMEOUT_S)
        line = self.popen.stdout.readline().decode(errors="replace") if ready else ""
        match = pattern.match(line)
        if not match:
            self.popen.poll()
            if self.popen.returncode is None:
                self.stop()
                raise UserError(f"{self.name} did not start within {STARTUP_TIMEOUT_S:g} s")
            self.popen.wait()
            raise self.failure("could not start")
        return match

    def wait(self, timeout_s: float) -> None:
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise UserError(f"{self.name} did not finish within {timeout_s:g} s") from None
        if self.popen.returncode != 0:
            raise self.failure("failed")

    def stop(self) -> None:
        """SIGTERM (the programs write their logs and exit 0), then SIGKILL; always reaped."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self.popen.stdout is not None:
            self.popen.stdout.close()

    def stop_cleanly(self) -> None:
        self.stop()
        if self.popen.returncode != 0:
            raise self.failure("failed")


@contextlib.contextmanager
def processes() -> Iterator[list[Process]]:
    """Whatever is appended is stopped on the way out, the last started first."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for process in reversed(started):
            process.stop()


# The relay's lateness beyond which a real-time run is marked as not measuring the link: on a
# busy 2-core machine a 12 Mbit/s run is about 1 ms late on average, 100 Mbit/s 9 ms,
# 10 Gbit/s (which loopback cannot carry: 1-2 Gbit/s got through) about 100 ms.
RELAY_LATE_MAX_MS = 5.0
RELAY_LATE_FRACTION = 0.25
RELAY_LATE_LINE = re.compile(r"data: forwarded late by ([0-9.]+) ms on average")
# The share of the data sent that may never reach the relay: loopback drops datagrams only when
# the relay's socket buffer overflows, i.e. when the relay reads slower than the senders send.
# A faster machine keeps up on average (10 Gbit/s: 1-6 ms late) and loses the rest there
# instead (about 1% of the datagrams), so lateness alone would score such a run silently.
RELAY_LOST_MAX = 0.001
RELAY_OFFERED_LINE = re.compile(r"data: (\d+) offered")


@dataclass
class RealRun:
    """A finished real run: its packet log on the sender's clock, and the link's delivery
    opportunities on that clock (empty for a real path, whose capacity is unknown)."""

    log: PacketLog
    duration_ms: float
    opportunities_ms: np.ndarray
    clock: str  # "synchronized" (one host) or "rtt-based"
    min_rtt_ms: float = float("nan")
    # How late the relay (ccgym-link) forwarded data after the link released it, ms, on
    # average: the emulation's fidelity (nan without a relay). See relay_problem.
    relay_late_ms: float = float("nan")
    # The share of the datagrams sent that never reached the relay (nan without a relay).
    relay_lost: float = float("nan")

    def relay_problem(self, delay_ms: float) -> str | None:
        """Why the run measured this machine rather than the link (the relay could not keep
        up), or None: it forwarded later, on average, than RELAY_LATE_MAX_MS or
        RELAY_LATE_FRACTION of the link's one-way delay, or more than RELAY_LOST_MAX of the
        data never reached it."""
        limit = max(RELAY_LATE_MAX_MS, RELAY_LATE_FRACTION * delay_ms)
        advice = ("so these figures measure this machine, not the link; try a lower rate or a "
                  "less busy machine")
        if self.relay_late_ms > limit:
            return (f"the relay could not keep up: it forwarded data {self.relay_late_ms:.1f} ms "
                    f"late on average (more than {limit:g} ms), {advice}")
        if self.relay_lost > RELAY_LOST_MAX:
            return (f"the relay could not keep up: {100 * self.relay_lost:.2f}% of the data sent "
                    f"never reached it (more than {100 * RELAY_LOST_MAX:g}%), {advice}")
        return None


def _sender_args(dest: str, scheme: str, duration_s: float, seed: int, log: Path) -> list[str]:
    return [find_program("ccgym-sender"), "--dest", dest, "--scheme", scheme,
            "--duration-s", f"{duration_s:g}", "--seed", str(seed), "--log", str(log)]


def _wait_for_sender(sender: Process, duration_s: float, progress: bool) -> None:
    """Waits for the sender to finish its run, with a progress bar in seconds."""
    with tqdm(total=round(duration_s, 1), desc="run", unit="s", disable=not progress,
              leave=False, bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s") as bar:
        start = time.monotonic()
        while sender.popen.poll() is None:
            elapsed = time.monotonic() - start
            if elapsed > duration_s + STARTUP_TIMEOUT_S:
                break
            bar.update(min(elapsed, duration_s) - bar.n)
            time.sleep(0.1)
    sender.wait(timeout_s=STARTUP_TIMEOUT_S)


def _link_origin_ms(stderr: str) -> float:
    match = re.search(r"clock_origin_ns=(\d+)", stderr)
    if not match:
        raise UserError(f"ccgym-link did not report its clock origin: {stderr.strip()}")
    return int(match.group(1)) / 1e6


def launch_order(starts_s: Sequence[float], seed: int) -> list[int]:
    """Flow indices in the order to launch their senders: by start time, and flows due at the
    same instant in an order drawn from the seed. Launching a process takes milliseconds, so
    the flow launched first mostly reaches the link first (98 of 112 kernel runs), and with it
    the larger share of a pair that starts together: in a fixed order, the second of two kernel
    cubic flows kept 0.39."""
    draw = random.Random(seed)
    ties = [draw.random() for _ in starts_s]
    return sorted(range(len(starts_s)), key=lambda i: (starts_s[i], ties[i]))


def run_emulated(link_spec: str, sender_scheme: str | Sequence[str], duration_s: float, seed: int,
                 workdir: Path, progress: bool = False) -> RealRun:
    """Receiver, real-time link and sender on loopback, for duration_s; logs in workdir.
    Several schemes: one sender each (flow i, seed + i), started together, sharing the link;
    the log is on the first sender's clock."""
    schemes = [sender_scheme] if isinstance(sender_scheme, str) else list(sender_scheme)
    sender_logs = [workdir / ("sender.tsv" if i == 0 else f"sender{i}.tsv")
                   for i in range(len(schemes))]
    receiver_log = workdir / "receiver.tsv"
    with processes() as running:
        receiver = Process([find_program("ccgym-receiver"), "--port", "0", "--bind", "127.0.0.1",
                            "--log", str(receiver_log)], workdir / "receiver.stderr")
        running.append(receiver)
        receiver_port = receiver.listening_port()
        relay = Process([find_program("ccgym-link"), "--listen", "0", "--bind", "127.0.0.1",
                         "--to", f"127.0.0.1:{receiver_port}", "--link", link_spec,
                         "--seed", str(seed)], workdir / "link.stderr")
        running.append(relay)
        link_port = relay.listening_port()
        senders: dict[int, Process] = {}
        for i in launch_order([0.0] * len(schemes), seed):
            args = _sender_args(f"127.0.0.1:{link_port}", schemes[i], duration_s, seed + i,
                                sender_logs[i])
            stderr = workdir / ("sender.stderr" if i == 0 else f"sender{i}.stderr")
            senders[i] = Process([*args, "--flow", str(i)], stderr)
            running.append(senders[i])
        for i, sender in sorted(senders.items()):
            _wait_for_sender(sender, duration_s, progress and i == 0)
        time.sleep(DRAIN_S)
        relay.stop_cleanly()
        receiver.stop_cleanly()

    sender_tsvs, receiver_tsv = [read_tsv_log(p) for p in sender_logs], read_tsv_log(receiver_log)
    origin_ms = sender_tsvs[0].clock_origin_ms()
    log = _on_one_clock([(packet_log_from_endpoints(tsv, receiver_tsv),
                          tsv.clock_origin_ms() - origin_ms) for tsv in sender_tsvs])
    duration_ms = duration_s * 1000.0
    # The link's opportunities, computed by the same core from the same spec and seed,
    # moved from the link's time (from the first datagram) to the sender's clock.
    shift_ms = _link_origin_ms(relay.stderr()) - origin_ms
    opportunities = _core.opportunities(link_spec, duration_ms - shift_ms, seed) + shift_ms
    opportunities = opportunities[(opportunities >= 0) & (opportunities < duration_ms)]
    return RealRun(log, duration_ms, opportunities, "synchronized",
                   relay_late_ms=_relay_late_ms(relay.stderr()),
                   relay_lost=_relay_lost(relay.stderr(),
                                         sum(int(t.trailer.get("sent", 0)) for t in sender_tsvs)))


def _relay_late_ms(stderr: str) -> float:
    match = RELAY_LATE_LINE.search(stderr)
    return float(match.group(1)) if match else float("nan")


def _relay_lost(stderr: str, sent: int) -> float:
    match = RELAY_OFFERED_LINE.search(stderr)
    if not match or sent <= 0:
        return float("nan")
    return max(0.0, 1.0 - int(match.group(1)) / sent)


def _on_one_clock(parts: Sequence[tuple[PacketLog, float]]) -> PacketLog:
    """One log of several senders' logs, each moved by its clock's offset (ms) from the
    first's: the senders share one steady clock, so the offsets are exact."""
    if len(parts) == 1:
        return parts[0][0]
    columns = {}
    for name in parts[0][0].columns():
        moved = [log.columns()[name] + offset if name in ("send_ms", "arrival_ms")
                 else log.columns()[name] for log, offset in parts]
        columns[name] = np.concatenate(moved)
    order = np.argsort(columns["send_ms"], kind="stable")
    return PacketLog.from_columns({name: values[order] for name, values in columns.items()})


def run_remote(dest: str, sender_scheme: str, duration_s: float, seed: int,
               workdir: Path, progress: bool = False) -> RealRun:
    """The sender alone, towards a ccgym-receiver at dest (HOST:PORT)."""
    sender_log = workdir / "sender.tsv"
    with processes() as running:
        sender = Process(_sender_args(dest, sender_scheme, duration_s, seed, sender_log),
                         workdir / "sender.stderr")
        running.append(sender)
        _wait_for_sender(sender, duration_s, progress)
    log, min_rtt = packet_log_from_acks(read_tsv_log(sender_log))
    if not np.isfinite(min_rtt):
        raise UserError(f"no ACK came back from {dest}: is `ccgym receive` running there, "
                        f"bound to an address this host can reach, and is UDP let through?")
    return RealRun(log, duration_s * 1000.0, np.empty(0), "rtt-based", min_rtt_ms=min_rtt)


# ---------------------------------------------------------------- what the sender runs

@dataclass
class Schemes:
    """What the sender runs, and what the simulator runs for the same scheme (None: cannot)."""

    sender: str
    simulator: str | None


def resolve_scheme(scheme: str, workdir: Path) -> Schemes:
    prefix, _, argument = scheme.partition(":")
    if prefix == "oracle":
        raise UserError("--scheme oracle needs to know the link's future: it runs only in "
                        "the simulator (ccgym eval)")
    if prefix != "lstm":
        check_not_external(scheme, "--scheme")
        try:
            _core.validate_scheme(scheme)
        except ValueError as e:
            raise UserError(f"--scheme: {e} (also: lstm:RUN_DIR)") from e
        return Schemes(scheme, scheme)
    argument, options = split_policy_options(argument)
    with_options = partial(with_policy_options, options=options)
    if argument.endswith(".onnx"):
        onnx_path = Path(argument).expanduser()
        if not onnx_path.is_file():
            raise UserError(f"--scheme {scheme}: no such file")
        try:  # here, where the error is one line, not in the sender after it started
            OnnxPolicy(onnx_path)
        except ValueError as e:
            raise UserError(f"--scheme {scheme}: {e}") from None
        beside = onnx_path.with_suffix(".pt")
        return Schemes(with_options(f"lstm:{onnx_path}"),
                       with_options(f"lstm:{beside}") if beside.is_file() else None)

    from ccgym.deploy.export import export_policy
    from ccgym.policies.lstm import LstmPolicy

    source = resolve_policy_path(argument)
    shipped = packaged_policies.shipped_onnx(source)
    if shipped is not None:  # a packaged policy: its export ships beside it
        return Schemes(with_options(f"lstm:{shipped}"), with_options(f"lstm:{source}"))
    try:
        policy = LstmPolicy.load(source)
    except (ValueError, RuntimeError, OSError) as e:
        raise UserError(f"--scheme {scheme}: cannot load the policy: {e}") from e
    onnx_path = export_policy(policy, workdir / "policy.onnx")
    return Schemes(with_options(f"lstm:{onnx_path}"), with_options(f"lstm:{source}"))
