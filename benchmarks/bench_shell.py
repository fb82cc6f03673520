"""Kernel TCP beside ccgym's reimplementations through the link shell; the shell's own limits.

1. Real vs reimplemented: kernel:cubic vs ccgym's cubic and kernel:bbr vs bbr on the same
   links (12 Mbit/s 20 ms droptail 100; 50 Mbit/s 40 ms; the 6.829 contest link,
   Verizon-LTE-short, when ../shared/data has it; the pathological buffer-bdp-3), the
   kernel's in the link shell in real time, ccgym's in the simulator, same seed: throughput
   and p95 one-way delay, and their relative gaps (goal: within 10% where the algorithms
   are the same).
2. Ceiling: the highest TCP rate (kernel cubic, one flow) through the shell on a link far
   faster than that, 10 Gbit/s and no delay (goal: at least 500 Mbit/s).
3. Added latency: UDP ping-pong of 64-byte datagrams through the shell on that link, its
   median RTT beside the same on loopback; half the difference is what the shell adds per
   direction (goal: under 0.2 ms at the median).
4. Optionally (--policy FILE.onnx|runs/NAME), the learned policy against one kernel cubic
   flow on 24 Mbit/s, 20 ms, droptail 100: each flow's share and Jain's index.

Needs root (the link shell). Prints one JSON object on stdout, a readable table on stderr.
Real time: about 8 x --duration-s plus 20 s.

  sudo python benchmarks/bench_shell.py [--duration-s 20] [--policy policy.onnx]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from ccgym.analysis.evaluate import run_scheme
from ccgym.deploy.shell import link_shell, run_in_shell, run_kernel_scheme, unavailable_reason
from ccgym.emulators.link_names import link_from_spec, resolve_links
from ccgym.emulators.links import Link
from ccgym.measure.metrics import summarize

SEED = 1
PAIRS = (("kernel:cubic", "cubic"), ("kernel:bbr", "bbr"))
FAST_LINK = "rate_mbps=10000,delay_ms=0"  # the core's unlimited data direction needs a rate
CEILING_S = 5.0
PINGS = 2000
MIXED_LINK = "rate_mbps=24,delay_ms=20,queue=droptail:packets=100"


def links() -> list[Link]:
    out = [link_from_spec("rate_mbps=12,delay_ms=20,queue=droptail:packets=100"),
           link_from_spec("rate_mbps=50,delay_ms=40")]
    try:
        out += [link for link in resolve_links(None, "cellular-real") if link.name == "verizon-lte-short"]
    except Exception as e:  # noqa: BLE001 - the data folder may be absent: say so, go on
        print(f"bench_shell: no contest link ({e})", file=sys.stderr)
    out += [link for link in resolve_links(None, "pantheon-pathological") if link.name == "buffer-bdp-3"]
    return out


def gap(real: float, reimplemented: float) -> float | None:
    return (reimplemented - real) / real if real else None


def compare(link: Link, duration_s: float) -> list[dict]:
    duration_ms = duration_s * 1000.0
    rows = []
    for kernel, ours in PAIRS:
        real = run_kernel_scheme(link, kernel, [SEED], duration_ms)[0].metrics
        sim = run_scheme(link, ours, [SEED], duration_ms)[0].metrics
        rows.append({
            "link": link.name, "kernel": kernel, "ccgym": ours,
            "kernel_mbps": real.throughput_mbps, "ccgym_mbps": sim.throughput_mbps,
            "throughput_gap": gap(real.throughput_mbps, sim.throughput_mbps),
            "kernel_delay_p95_ms": real.delay_p95_ms, "ccgym_delay_p95_ms": sim.delay_p95_ms,
            "delay_p95_gap": gap(real.delay_p95_ms, sim.delay_p95_ms),
            "kernel_loss": real.loss, "ccgym_loss": sim.loss,
            "capacity_mbps": real.capacity_mbps,
        })
    return rows


def ceiling(workdir: Path) -> float:
    run = run_in_shell(FAST_LINK, ["kernel:cubic"], CEILING_S, SEED, workdir)
    return summarize(run.log, run.opportunities_ms, run.duration_ms).throughput_mbps


# The client: PINGS round trips, one at a time; prints their RTTs (ms) as JSON.
PING_CLIENT = """
import json, socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
s.connect((sys.argv[1], int(sys.argv[2])))
rtts = []
for i in range(int(sys.argv[3])):
    start = time.perf_counter()
    s.send(b"x" * 64)
    try:
        s.recv(100)
    except TimeoutError:
        continue
    rtts.append((time.perf_counter() - start) * 1000)
    time.sleep(0.001)
