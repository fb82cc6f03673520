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
of those shares. Per case and part: the figures, their mean, standard deviation
(population) and min/max. Each real run gives its one-minute load average (real time suffers
on a loaded machine), when each flow did start (ms after the first; 0: it reached the link
first, and flows started together are launched in an order drawn per run) and the longest time
the link delivered nothing (a host stall: the emulating process or the senders held up; a
packet time on a busy link where none did). The simulated links have the simulator's
shared-link ACK timing noise and TCP's delayed ACKs at the receivers (simulator.hh);
--sim-keys adds spec keys there only (ack_jitter_ms=0: the noiseless link; delayed_acks=0:
receivers that answer every packet).

Two more parts run ccgym's own schemes in real time, asked for with --only (e.g. --only
sim,relay,shell,kernel): relay, through the UDP relay (`ccgym run --scheme A --against B`;
flows together only), and shell, through the link shell as the kernel's flows go. They are
the simulator's senders over the same link core on the wall clock, with the host's timing
instead of the simulator's modelled noise, and ccgym-receiver, which answers every datagram
(compare them with --sim-keys delayed_acks=0): between sim and them a difference lies in
virtual against real time (the link's or the sender's clock); between shell and kernel, in
the schemes.

Per pair of parts (sim-relay, sim-kernel, ..., shell-kernel): the difference of the means; the
spreads as the ratio of the standard deviations and the two-sample Kolmogorov-Smirnov
statistic (the largest gap between the two empirical distributions), with its permutation
p-value (every split of the pooled figures where there are few; a small p: the two sets
are unlikely to come from one distribution). One JSON object to stdout, a table to stderr.

  python benchmarks/bench_fidelity.py [--cases A+B@24/20/1,A+B+C@verizon-lte-short,...]
      [--seeds 5] [--runs 5] [--duration-s 30] [--only sim,relay,shell,kernel]
      [--sim-keys ack_jitter_ms=0]

--cases also takes docs/results.md's sets by name (table, held-out, fresh, reno; e.g. --cases
table,held-out: the 22 pairs of its latest table).

The shell and kernel parts need root (the link shell); they and the relay take real time:
runs x cases x duration each.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
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

# In the order of the comparisons: sim-relay, sim-shell, ..., shell-kernel.
PARTS = ("sim", "relay", "shell", "kernel")
DEFAULT_PARTS = ("sim", "kernel")
# Beyond this many splits of the pooled figures, the KS permutation p-value draws this many.
KS_SPLITS = 5000
PACKET_BYTES = 1500
# ccgym's CUBIC as Linux's runs it: HyStart with both its tests (its ACK train and its delay).
CUBIC = "cubic:hystart=2"
# The pairs: cubic beside cubic and beside bbr on 1 and 4 BDPs, the slower and
# the shallower path, a staggered start.
DEFAULT_CASES = tuple(case.replace("cubic", CUBIC) for case in (
    "cubic+cubic@24/20/1", "cubic+cubic@24/20/4", "bbr+cubic@24/20/1", "bbr+cubic@24/20/4",
    "bbr+cubic@12/40/1", "cubic+bbr@48/10/0.5", "bbr+cubic@24/20/1/5"))
# docs/results.md's sets, by name in --cases: the table the simulator's shared-link defaults
# were fitted to, the pairs held out of that fit, those first measured after it (session 31),
# and Linux's Reno beside cubic, bbr and itself (session 32).
CASE_SETS = {name: tuple(case.replace("cubic", CUBIC) for case in cases) for name, cases in {
    "table": ("cubic+cubic@24/20/1", "cubic+cubic@24/20/4", "cubic+cubic@48/10/0.5",
              "bbr+cubic@24/20/1", "bbr+cubic@24/20/4", "bbr+cubic@12/40/1",
              "cubic+bbr@48/10/0.5", "bbr+cubic@verizon-lte-short",
              "cubic+cubic+cubic@24/20/1", "cubic+cubic+cubic@verizon-lte-short"),
    "held-out": ("bbr+cubic@6/30/1", "bbr+cubic@72/10/1", "cubic+bbr@36/25/2",
                 "bbr+cubic@24/20/1/5", "cubic+cubic@12/40/1", "bbr+bbr@24/20/1",
                 "cubic+cubic@6/30/2", "bbr+cubic+cubic@24/20/2", "bbr+cubic@12/20/2",
                 "cubic+bbr@24/40/1", "bbr+cubic@48/20/1", "cubic+cubic+bbr@12/40/2"),
    "fresh": ("bbr+cubic@18/30/1.5", "cubic+bbr@12/10/4", "cubic+cubic@36/15/1",
              "bbr+cubic@8/50/0.5"),
    "reno": ("reno+cubic@24/20/1", "reno+cubic@24/20/4", "cubic+reno@12/40/1", "bbr+reno@24/20/1",
             "reno+reno@24/20/1", "reno+cubic@verizon-lte-short", "reno+reno+cubic@24/20/2"),
}.items()}


