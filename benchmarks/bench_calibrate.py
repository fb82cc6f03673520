"""Calibration recovers a known link: measure schemes in real time, fit a link from them alone.

For each of three links the fit never sees (a constant one with a small DropTail buffer and 1%
loss, a Poisson-delivery one, a high-BDP one), `ccgym run --json` measures cubic, bbr, vegas,
copa and fixed:30 over the real-time relay on loopback (--runs seeds each), then
`ccgym calibrate --leave-one-out` fits a link from those files alone. Per link it prints the
mean replication error (goal: at most 8%; Pantheon: 17% on real paths), the leave-one-out
error (goal: at most 12%), the recovered rate and propagation delay against the true ones
(goal: within 10%) and the wall time of the fit (goal: under 5 minutes on 2 cores).

Prints one JSON object on stdout. Measurements are kept in --out and reused when present, so a
second run only refits. Real time: links x schemes x runs x --duration-s, plus the fits.

  python benchmarks/bench_calibrate.py [--out DIR] [--duration-s 15] [--runs 2] [--trials 60]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

# name -> (spec, true rate Mbit/s, true one-way delay ms)
LINKS = {
    "constant-small-buffer-lossy": ("rate_mbps=12,delay_ms=20,queue=droptail:packets=30,loss=0.01",
                                    12.0, 20.0),
    "poisson": ("rate_mbps=8,delay_ms=30,delivery=poisson,queue=droptail:packets=100", 8.0, 30.0),
    "high-bdp": ("rate_mbps=48,delay_ms=50,queue=droptail:packets=400", 48.0, 50.0),
}
SCHEMES = ("cubic", "bbr", "vegas", "copa", "fixed:30")
CCGYM = [sys.executable, "-m", "ccgym.cli"]


def measure(out: Path, spec: str, scheme: str, seed: int, duration_s: float) -> Path:
    path = out / f"{scheme.replace(':', '_')}__seed{seed}.json"
    if not path.exists():
        subprocess.run([*CCGYM, "run", "--link", spec, "--scheme", scheme, "--seed", str(seed),
                        "--duration-s", f"{duration_s:g}", "--json", str(path), "--no-progress"],
                       check=True, stdout=subprocess.DEVNULL)
    return path


def calibrate(files: list[Path], out: Path, trials: int) -> tuple[dict, float]:
    result = out / "calibration.json"
    start = time.monotonic()
    subprocess.run([*CCGYM, "calibrate", *map(str, files), "--trials", str(trials),
                    "--leave-one-out", "--json", str(result), "-o", str(out / "calibrated.toml"),
                    "--plot", str(out / "calibration.png"), "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    return json.loads(result.read_text()), time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="bench-calibrate", help="measurements and fits go here")
    parser.add_argument("--duration-s", type=float, default=15.0, help="length of each real run")
    parser.add_argument("--runs", type=int, default=2, help="real runs per scheme (seeds 1..N)")
    parser.add_argument("--trials", type=int, default=60, help="trials per delivery process")
    parser.add_argument("--links", default=",".join(LINKS), help="which of the links")
    args = parser.parse_args()

    report: dict = {"duration_s": args.duration_s, "runs": args.runs, "trials": args.trials,
                    "schemes": list(SCHEMES), "links": {}}
    for name in args.links.split(","):
        spec, rate, delay = LINKS[name]
        out = Path(args.out) / name
        out.mkdir(parents=True, exist_ok=True)
        print(f"{name}: measuring {len(SCHEMES)} schemes x {args.runs} runs", file=sys.stderr)
        files = [measure(out, spec, scheme, seed, args.duration_s)
                 for scheme in SCHEMES for seed in range(1, args.runs + 1)]
        print(f"{name}: calibrating", file=sys.stderr)
        fit, wall_s = calibrate(files, out, args.trials)
        link = fit["link"]
        report["links"][name] = {
            "true_spec": spec,
            "calibrated_spec": link["spec"],
            "replication_error": fit["error"],
            "error_by_scheme": {s["scheme"]: s["error"] for s in fit["schemes"]},
            "leave_one_out_error": fit["leave_one_out"]["error"],
            "leave_one_out_by_scheme": {s["scheme"]: s["error"]
                                        for s in fit["leave_one_out"]["schemes"]},
            "rate_error": abs(link["rate_mbps"] - rate) / rate,
            "delay_error": abs(link["delay_ms"] - delay) / delay,
            "fit_wall_time_s": wall_s,
        }
        print(json.dumps({name: report["links"][name]}), file=sys.stderr)
    links = report["links"].values()
    report["goals_met"] = {
        "replication_error_at_most_8pct": all(x["replication_error"] <= 0.08 for x in links),
        "leave_one_out_at_most_12pct": all(x["leave_one_out_error"] <= 0.12 for x in links),
        "rate_and_delay_within_10pct": all(x["rate_error"] <= 0.1 and x["delay_error"] <= 0.1
                                           for x in links),
        "fit_under_5_minutes": all(x["fit_wall_time_s"] < 300 for x in links),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
