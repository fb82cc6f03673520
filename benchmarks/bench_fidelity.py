"""Shared bottlenecks in virtual time against kernel TCP: the second flow's share (or, with
three flows or more, Jain's index), simulated over seeds and real over runs, per case.

A case is `FIRST+SECOND[+...]@RATE/DELAY/BDPS[/STAGGER]` or `FIRST+SECOND[+...]@LINK[/STAGGER]`:
ccgym's schemes in the simulator and the kernel's (kernel:FIRST, ...) through the link shell,
on a constant link of RATE Mbit/s and DELAY ms one way with a DropTail buffer of BDPS
bandwidth-delay products (RATE x 2 x DELAY in 1500-byte packets), or on the packaged link
LINK (`ccgym links list SET`; a recorded one needs $CCGYM_DATA), flow i starting i x STAGGER s
after the first (default 0: together). The figure of a pair is SECOND's share of the bytes
delivered while both send, after a 5 s ramp (measure.metrics.overlap_shares, as `ccgym eval
--against` and `ccgym run --against kernel:...` give it); of three flows or more, Jain's index
of those shares. Per case and clock: the shares, their mean,
standard deviation (population) and min/max; the difference of the means (simulated minus
kernel). Each real run gives its one-minute load average (real time suffers on a loaded
machine) and when its second flow did start (ms after the first). The simulated links have
the simulator's shared-link ACK timing noise (two packet times, simulator.hh); --sim-keys
adds spec keys there only (ack_jitter_ms=0: the noiseless link). One JSON object to stdout,
a table to stderr.

  python benchmarks/bench_fidelity.py [--cases A+B@24/20/1,A+B+C@verizon-lte-short,...]
      [--seeds 5] [--runs 5]
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
from ccgym.emulators.link_names import link_from_spec, resolve_link
from ccgym.emulators.links import Link
from ccgym.errors import UserError
from ccgym.measure.metrics import jain_index, overlap_shares

PARTS = ("sim", "kernel")
PACKET_BYTES = 1500
# The pairs: cubic beside cubic and beside bbr on 1 and 4 BDPs, the slower and
# the shallower path, a staggered start.
DEFAULT_CASES = ("cubic+cubic@24/20/1", "cubic+cubic@24/20/4", "bbr+cubic@24/20/1",
                 "bbr+cubic@24/20/4", "bbr+cubic@12/40/1", "cubic+bbr@48/10/0.5",
                 "bbr+cubic@24/20/1/5")


@dataclass(frozen=True)
class Case:
    schemes: tuple[str, ...]
    base: Link    # the link, without --sim-keys
    where: str    # the link as the case gave it
    stagger_s: float

    @property
    def name(self) -> str:
        return f"{'+'.join(self.schemes)}@{self.where}/{self.stagger_s:g}"

    @property
    def figure(self) -> str:
        return "second flow's share" if len(self.schemes) == 2 else "Jain's index"

    def link(self, extra_keys: str = "") -> Link:
        if not extra_keys:
            return self.base
        return link_from_spec(f"{self.base.spec},{extra_keys}", "--sim-keys")


def constant_link(rate_mbps: float, delay_ms: float, bdps: float) -> Link:
    bdp_bytes = rate_mbps * 1e6 / 8 * 2 * delay_ms / 1e3
    packets = max(1, round(bdps * bdp_bytes / PACKET_BYTES))
    return link_from_spec(f"rate_mbps={rate_mbps:g},delay_ms={delay_ms:g},"
                          f"queue=droptail:packets={packets}", "--cases")


def parse_case(text: str) -> Case:
    """`A+B[+...]@RATE/DELAY/BDPS[/STAGGER]` or `A+B[+...]@LINK[/STAGGER]`; UserError naming
    the item."""
    usage = (f"--cases {text!r}: expected FIRST+SECOND[+...]@RATE/DELAY/BDPS[/STAGGER] or "
             "FIRST+SECOND[+...]@LINK[/STAGGER], e.g. cubic+bbr@24/20/1/5")
    flows, _, where = text.partition("@")
    schemes = tuple(flows.split("+"))  # a scheme's parameters take ':'
    parts = where.split("/")
    if len(schemes) < 2 or not all(schemes) or not parts[0]:
        raise UserError(usage)
    try:
        if parts[0][0].isdigit():
            numbers = [float(x) for x in parts]
            if len(numbers) not in (3, 4) or numbers[2] <= 0:
                raise ValueError
            link, label, stagger = constant_link(*numbers[:3]), "/".join(parts[:3]), numbers[3:]
        else:
            if len(parts) > 2:
                raise ValueError
            link, label, stagger = resolve_link(parts[0], "--cases"), parts[0], \
                [float(x) for x in parts[1:]]
    except ValueError:
        raise UserError(usage) from None
    case = Case(schemes, link, label, stagger[0] if stagger else 0.0)
    if case.stagger_s < 0:
        raise UserError(f"--cases {text!r}: the stagger must be >= 0")
    return case


def figure(log: Any, duration_ms: float, flows: int) -> float:
    """The second flow's share while all send, or Jain's index of the shares (3+ flows)."""
    shares = overlap_shares(log, duration_ms)
    if flows == 2:
        return shares.get(1, float("nan"))
    if len(shares) < flows:
        return float("nan")  # a flow sent nothing
    return jain_index([shares[f] for f in sorted(shares)])


def kernel_name(scheme: str) -> str:
    return scheme.partition(":")[0]


def spread(figures: list[float]) -> dict[str, Any]:
    values = np.asarray(figures, dtype=float)
    return {"values": [round(float(v), 4) for v in values], "mean": float(values.mean()),
            "std": float(values.std()), "min": float(values.min()), "max": float(values.max())}


def simulated(case: Case, seeds: list[int], duration_s: float, extra_keys: str) -> dict[str, Any]:
    """ccgym's flows in the simulator once per seed (coexist.run_lineup, as `ccgym eval
    --against` runs it): the case's figure per seed."""
    duration_ms = duration_s * 1e3
    *others, last = case.schemes
    lineup = make_lineup(last, others, first="competitors")
    runs = run_lineup(case.link(extra_keys), last, lineup, seeds, duration_ms,
                      case.stagger_s * 1e3)
    return spread([figure(run.log, duration_ms, len(case.schemes)) for run in runs])


def kernel(case: Case, runs: int, duration_s: float, seed: int) -> dict[str, Any]:
    """The kernel's flows through the link shell `runs` times (as `ccgym run --scheme kernel:A
    --against kernel:B` runs a pair): the case's figure per run, with the load."""
    from ccgym.deploy.shell import run_in_shell

    shares, loads, starts = [], [], []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
            # The kernel's scheme of that name, with its own settings (cubic:hystart=1 is
            # kernel:cubic, whose HyStart is on).
            real = run_in_shell(case.link().spec,
                                [f"kernel:{kernel_name(s)}" for s in case.schemes],
                                duration_s, seed + i, Path(tmp), interval_s=case.stagger_s)
        shares.append(figure(real.log, real.duration_ms, len(case.schemes)))
        loads.append(round(os.getloadavg()[0], 2))
        # Where the second flow did start (a process launched on a busy machine starts late):
        # on deep buffers a head start of a few hundred ms shifts the split.
        starts.append(round(flow_starts_ms(real.log.columns())[-1], 1))
    return {**spread(shares), "load_average_1min": loads, "second_start_ms": starts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES),
                        help="comma-separated FIRST+SECOND[+...]@RATE/DELAY/BDPS[/STAGGER] or "
                             "...@LINK[/STAGGER]")
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
        row: dict[str, Any] = {"case": case.name, "link": case.link().spec,
                               "figure": case.figure}
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
