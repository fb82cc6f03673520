"""Simulator speed: simulated packets per wall-clock second and the real-time factor.

A packet is counted once (sent, queued, delivered, acknowledged). Prints JSON:
one object per case with packets_per_second (per core used) and realtime_factor
(simulated seconds per wall second). Cases: cubic on 12 and 100 Mbit/s constant
links and on a cellular trace; the growth with link rate; parallel paths on
threads.

  python benchmarks/bench_simulator.py [--duration-s 60] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from ccgym.emulators import _core


def cellular_link() -> tuple[str, str]:
    data = Path(os.environ.get("CCGYM_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    trace = data / "traces" / "cellular" / "Verizon-LTE-short.down"
    if trace.exists():
        return "verizon-lte-short", f"trace={trace},ack_trace={trace.with_suffix('.up')},delay_ms=20"
    from ccgym.emulators.generate import generate_cellular_trace, write_trace

    path = Path("/tmp/ccgym-bench-cellular.trace")
    write_trace(path, generate_cellular_trace(mean_mbps=8.0, duration_s=140, seed=1))
    return "generated-cellular", f"trace={path},delay_ms=20"


def measure(name: str, link: str, scheme: str, duration_ms: float, paths: int = 1,
            threads: int = 1) -> dict:
    sims = [_core.Simulator(link, [(scheme, 0.0, -1.0)], seed, False) for seed in range(1, paths + 1)]
    start = time.perf_counter()
    _core.run_all_until(sims, duration_ms, threads)
    wall = time.perf_counter() - start
    # Without the log, count packets from the sender's sequence numbers.
    packets = sum(sim.packets_sent() for sim in sims)
    cores = min(threads, paths)
    return {
        "case": name,
        "scheme": scheme,
        "paths": paths,
        "threads": cores,
        "simulated_s": duration_ms / 1000 * paths,
        "wall_s": round(wall, 4),
        "packets": packets,
        "packets_per_second": round(packets / wall / cores),
        "realtime_factor": round(duration_ms / 1000 * paths / wall / cores, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration-s", type=float, default=60.0)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    duration_ms = args.duration_s * 1000
    results = []
    queue = "queue=droptail:packets=500"
    for rate in (12, 100):
        results.append(measure(f"constant-{rate}mbps", f"rate_mbps={rate},delay_ms=20,{queue}",
                               "cubic", duration_ms))
    name, link = cellular_link()
    results.append(measure(name, link, "cubic", duration_ms))
    for rate in (6, 24, 48, 200):
        results.append(measure(f"rate-scaling-{rate}mbps", f"rate_mbps={rate},delay_ms=20,{queue}",
                               "cubic", duration_ms))
    for paths, threads in ((8, 1), (8, 2)):
        results.append(measure(f"parallel-{paths}paths", f"rate_mbps=12,delay_ms=20,{queue}",
                               "cubic", duration_ms, paths, threads))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
