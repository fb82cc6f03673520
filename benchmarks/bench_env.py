"""Speed of the vectorized environments, with or without the policy in the loop.

single: VecLinkEnv with N copies of a 12 Mbit/s 20 ms link, 10 s episodes with autoreset.
multi: N simulations of that link shared by two learned flows and a cubic flow
(competitors "self+cubic"), stepped as the multi-agent env steps them (the engine,
envs/engine.py: all learned flows of all N in one call), every episode restarted together.
Without --policy, uniformly random actions: the environment alone. With --policy, an
LSTM chooses every learned flow's action with one batched inference per step, as DAgger's
rollouts do: `--policy lstm` (32 hidden units, random weights: the cost is that of a
trained one) or `--policy runs/NAME`. PyTorch runs on one thread; with --threads 1 the
whole loop is on one core (goal: at least 500x real time per core with the policy).

Each (flows, threads, N) is measured --repeats times, in rounds that measure each once, so
that a machine's load drifting over the minutes touches every thread count alike; the figure
is the median, the runs are listed beside it (a busy machine makes single runs noisy:
loadavg says how busy it was). threads 0 is the simulator's default choice (by size, then
step by step between its threads and the caller alone); its results say how many threads
it laid out. Prints one JSON object: env steps per second (learned-flow steps: N x vector
steps, x2 for multi, per wall second), the real-time factor (virtual seconds simulated per
wall second, over all learned flows), and each thread count's speed-up over one thread:
whether the default is ever slower than one thread is `--threads 0,1`'s over_one_thread.

    .venv/bin/python benchmarks/bench_env.py [--seconds 2] [--threads 1,2,0] [--flows single,multi]
    .venv/bin/python benchmarks/bench_env.py --threads 0,1 --sizes 8,128 --repeats 5
    .venv/bin/python benchmarks/bench_env.py --policy lstm --threads 1 --flows single
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import Engine
from ccgym.envs.vector import VecLinkEnv

LINK = "rate_mbps=12,delay_ms=20"
SIZES = (1, 8, 32, 128)
ACTION_SEED = 0
ACTION_BLOCK = 256  # steps of random actions drawn at once
WARMUP_STEPS = 20  # the first steps build simulators and compute the oracle

# Chooses the N actions of one vector step from its observations and episode starts.
Chooser = Callable[[np.ndarray, np.ndarray], np.ndarray]


def random_actions(num_envs: int) -> Chooser:
    """Uniformly random actions, drawn ACTION_BLOCK steps at a time: one draw per step
    (3 us for 128 envs) would be a quarter of the serial work of a step the benchmark
    means to measure, the environment's."""
    rng = np.random.default_rng(ACTION_SEED)
    block = np.empty((0, num_envs), dtype=np.int64)
    step = 0

    def choose(obs: np.ndarray, starting: np.ndarray) -> np.ndarray:
        nonlocal block, step
        if step == len(block):
            block, step = rng.integers(_core.NUM_ACTIONS, size=(ACTION_BLOCK, num_envs)), 0
        step += 1
        return block[step - 1]

    return choose


def policy_actions(policy, num_envs: int) -> Chooser:
    state = policy.initial_state(num_envs)

    def choose(obs: np.ndarray, starting: np.ndarray) -> np.ndarray:
        nonlocal state
        actions, state = policy.act(obs, state, starting)
        return actions

    return choose


class SingleFlow:
    """VecLinkEnv: one learned flow per link."""

    rows_per_env = 1

    def __init__(self, num_envs: int, threads: int) -> None:
        self.env = VecLinkEnv(num_envs, {"links": [LINK]}, threads=threads)
        self.engine = self.env.engine

    def reset(self) -> np.ndarray:
        return self.env.reset(seed=0)[0]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        obs, _, terminated, truncated, _ = self.env.step(actions)
        return obs, terminated | truncated