print(json.dumps(rtts))
"""


def echo_server(address: str) -> tuple[socket.socket, int]:
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind((address, 0))

    def serve() -> None:
        while True:
            try:
                data, peer = server.recvfrom(100)
            except OSError:
                return
            server.sendto(data, peer)

    threading.Thread(target=serve, daemon=True).start()
    return server, server.getsockname()[1]


def ping_median_ms(prefix: list[str], address: str) -> float:
    server, port = echo_server(address)
    try:
        out = subprocess.run([*prefix, sys.executable, "-c", PING_CLIENT, address, str(port),
                              str(PINGS)], capture_output=True, text=True, check=True, timeout=120)
    finally:
        server.close()
    return statistics.median(json.loads(out.stdout))


def added_latency(workdir: Path) -> dict:
    loopback = ping_median_ms([], "127.0.0.1")
    with link_shell(FAST_LINK, SEED, None, workdir) as shell:
        through = ping_median_ms(shell.enter([]), shell.outside)
    return {"loopback_rtt_median_ms": loopback, "shell_rtt_median_ms": through,
            "added_per_direction_ms": (through - loopback) / 2}


def mixed(policy: str, duration_s: float, workdir: Path) -> dict:
    from ccgym.deploy.harness import resolve_scheme

    sender = resolve_scheme(policy, workdir).sender
    run = run_in_shell(MIXED_LINK, [sender, "kernel:cubic"], duration_s, SEED, workdir)
    metrics = summarize(run.log, run.opportunities_ms, run.duration_ms)
    return {"link": MIXED_LINK, "policy": policy, "jain_index": metrics.jain_index,
            "utilization": metrics.utilization,
            "flows": [{"scheme": name, "share": f["share"], "throughput_mbps": f["throughput_mbps"],
                       "delay_p95_ms": f["delay_p95_ms"]}
                      for name, f in zip((policy, "kernel:cubic"), metrics.flows)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration-s", type=float, default=20.0, help="each comparison run")
    parser.add_argument("--policy", help="a learned policy (lstm:FILE.onnx or lstm:runs/NAME)")
    parser.add_argument("--json", metavar="OUT", help="also write the JSON here")
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"bench_shell: {reason}", file=sys.stderr)
        return 2
    result: dict = {"duration_s": args.duration_s, "seed": SEED}
    with tempfile.TemporaryDirectory(prefix="bench-shell-") as tmp:
        workdir = Path(tmp)
        result["real_vs_reimplemented"] = [row for link in links()
                                           for row in compare(link, args.duration_s)]
        result["ceiling_mbps"] = ceiling(workdir)
        result["latency"] = added_latency(workdir)
        if args.policy:
            result["mixed"] = mixed(args.policy, args.duration_s, workdir)

    for row in result["real_vs_reimplemented"]:
        print(f"{row['link'][:40]:40s} {row['kernel']:13s} {row['kernel_mbps']:7.2f} Mbit/s "
              f"{row['kernel_delay_p95_ms']:7.1f} ms | {row['ccgym']:6s} {row['ccgym_mbps']:7.2f} "
              f"Mbit/s {row['ccgym_delay_p95_ms']:7.1f} ms | gaps {row['throughput_gap']:+.1%} "
              f"{row['delay_p95_gap']:+.1%}", file=sys.stderr)
    print(f"ceiling: {result['ceiling_mbps']:.0f} Mbit/s; added latency per direction: "
          f"{result['latency']['added_per_direction_ms'] * 1000:.0f} us", file=sys.stderr)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
