"""The link shell: a network namespace whose IP packets cross the link core in real time.

`link_shell` starts ccgym-shell-link, which makes the namespace, its TUN devices and
their addresses, and carries every packet through the link. Programs join the
namespace through /proc/PID/ns/net (nsenter) and reach the outside at the address the
shell exports. Stopping ccgym-shell-link kills whatever still runs inside, and its exit
takes the devices and the namespace with it: the kernel removes a TUN device with its
last descriptor and an unnamed namespace with its last process, so nothing outlives
the run, not even a SIGKILLed `ccgym` (ccgym-shell-link dies with its parent).

`run_in_shell` is a real run inside the shell: kernel TCP (`kernel:cubic`, ...) and
ccgym's own UDP sender (any other scheme) as flows through one bottleneck, scored from
the shell's per-packet log by the same code as simulated runs.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from ccgym.deploy.harness import (DRAIN_S, STARTUP_TIMEOUT_S, Process, RealRun, _sender_args,
                                  find_program, launch_order, processes)
from ccgym.deploy.tcp_bulk import available_congestion_controls
from ccgym.emulators import _core
from ccgym.envs.scoring import Run
from ccgym.errors import UserError
from ccgym.files import temporary_folder
from ccgym.measure.logs import packet_log_from_shell, read_tsv_log, shell_flow_names
from ccgym.measure.metrics import summarize

SHELL_PROGRAM = "ccgym-shell-link"
READY = re.compile(r"ready pid=(\d+) outside=(\S+) inside=(\S+) device=(\S+)")
# The outside address as programs in the shell see it; MAHIMAHI_BASE as mahimahi names it,
# so that scripts written for mm-link work unchanged.
ADDRESS_ENV = ("CCGYM_SHELL_OUTSIDE", "MAHIMAHI_BASE")
KERNEL_PREFIX = "kernel:"
# Capabilities (bit numbers in /proc/self/status CapEff) the shell needs: TUN devices and
# addresses, and a network namespace.
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21


def unavailable_reason() -> str | None:
    """Why the link shell cannot run here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return "the link shell needs Linux (network namespaces and TUN devices)"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun does not exist: this kernel or container has no TUN device"
    if not (_has_capability(CAP_NET_ADMIN) and _has_capability(CAP_SYS_ADMIN)):
        return ("the link shell needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to make a network "
                "namespace and TUN devices: run it with sudo")
    if shutil.which("nsenter") is None:
        return "nsenter (util-linux) is not installed"
    return None


def _has_capability(bit: int) -> bool:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> bit & 1)
    except OSError:
        pass
    return os.geteuid() == 0


def kernel_congestion_controls() -> list[str]:
    """What this kernel offers to TCP sockets (net.ipv4.tcp_available_congestion_control)."""
    return available_congestion_controls()


def check_kernel_scheme(scheme: str) -> str:
    """The congestion control of `kernel:NAME`; a clear error when the kernel lacks it."""
    name = scheme[len(KERNEL_PREFIX):]
    available = kernel_congestion_controls()
    if name not in available:
        raise UserError(f"scheme {scheme}: this kernel offers "
                        f"{', '.join('kernel:' + a for a in available) or 'no congestion control'}"
                        f" (/proc/sys/net/ipv4/tcp_available_congestion_control)")
    return name


def is_kernel_scheme(scheme: str) -> bool:
    return scheme.startswith(KERNEL_PREFIX)


@dataclass
class Shell:
    """A running link shell."""

    pid: int           # ccgym-shell-link, which holds the namespace
    outside: str       # the outside end's address, as programs inside reach it
    inside: str        # the inside end's address
    device: str        # the outside TUN device
    link: Process
    namespace: int     # its network namespace's inode: identifies what runs inside

    def enter(self, args: Sequence[str]) -> list[str]:
        """args run inside the shell's namespace."""
        return ["nsenter", f"--net=/proc/{self.pid}/ns/net", "--", *args]

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in ADDRESS_ENV:
            env[name] = self.outside
        return env