class MultiFlow:
    """The engine: two learned flows and a cubic flow per link, all stepped in one call."""

    rows_per_env = 2

    def __init__(self, num_envs: int, threads: int) -> None:
        config = EnvConfig(links=[LINK], competitors=["self+cubic"])
        self.engine = Engine(num_envs, config, threads=threads)
        self.rng = np.random.default_rng(0)

    def reset(self) -> np.ndarray:
        for i in range(self.engine.num_sims):
            self.engine.reset_sim(i, self.rng)
        return self.engine.first_step().obs

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rows = self.engine.step(actions)
        if not rows.done.all():
            return rows.obs, np.zeros(len(rows.obs), dtype=bool)
        return self.reset(), np.ones(len(rows.obs), dtype=bool)


KINDS = {"single": SingleFlow, "multi": MultiFlow}


def measure(kind: str, num_envs: int, seconds: float, threads: int,
            make_chooser: Callable[[int], Chooser]) -> dict[str, float]:
    env = KINDS[kind](num_envs, threads)
    rows = num_envs * env.rows_per_env
    choose = make_chooser(rows)
    obs = env.reset()
    starting = np.ones(rows, dtype=bool)

    def step() -> None:
        nonlocal obs, starting
        obs, starting = env.step(choose(obs, starting))

    for _ in range(WARMUP_STEPS):
        step()
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        steps += 1
    wall = time.perf_counter() - start
    env_steps = steps * rows
    return {"env_steps_per_s": env_steps / wall,
            "real_time_factor": env_steps * _core.STEP_MS / 1000.0 / wall,
            "threads_laid_out": env.engine.vec.threads}


Case = tuple[str, int, int]  # flows, threads, N


def measure_rounds(cases: list[Case], args: argparse.Namespace,
                   make_chooser: Callable[[int], Chooser]) -> list[dict[str, Any]]:
    """Each case's median over args.repeats rounds, each round measuring every case once."""
    runs: dict[Case, list[dict[str, float]]] = {case: [] for case in cases}
    for _ in range(args.repeats):
        for kind, threads, num_envs in cases:
            runs[kind, threads, num_envs].append(
                measure(kind, num_envs, args.seconds, threads, make_chooser))
    return [median_of(case, runs[case]) for case in cases]


def median_of(case: Case, runs: list[dict[str, float]]) -> dict[str, Any]:
    kind, threads, num_envs = case
    rates = [r["env_steps_per_s"] for r in runs]
    best = runs[rates.index(statistics.median_low(rates))]
    return {"flows": kind, "threads": threads, "num_envs": num_envs,
            "threads_laid_out": best["threads_laid_out"],
            "env_steps_per_s": round(statistics.median(rates), 1),
            "real_time_factor": round(best["real_time_factor"], 1),
            "runs": [round(r, 1) for r in rates]}


def speedups(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each thread count's median rate over one thread's, per flows and N."""
    one = {(r["flows"], r["num_envs"]): r["env_steps_per_s"] for r in results
           if r["threads"] == 1}
    return [{"flows": r["flows"], "num_envs": r["num_envs"], "threads": r["threads"],
             "over_one_thread": round(r["env_steps_per_s"] / one[(r["flows"], r["num_envs"])], 2)}
            for r in results if r["threads"] != 1 and (r["flows"], r["num_envs"]) in one]


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
    parser.add_argument("--seconds", type=float, default=2.0, help="measured time per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--threads", default="1,2,0",
                        help="C++ thread counts, comma-separated (0: the default choice)")
    parser.add_argument("--flows", default="single,multi", help="single, multi or single,multi")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="values of N")
    parser.add_argument("--policy", help="lstm (random weights) or a run folder; "
                                         "default: random actions, no policy")
    args = parser.parse_args()
    policy = load_policy(args.policy) if args.policy else None

    def make_chooser(rows: int) -> Chooser:
        return policy_actions(policy, rows) if policy else random_actions(rows)

    cases = [(kind, threads, n) for kind in args.flows.split(",")
             for threads in map(int, args.threads.split(",")) for n in map(int, args.sizes.split(","))]
    results = measure_rounds(cases, args, make_chooser)
    print(json.dumps({"link": LINK, "actions": args.policy or "uniform random",
                      "cpus": os.cpu_count(), "machine": platform.machine(),
                      "loadavg_1min": round(os.getloadavg()[0], 2), "repeats": args.repeats,
                      "results": results, "speedups": speedups(results)}, indent=2))


if __name__ == "__main__":
    main()
