"""Rollout speed with the policy in the loop: what DAgger's rollouts cost, on one core.

VecLinkEnv with N copies of a 12 Mbit/s 20 ms link, stepped in C++ on one thread,
and an LSTM policy (32 hidden units, a trained one with --policy, else random
weights: the cost is the same) choosing every env's action with one batched
inference per step, PyTorch on one thread. Prints one JSON object: per N, env steps
per second and the real-time factor (virtual seconds simulated per wall second,
over all N links) on one core (goal: at least 500x).

    .venv/bin/python benchmarks/bench_rollout.py [--seconds 5] [--policy runs/NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import torch

from ccgym.emulators import _core
from ccgym.envs.vector import VecLinkEnv
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.lstm_scheme import resolve_policy_path

LINK = "rate_mbps=12,delay_ms=20"
SIZES = (1, 8, 32, 128)
WARMUP_STEPS = 20  # the first steps build simulators and compute the oracle


def measure(policy: LstmPolicy, num_envs: int, seconds: float) -> dict[str, float]:
    env = VecLinkEnv(num_envs, {"links": [LINK]}, threads=1)
    obs, _ = env.reset(seed=0)
    state = policy.initial_state(num_envs)
    starting = np.ones(num_envs, dtype=bool)

    def step() -> None:
        nonlocal obs, state, starting
        actions, state = policy.act(obs, state, starting)
        obs, _, terminated, truncated, _ = env.step(actions)
        starting = terminated | truncated

    for _ in range(WARMUP_STEPS):
        step()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    wall = time.perf_counter() - start
    env_steps = steps * num_envs
    return {"num_envs": num_envs, "vector_steps": steps, "wall_s": round(wall, 3),
            "env_steps_per_s": round(env_steps / wall, 1),
            "real_time_factor": round(env_steps * _core.STEP_MS / 1000.0 / wall, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per N")
    parser.add_argument("--policy", help="a run folder or policy .pt (default: random weights)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = LstmPolicy.load(resolve_policy_path(args.policy)) if args.policy else LstmPolicy()
    policy.eval()
    results = [measure(policy, n, args.seconds) for n in SIZES]
    print(json.dumps({"link": LINK, "policy": args.policy or "random weights",
                      "hidden_size": policy.hidden_size, "cores": 1, "cpus": os.cpu_count(),
                      "machine": platform.machine(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
