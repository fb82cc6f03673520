"""Real runs against the simulator, the sender's decision time, and the loopback rate.

1. Fidelity: cubic, fixed:20 and a learned policy over the real-time relay (ccgym
   run's harness) on a 12 Mbit/s 20 ms link and on a cellular trace (Verizon-LTE-short
   from ../shared/data when present, else a generated one), each against the simulated
   run of the same link, scheme and seed: the relative gaps of throughput and of p95
   end-to-end delay (goal: within 10%, target 5%).
2. Decision time: the median time per policy decision inside ccgym-sender, from the
   learned policy's runs (goal: under 20 us).
3. Rate: the highest throughput sender, relay and receiver sustain on loopback with
   a large fixed window through a link far faster than that (goal: 200 Mbit/s).

Prints one JSON object. Runs in real time: about 6 x --duration-s plus 15 s;
--decision-only runs the learned policy alone (2 x --duration-s): the decision time, and
the policy's fidelity.

  python benchmarks/bench_deploy.py [--duration-s 30] [--policy runs/NAME] [--json OUT]
  python benchmarks/bench_deploy.py --decision-only --policy lstm:generalist --duration-s 10
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from ccgym.analysis.evaluate import run_scheme
from ccgym.deploy.harness import resolve_scheme, run_emulated
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.links import Link, data_dir
from ccgym.measure.metrics import summarize

REPO = Path(__file__).resolve().parents[1]
SEED = 1
RATE_LINK = "rate_mbps=5000,delay_ms=1"
RATE_WINDOWS = (256, 1024, 4096)
RATE_SECONDS = 4.0


def cellular_link() -> Link:
    data = data_dir()
    trace = data / "traces" / "cellular" / "Verizon-LTE-short.down" if data else None
    if trace is not None and trace.exists():
        spec = f"name=Verizon-LTE-short,trace={trace},ack_trace={trace.with_suffix('.up')},delay_ms=20"
        return link_from_spec(spec)
    from ccgym.emulators.generate import generate_cellular_trace, write_trace

    path = Path(tempfile.gettempdir()) / "ccgym-bench-deploy-cellular.trace"
    write_trace(path, generate_cellular_trace(mean_mbps=8.0, duration_s=140, seed=1))
    return link_from_spec(f"name=generated-cellular,trace={path},delay_ms=20")


def newest_policy() -> str | None:
    found = sorted(REPO.glob("runs/*/policy.pt"), key=lambda p: p.stat().st_mtime)
    return str(found[-1].parent) if found else None


def gap(real: float | None, simulated: float | None) -> float | None:
    if real is None or not simulated:
        return None
    return abs(real - simulated) / simulated


def fidelity_case(link: Link, scheme: str, duration_s: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="ccgym-bench-") as tmp:
        workdir = Path(tmp)
        schemes = resolve_scheme(scheme, workdir)
        real = run_emulated(link.spec, schemes.sender, duration_s, SEED, workdir)
        sender_err = (workdir / "sender.stderr").read_text()
    real_m = summarize(real.log, real.opportunities_ms, real.duration_ms).to_dict()
    sim_m = run_scheme(link, schemes.simulator or scheme, [SEED], real.duration_ms)[0].metrics.to_dict()
    case = {
        "link": link.name, "scheme": scheme,
        "real": {k: real_m[k] for k in ("throughput_mbps", "delay_p95_ms", "e2e_delay_p95_ms", "score")},
        "simulated": {k: sim_m[k] for k in ("throughput_mbps", "delay_p95_ms", "e2e_delay_p95_ms", "score")},
        "throughput_gap": gap(real_m["throughput_mbps"], sim_m["throughput_mbps"]),
        "e2e_delay_gap": gap(real_m["e2e_delay_p95_ms"], sim_m["e2e_delay_p95_ms"]),
    }
    timing = re.search(r"policy: (\d+) decisions, median (\d+) us, p99 (\d+) us", sender_err)
    if timing:
        case["decisions"] = int(timing.group(1))
        case["decision_median_us"] = int(timing.group(2))
        case["decision_p99_us"] = int(timing.group(3))
    print(f"{link.name:>24} {scheme:>12}: throughput {case['real']['throughput_mbps']:.2f} vs "
          f"{case['simulated']['throughput_mbps']:.2f} Mbit/s, e2e p95 "
          f"{case['real']['e2e_delay_p95_ms']:.1f} vs {case['simulated']['e2e_delay_p95_ms']:.1f} ms",
          file=sys.stderr)
    return case


def rate_case(window: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="ccgym-bench-") as tmp:
        real = run_emulated(RATE_LINK, f"fixed:{window}", RATE_SECONDS, SEED, Path(tmp))
    m = summarize(real.log, real.opportunities_ms, real.duration_ms).to_dict()
    print(f"fixed:{window} through {RATE_LINK}: {m['throughput_mbps']:.0f} Mbit/s, "
          f"loss {m['loss']:.4f}", file=sys.stderr)
    return {"window": window, "throughput_mbps": m["throughput_mbps"], "loss": m["loss"],
            "delay_p95_ms": m["delay_p95_ms"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=30.0)
    parser.add_argument("--policy", help="a run folder, policy file or packaged policy, with or "
                                         "without lstm: (default: the newest runs/*/policy.pt)")
    parser.add_argument("--decision-only", action="store_true",
                        help="the learned policy alone, no baselines and no loopback rate")
    parser.add_argument("--json", metavar="OUT")
    args = parser.parse_args()

    policy = (args.policy or newest_policy() or "").removeprefix("lstm:") or None
    if args.decision_only and policy is None:
        parser.error("--decision-only needs a policy: --policy, or a run under runs/")
    baselines = [] if args.decision_only else ["cubic", "fixed:20"]
    schemes = baselines + ([f"lstm:{policy}"] if policy else [])
    links = [link_from_spec("name=12mbps-20ms,rate_mbps=12,delay_ms=20"), cellular_link()]
    fidelity = [fidelity_case(link, scheme, args.duration_s) for link in links for scheme in schemes]
    gaps = [g for c in fidelity for g in (c["throughput_gap"], c["e2e_delay_gap"]) if g is not None]
    rates = [] if args.decision_only else [rate_case(w) for w in RATE_WINDOWS]
    decisions = [c["decision_median_us"] for c in fidelity if "decision_median_us" in c]
    result = {
        "duration_s": args.duration_s,
        "policy": policy,
        "fidelity": fidelity,
        "max_gap": max(gaps) if gaps else None,
        "all_within_10_percent": bool(gaps) and max(gaps) <= 0.10,
        "decision_median_us": max(decisions) if decisions else None,
        "loopback_rate": rates,
        "max_loopback_mbps": max((r["throughput_mbps"] for r in rates), default=None),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