def expand_cases(text: str) -> list[str]:
    """--cases' items, each set name (CASE_SETS) replaced by its cases."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    return [case for item in items for case in CASE_SETS.get(item, (item,))]


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


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the empirical distribution functions of a and b."""
    pooled = np.concatenate([a, b])
    cdf_a = np.searchsorted(np.sort(a), pooled, side="right") / len(a)
    cdf_b = np.searchsorted(np.sort(b), pooled, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def compare(a: list[float], b: list[float]) -> dict[str, float]:
    """Two sets of a case's figures: the difference of the means (a minus b), the ratio of the
    standard deviations (a over b), the KS statistic and its permutation p-value (the share of
    splits of the pooled figures into sets of these sizes whose statistic is at least as
    large; every split where there are at most KS_SPLITS, else that many drawn, seeded)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    observed = ks_statistic(x, y)
    pooled = np.concatenate([x, y])
    if math.comb(len(pooled), len(x)) <= KS_SPLITS:
        splits = [list(c) for c in itertools.combinations(range(len(pooled)), len(x))]
    else:
        rng = np.random.default_rng(1)
        splits = [rng.permutation(len(pooled))[:len(x)] for _ in range(KS_SPLITS)]
    at_least = 0
    for chosen in splits:
        mask = np.zeros(len(pooled), dtype=bool)
        mask[chosen] = True
        at_least += ks_statistic(pooled[mask], pooled[~mask]) >= observed - 1e-12
    std_a, std_b = float(x.std()), float(y.std())
    return {"difference": float(x.mean() - y.mean()),
            "std_ratio": std_a / std_b if std_b > 0 else (1.0 if std_a == 0 else math.inf),
            "ks": observed, "ks_p": at_least / len(splits)}


def longest_delivery_gap_ms(columns: dict[str, np.ndarray], duration_ms: float) -> float:
    """The longest time without a packet delivered, from 1 s after the last flow's start to
    the end: on a link the flows keep busy, the host held up (the link's process, or the
    senders) for about that long."""
    start = max(flow_starts_ms(columns)) + float(np.min(columns["send_ms"])) + 1000.0
    arrivals = np.sort(columns["arrival_ms"][np.isfinite(columns["arrival_ms"])])
    arrivals = arrivals[(arrivals >= start) & (arrivals <= duration_ms)]
    return float(np.max(np.diff(arrivals))) if len(arrivals) > 1 else float("nan")


def real_runs(case: Case, runs: int, run_once: Any) -> dict[str, Any]:
    """run_once(seed, folder) -> a real run of the case's flows, `runs` times: the case's
    figure per run, with the load, where each flow did start and the longest time the link
    delivered nothing (a host stall)."""
    shares, loads, starts, gaps = [], [], [], []
    for i in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-fidelity-") as tmp:
            real = run_once(1 + i, Path(tmp))
        shares.append(figure(real.log, real.duration_ms, len(case.schemes)))
        loads.append(round(os.getloadavg()[0], 2))
        # Where each flow did start (a process launched on a busy machine starts late): which
        # flow leads, and by how much, shifts the split of a pair.
        starts.append([round(t, 1) for t in flow_starts_ms(real.log.columns())])
        gaps.append(round(longest_delivery_gap_ms(real.log.columns(), real.duration_ms), 1))
    return {**spread(shares), "load_average_1min": loads, "flow_starts_ms": starts,
            "longest_delivery_gap_ms": gaps}


def kernel(case: Case, runs: int, duration_s: float) -> dict[str, Any]:
    """The kernel's flows through the link shell `runs` times (as `ccgym run --scheme kernel:A
    --against kernel:B` runs a pair)."""
    from ccgym.deploy.shell import run_in_shell

    # The kernel's scheme of that name, with its own settings (cubic:hystart=2 is
    # kernel:cubic, whose HyStart is on).
    names = [f"kernel:{kernel_name(s)}" for s in case.schemes]
    return real_runs(case, runs, lambda seed, tmp: run_in_shell(
        case.link().spec, names, duration_s, seed, tmp, interval_s=case.stagger_s))


def relay(case: Case, runs: int, duration_s: float) -> dict[str, Any]:
    """ccgym's senders through the real-time relay `runs` times, started together (as `ccgym
    run --scheme A --against B` runs a pair), on the case's link as given (no --sim-keys):
    the relay's forwarding lateness per run beside the figures."""
    from ccgym.deploy.harness import run_emulated

    late: list[float] = []

    def once(seed: int, tmp: Path) -> Any:
        real = run_emulated(case.link().spec, list(case.schemes), duration_s, seed, tmp)
        late.append(round(real.relay_late_ms, 3))
        return real

    return {**real_runs(case, runs, once), "relay_late_ms": late}


def shell(case: Case, runs: int, duration_s: float) -> dict[str, Any]:
    """ccgym's senders through the link shell `runs` times, as the kernel's flows go (`ccgym
    run --scheme A --against kernel:B` takes that path for its ccgym flow): the same
    emulated link, the kernel's sockets and TUN devices on the way, ccgym's schemes."""
    from ccgym.deploy.shell import run_in_shell

    return real_runs(case, runs, lambda seed, tmp: run_in_shell(
        case.link().spec, list(case.schemes), duration_s, seed, tmp,
        interval_s=case.stagger_s))


def measure_case(case: Case, parts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """The case's figures in each part, compared pair by pair; a line of them to stderr."""
    row: dict[str, Any] = {"case": case.name, "link": case.link().spec, "figure": case.figure}
    real = {"relay": relay, "shell": shell, "kernel": kernel}
    for part in parts:
        row[part] = (simulated(case, list(range(1, args.seeds + 1)), args.duration_s,
                               args.sim_keys) if part == "sim"
                     else real[part](case, args.runs, args.duration_s))
    row["compared"] = {f"{a}-{b}": compare(row[a]["values"], row[b]["values"])
                       for a, b in itertools.combinations(parts, 2)}
    print("  ".join([f"{case.name:<30}"] + [
        f"{p} {row[p]['mean']:.3f} ±{row[p]['std']:.3f} [{row[p]['min']:.2f},"
        f"{row[p]['max']:.2f}]" for p in parts] + [
        f"{pair} {c['difference']:+.3f} std x{c['std_ratio']:.2f} KS {c['ks']:.2f} "
        f"(p {c['ks_p']:.2f})" for pair, c in row["compared"].items()]), file=sys.stderr)
    return row


def parse_parts(text: str) -> list[str]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS]
    if not parts or unknown:
        raise UserError(f"--only {text!r}: expected a comma-separated list of "
                        f"{', '.join(PARTS)}")
    return [p for p in PARTS if p in parts]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=",".join(DEFAULT_CASES),
                        help="comma-separated FIRST+SECOND[+...]@RATE/DELAY/BDPS[/STAGGER] or "
                             "...@LINK[/STAGGER], or a set of docs/results.md's by name: "
                             f"{', '.join(CASE_SETS)}")
    parser.add_argument("--seeds", type=int, default=5, help="simulated seeds 1..N")
    parser.add_argument("--runs", type=int, default=3, help="real runs per case and part")
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--only", default=",".join(DEFAULT_PARTS),
                        help=f"the parts to run, of {', '.join(PARTS)} "
                             f"(default {','.join(DEFAULT_PARTS)})")
    parser.add_argument("--sim-keys", default="",
                        help="link spec keys added in the simulator only, e.g. ack_jitter_ms=0")
    args = parser.parse_args()
    if args.seeds < 1 or args.runs < 1 or args.duration_s <= 5:
        parser.error("--seeds and --runs must be >= 1 and --duration-s > 5 (the ramp)")
    parts = parse_parts(args.only)
    cases = [parse_case(c) for c in expand_cases(args.cases)]
    if not cases:
        parser.error("--cases: no case")
    if args.sim_keys:
        cases[0].link(args.sim_keys)  # a bad key fails now, before any run
    if "relay" in parts:
        staggered = [c.name for c in cases if c.stagger_s > 0]
        if staggered:
            raise UserError(f"the relay part starts its flows together: {staggered[0]} has "
                            "a stagger")
    if {"shell", "kernel"} & set(parts):
        from ccgym.deploy.shell import unavailable_reason

        reason = unavailable_reason()
        if reason:
            raise UserError(f"the shell and kernel parts: {reason} (--only sim,relay runs "
                            "without it)")
    rows = [measure_case(case, parts, args) for case in cases]
    print(json.dumps({"duration_s": args.duration_s, "seeds": args.seeds,
                      "runs": args.runs if set(parts) - {"sim"} else 0, "parts": parts,
                      "sim_keys": args.sim_keys, "cases": rows}, indent=2))


if __name__ == "__main__":
    try:
        main()
    except UserError as e:
        print(f"bench_fidelity: {e}", file=sys.stderr)
        sys.exit(2)
