"""Speed of the vectorized environment, with or without the policy in the loop.

VecLinkEnv with N copies of a 12 Mbit/s 20 ms link, 10 s episodes with autoreset.
Without --policy, uniformly random actions: the environment alone. With --policy, an
LSTM chooses every env's action with one batched inference per step, as DAgger's
rollouts do: `--policy lstm` (32 hidden units, random weights: the cost is that of a
trained one) or `--policy runs/NAME`. PyTorch runs on one thread; with --threads 1 the
whole loop is on one core (goal: at least 500x real time per core with the policy).
Prints one JSON object: per N, env steps per second (N x vector steps / wall second) and
the real-time factor (virtual seconds simulated / wall second, over all N links).

    .venv/bin/python benchmarks/bench_env.py [--seconds 5] [--threads 0]
    .venv/bin/python benchmarks/bench_env.py --policy lstm --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable

import numpy as np

from ccgym.emulators import _core
from ccgym.envs.vector import VecLinkEnv

LINK = "rate_mbps=12,delay_ms=20"
SIZES = (1, 8, 32, 128)
ACTION_SEED = 0
WARMUP_STEPS = 20  # the first steps build simulators and compute the oracle

# Chooses the N actions of one vector step from its observations and episode starts.
Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]


def random_actions(num_envs: int) -> Chooser:
    rng = np.random.default_rng(ACTION_SEED)
    return lambda obs, starting: rng.integers(_core.NUM_ACTIONS, size=num_envs)


def policy_actions(policy, num_envs: int) -> Chooser:
    state = policy.initial_state(num_envs)

    def choose(obs: np.ndarray, starting: np.ndarray) -> np.ndarray:
        nonlocal state
        actions, state = policy.act(obs, state, starting)
        return actions

    return choose


def measure(num_envs: int, seconds: float, threads: int, choose: Chooser) -> dict[str, float]:
    env = VecLinkEnv(num_envs, {"links": [LINK]}, threads=threads)
    obs, _ = env.reset(seed=0)
    starting = np.ones(num_envs, dtype=bool)

    def step() -> None:
        nonlocal obs, starting
        obs, _, terminated, truncated, _ = env.step(choose(obs, starting))
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


def load_policy(name: str):
    import torch

    from ccgym.policies.lstm import LstmPolicy
    from ccgym.policies.policy_path import resolve_policy_path

    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = LstmPolicy() if name == "lstm" else LstmPolicy.load(resolve_policy_path(name))
    policy.eval()
    return policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured time per N")
    parser.add_argument("--threads", type=int, default=0, help="C++ threads (0: one per core)")
    parser.add_argument("--policy", help="lstm (random weights) or a run folder; "
                                         "default: random actions, no policy")
    args = parser.parse_args()
    policy = load_policy(args.policy) if args.policy else None
    results = []
    for n in SIZES:
        choose = policy_actions(policy, n) if policy else random_actions(n)
        results.append(measure(n, args.seconds, args.threads, choose))
    print(json.dumps({"link": LINK, "actions": args.policy or "uniform random",
                      "threads": args.threads, "cpus": os.cpu_count(),
                      "machine": platform.machine(), "results": results}, indent=2))


if __name__ == "__main__":
    main()
