"""Speed of the vectorized environment: env steps per second and real-time factor.

VecLinkEnv with N = 1, 8, 32 copies of a 12 Mbit/s link, uniformly random actions (no
policy inference: that is the trainer's cost), default 10 s episodes with autoreset.
Prints one JSON object: per N, env steps per second (N x vector steps / wall second) and
the real-time factor (virtual seconds simulated / wall second, over all N links).

    .venv/bin/python benchmarks/bench_env.py [--seconds 5] [--threads 0]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np

from ccgym.emulators import _core
from ccgym.envs.vector import VecLinkEnv

LINK = "rate_mbps=12,delay_ms=20"
SIZES = (1, 8, 32)
ACTION_SEED = 0
WARMUP_STEPS = 20  # the first steps build simulators and compute the oracle


def measure(num_envs: int, seconds: float, threads: int) -> dict[str, float]:
    env = VecLinkEnv(num_envs, {"links": [LINK]}, threads=threads)
    rng = np.random.default_rng(ACTION_SEED)
    env.reset(seed=0)
    for _ in range(WARMUP_STEPS):
        env.step(rng.integers(_core.NUM_ACTIONS, size=num_envs))
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(rng.integers(_core.NUM_ACTIONS, size=num_envs))
        steps += 1
    wall = time.perf_counter() - start
    env_steps = steps * num_envs
    return {"num_envs": num_envs, "vector_steps": steps, "wall_s": round(wall, 3),
            "env_steps_per_s": round(env_steps / wall, 1),
            "real_time_factor": round(env_steps * _core.STEP_MS / 1000.0 / wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per N")
    parser.add_argument("--threads", type=int, default=0, help="C++ threads (0: one per core)")
    args = parser.parse_args()
    results = [measure(n, args.seconds, args.threads) for n in SIZES]
    print(json.dumps({"link": LINK, "actions": "uniform random", "threads": args.threads,
                      "cpus": os.cpu_count(), "machine": platform.machine(),
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
