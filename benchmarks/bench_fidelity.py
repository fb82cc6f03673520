"""Shared bottlenecks in virtual time against kernel TCP: the second flow's share, simulated
over seeds and real over runs, per case.

A case is `FIRST+SECOND@RATE/DELAY/BDPS[/STAGGER]`: ccgym's FIRST and SECOND schemes in the
simulator and the kernel's (kernel:FIRST, kernel:SECOND) through the link shell, on a
constant link of RATE Mbit/s and DELAY ms one way with a DropTail buffer of BDPS
bandwidth-delay products (RATE x 2 x DELAY in 1500-byte packets), SECOND starting STAGGER s
after FIRST (default 0: together). The figure is SECOND's share of the bytes delivered while
both send, after a 5 s ramp (measure.metrics.overlap_shares, as `ccgym eval --against` and
`ccgym run --against kernel:...` give it). Per case and clock: the shares, their mean,
standard deviation (population) and min/max; the difference of the means (simulated minus
kernel). Each real run gives its one-minute load average (real time suffers on a loaded
machine) and when its second flow did start (ms after the first). The simulated links have
the simulator's shared-link ACK timing noise (two packet times, simulator.hh); --sim-keys
adds spec keys there only (ack_jitter_ms=0: the noiseless link). One JSON object to stdout,
a table to stderr.

  python benchmarks/bench_fidelity.py [--cases A+B@24/20/1,...] [--seeds 5] [--runs 5]
      [--duration-s 30] [--only sim|kernel] [--sim-keys ack_jitter_ms=0]

The kernel half needs root (the link shell) and real time: runs x cases x duration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ccgym.analysis.coexist import flow_starts_ms, make_lineup, run_lineup
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.links import Link
from ccgym.errors import UserError
from ccgym.measure.metrics import overlap_shares

PARTS = ("sim", "kernel")
PACKET_BYTES = 1500
# The pairs: cubic beside cubic and beside bbr on 1 and 4 BDPs, the slower and
# the shallower path, a staggered start.
DEFAULT_CASES = ("cubic+cubic@24/20/1", "cubic+cubic@24/20/4", "bbr+cubic@24/20/1",
                 "bbr+cubic@24/20/4", "bbr+cubic@12/40/1", "cubic+bbr@48/10/0.5",
                 "bbr+cubic@24/20/1/5")


@dataclass(frozen=True)
class Case:
    first: str
    second: str
    rate_mbps: float
    delay_ms: float
    bdps: float
    stagger_s: float

    @property
    def name(self) -> str:
        return (f"{self.first}+{self.second}@{self.rate_mbps:g}/{self.delay_ms:g}/"
                f"{self.bdps:g}/{self.stagger_s:g}")

    @property
    def buffer_packets(self) -> int:
        bdp_bytes = self.rate_mbps * 1e6 / 8 * 2 * self.delay_ms / 1e3
        return max(1, round(self.bdps * bdp_bytes / PACKET_BYTES))

    def link(self, extra_keys: str = "") -> Link:
        spec = (f"rate_mbps={self.rate_mbps:g},delay_ms={self.delay_ms:g},"
                f"queue=droptail:packets={self.buffer_packets}")
        return link_from_spec(spec + (f",{extra_keys}" if extra_keys else ""), "--cases")


def parse_case(text: str) -> Case:
    """`A+B@RATE/DELAY/BDPS[/STAGGER]`; UserError naming the item."""
    try:
        pair, _, link = text.partition("@")
        first, second = pair.split("+")  # a scheme's parameters take ':'
        numbers = [float(x) for x in link.split("/")]
        if len(numbers) not in (3, 4) or not first or not second:
            raise ValueError
    except ValueError:
        raise UserError(f"--cases {text!r}: expected FIRST+SECOND@RATE/DELAY/BDPS[/STAGGER], "
                        "e.g. cubic+bbr@24/20/1/5") from None
    case = Case(first, second, *numbers[:3], numbers[3] if len(numbers) == 4 else 0.0)
    if case.stagger_s < 0 or case.bdps <= 0:
        raise UserError(f"--cases {text!r}: the buffer must be positive and the stagger >= 0")
    return case


def kernel_name(scheme: str) -> str:
    return scheme.partition(":")[0]


def spread(shares: list[float]) -> dict[str, Any]:
    values = np.asarray(shares, dtype=float)
    return {"shares": [round(float(v), 4) for v in values], "mean": float(values.mean()),
            "std": float(values.std()), "min": float(values.min()), "max": float(values.max())}


def simulated(case: Case, seeds: list[int], duration_s: float, extra_keys: str) -> dict[str, Any]:
    """ccgym's pair in the simulator once per seed (coexist.run_lineup, as `ccgym eval
    --against` runs it): the second flow's overlap share per seed."""
    duration_ms = duration_s * 1e3
    lineup = make_lineup(case.second, [case.first], first="competitors")
    runs = run_lineup(case.link(extra_keys), case.second, lineup, seeds, duration_ms,
                      case.stagger_s * 1e3)
    return spread([overlap_shares(run.log, duration_ms)[1] for run in runs])


def kernel(case: Case, runs: int, duration_s: float, seed: int) -> dict[str, Any]:
    """The kernel's pair through the link shell `runs` times (as `ccgym run --scheme kernel:A
    --against kernel:B` runs it): the second flow's overlap share per run, with the load."""
    from ccgym.deploy.shell import run_in_shell

    shares, loads, starts = [], [], []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
            # The kernel's scheme of that name, with its own settings (cubic:hystart=1 is
            # kernel:cubic, whose HyStart is on).
            real = run_in_shell(case.link().spec, [f"kernel:{kernel_name(case.first)}",
                                                   f"kernel:{kernel_name(case.second)}"],
                                duration_s, seed + i, Path(tmp), interval_s=case.stagger_s)
        shares.append(overlap_shares(real.log, real.duration_ms).get(1, float("nan")))
        loads.append(round(os.getloadavg()[0], 2))
        # Where the second flow did start (a process launched on a busy machine starts late):
        # on deep buffers a head start of a few hundred ms shifts the split.
        starts.append(round(flow_starts_ms(real.log.columns())[-1], 1))
    return {**spread(shares), "load_average_1min": loads, "second_start_ms": starts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES),
                        help="comma-separated FIRST+SECOND@RATE/DELAY/BDPS[/STAGGER]")
    parser.add_argument("--seeds", type=int, default=5, help="simulated seeds 1..N")
    parser.add_argument("--runs", type=int, default=3, help="kernel runs per case")
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--only", choices=PARTS, help="one half only")
    parser.add_argument("--sim-keys", default="",
                        help="link spec keys added in the simulator only, e.g. ack_jitter_ms=0")
    args = parser.parse_args()
    if args.seeds < 1 or args.runs < 1 or args.duration_s <= 5:
        parser.error("--seeds and --runs must be >= 1 and --duration-s > 5 (the ramp)")
    cases = [parse_case(c.strip()) for c in args.cases.split(",") if c.strip()]
    if not cases:
        parser.error("--cases: no case")
    if args.sim_keys:
        cases[0].link(args.sim_keys)  # a bad key fails now, before any run
    parts = [args.only] if args.only else list(PARTS)
    if "kernel" in parts:
        from ccgym.deploy.shell import unavailable_reason

        reason = unavailable_reason()
        if reason:
            raise UserError(f"the kernel half: {reason} (--only sim runs without it)")
    rows = []
    for case in cases:
        row: dict[str, Any] = {"case": case.name, "link": case.link().spec}
        if "sim" in parts:
            row["sim"] = simulated(case, list(range(1, args.seeds + 1)), args.duration_s,
                                   args.sim_keys)
        if "kernel" in parts:
            row["kernel"] = kernel(case, args.runs, args.duration_s, seed=1)
        if "sim" in row and "kernel" in row:
            row["difference"] = row["sim"]["mean"] - row["kernel"]["mean"]
        rows.append(row)
        print("  ".join([f"{case.name:<30}"] + [
            f"{p} {row[p]['mean']:.3f} ±{row[p]['std']:.3f} [{row[p]['min']:.2f},"
            f"{row[p]['max']:.2f}]" for p in parts]
            + ([f"diff {row['difference']:+.3f}"] if "difference" in row else [])),
            file=sys.stderr)
    print(json.dumps({"duration_s": args.duration_s, "seeds": args.seeds,
                      "runs": args.runs if "kernel" in parts else 0,
                      "sim_keys": args.sim_keys, "cases": rows}, indent=2))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        print(f"bench_fidelity: {e}", file=sys.stderr)
        sys.exit(2)