@contextlib.contextmanager
def link_shell(link_spec: str, seed: int, log: Path | None, workdir: Path) -> Iterator[Shell]:
    """ccgym-shell-link for the block; stopped (and everything inside with it) on the way out."""
    reason = unavailable_reason()
    if reason:
        raise UserError(reason)
    args = [find_program(SHELL_PROGRAM), "--link", link_spec, "--seed", str(seed)]
    if log is not None:
        args += ["--log", str(log)]
    link = Process(args, workdir / "shell-link.stderr")
    namespace = None
    try:
        match = link.first_line(READY)
        pid = int(match.group(1))
        namespace = os.stat(f"/proc/{pid}/ns/net").st_ino
        yield Shell(pid, match.group(2), match.group(3), match.group(4), link, namespace)
    finally:
        link.stop()  # which kills what runs inside, unless the link itself was killed:
        if namespace is not None:
            _kill_namespace(namespace)
    if link.popen.returncode not in (0, None):
        raise link.failure("failed")


def _kill_namespace(namespace: int) -> None:
    """SIGKILLs whatever still runs in the shell's namespace (never in this process's own)."""
    if namespace == os.stat("/proc/self/ns/net").st_ino:
        return
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.stat(entry / "ns" / "net").st_ino == namespace:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue


@dataclass
class ShellRun(RealRun):
    """A real run through the link shell: flow i of the log is schemes[i]."""

    schemes: list[str] = field(default_factory=list)
    kernel_min_rtt_ms: list[float] = field(default_factory=list)  # TCP_INFO's, per kernel flow


def run_in_shell(link_spec: str, schemes: Sequence[str], duration_s: float, seed: int,
                 workdir: Path, progress: bool = False, interval_s: float = 0.0) -> ShellRun:
    """Each scheme one flow from inside the shell to a receiver outside, flow i starting
    i * interval_s after the first and all ending at duration_s; scored from the shell's log
    on the link's clock (which starts with the first packet)."""
    for scheme in schemes:
        if is_kernel_scheme(scheme):
            check_kernel_scheme(scheme)
    shell_log = workdir / "shell.tsv"
    # flow index -> the outside port its receiver listens on
    ports: list[int] = []
    senders: list[tuple[int, Process]] = []
    with processes() as running, link_shell(link_spec, seed, shell_log, workdir) as shell:
        tcp_port = None
        for i, scheme in enumerate(schemes):
            if is_kernel_scheme(scheme):
                if tcp_port is None:
                    receiver = Process([sys.executable, "-m", "ccgym.deploy.tcp_bulk", "receive",
                                        "--bind", shell.outside], workdir / "tcp-receiver.stderr",
                                       name="tcp receiver")
                    running.append(receiver)
                    tcp_port = receiver.listening_port()
                ports.append(tcp_port)
            else:
                receiver = Process([find_program("ccgym-receiver"), "--port", "0", "--bind",
                                    shell.outside, "--log", str(workdir / f"receiver-{i}.tsv")],
                                   workdir / f"receiver-{i}.stderr")
                running.append(receiver)
                ports.append(receiver.listening_port())
        start = time.monotonic()
        for i in launch_order([i * interval_s for i in range(len(schemes))], seed):
            scheme = schemes[i]
            delay = start + i * interval_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            flow_s = duration_s - i * interval_s
            dest = f"{shell.outside}:{ports[i]}"
            if is_kernel_scheme(scheme):
                args = [sys.executable, "-m", "ccgym.deploy.tcp_bulk", "send", "--to", dest,
                        "--cc", scheme[len(KERNEL_PREFIX):], "--duration-s", f"{flow_s:g}"]
            else:
                args = _sender_args(dest, scheme, flow_s, seed + i, workdir / f"sender-{i}.tsv")
            sender = Process(shell.enter(args), workdir / f"sender-{i}.stderr", name=scheme)
            running.append(sender)
            senders.append((i, sender))
        _wait_for_senders([s for _, s in senders], start, duration_s, progress)
        time.sleep(DRAIN_S)
        reports = {i: _kernel_report(s) for i, s in senders if is_kernel_scheme(schemes[i])}

    tsv = read_tsv_log(shell_log)
    flow_of = _flow_ids(shell_flow_names(tsv), shell.outside, ports,
                        {i: port for i, (_, port) in reports.items() if port is not None})
    kernel_min_rtt = [min_rtt for min_rtt, _ in reports.values()]
    log = packet_log_from_shell(tsv, flow_of)
    duration_ms = duration_s * 1000.0
    opportunities = _core.opportunities(link_spec, duration_ms, seed)
    return ShellRun(log, duration_ms, opportunities[opportunities < duration_ms], "synchronized",
                    schemes=list(schemes), kernel_min_rtt_ms=kernel_min_rtt)


def _flow_ids(names: dict[int, str], outside: str, ports: Sequence[int],
              source_ports: Mapping[int, int] | None = None) -> dict[int, int]:
    """The shell's flow ids -> the run's flow index, from each flow's outside port and, where
    known, its inside (source) port: kernel flows share the TCP receiver's port, and flows that
    start together reach the link in either order. Flows to one port whose source port is not
    known are taken in the order they appeared."""
    source_ports = source_ports or {}
    out: dict[int, int] = {}
    unnamed: list[tuple[int, int]] = []  # (shell id, outside port)
    for shell_id in sorted(names):
        proto, _, rest = names[shell_id].partition(":")
        near, _, far = rest.partition(">")
        if proto not in ("tcp", "udp") or far.rpartition(":")[0] != outside:
            continue
        port, source = int(far.rpartition(":")[2]), int(near.rpartition(":")[2])
        owner = [i for i, p in source_ports.items() if p == source and ports[i] == port]
        if owner:
            out[shell_id] = owner[0]
        else:
            unnamed.append((shell_id, port))
    for shell_id, port in unnamed:
        for index, wanted in enumerate(ports):
            if wanted == port and index not in out.values() and index not in source_ports:
                out[shell_id] = index
                break
    return out


def _wait_for_senders(senders: Sequence[Process], start: float, duration_s: float,
                      progress: bool) -> None:
    with tqdm(total=round(duration_s, 1), desc="real time", unit="s", disable=not progress,
              leave=False, bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s") as bar:
        while any(s.popen.poll() is None for s in senders):
            elapsed = time.monotonic() - start
            if elapsed > duration_s + STARTUP_TIMEOUT_S:
                break
            bar.update(min(elapsed, duration_s) - bar.n)
            time.sleep(0.1)
    for sender in senders:
        sender.wait(timeout_s=STARTUP_TIMEOUT_S)


def _kernel_report(sender: Process) -> tuple[float, int | None]:
    """What a tcp_bulk sender printed at its end: the minimum RTT the kernel measured on its
    socket (ms; NaN if none) and its local port (None if none)."""
    assert sender.popen.stdout is not None
    text = sender.popen.stdout.read().decode(errors="replace")
    min_rtt = re.search(r"min_rtt_us=(\d+)", text)
    port = re.search(r"local_port=(\d+)", text)
    return (int(min_rtt.group(1)) / 1000.0 if min_rtt else float("nan"),
            int(port.group(1)) if port else None)


def run_kernel_scheme(link, scheme: str, seeds: Sequence[int], duration_ms: float,
                      flows: int = 1, interval_ms: float = 0.0) -> list:
    """`ccgym eval`'s runs of a kernel scheme: `flows` bulk TCP transfers through the link
    shell per seed, in real time, scored like the simulator's runs (envs.scoring.Run)."""
    runs = []
    for seed in seeds:
        with temporary_folder("shell") as tmp:
            real = run_in_shell(link.spec, [scheme] * flows, duration_ms / 1000.0, seed,
                                Path(tmp), interval_s=interval_ms / 1000.0)
        metrics = summarize(real.log, real.opportunities_ms, real.duration_ms)
        runs.append(Run(link, scheme, seed, real.duration_ms, metrics, real.log.columns(),
                        real.opportunities_ms))
    return runs
