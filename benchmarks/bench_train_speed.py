"""Rollout speed of the two trainers on the same links and cores: DAgger's Ray tasks against
PPO's RLlib env runners.

Both roll out the packaged quick config's training links (10 s episodes) with `--workers` Ray
workers of one CPU each and `--num-envs` episodes per worker and round, the LSTM policy choosing
every action (DAgger after its first iteration, when beta is about 0; PPO always, sampling).
env_steps_per_s is environment steps over the wall time of a round, after one warm-up round
(Ray actors start, simulators and oracle windows are built). For PPO the learner's update on
the round's episodes is timed too (RLlib's GAE, minibatches and epochs, in this process), and
the whole iteration's rate (sampling + learning), which is what TensorBoard's charts/SPS does
not count (it is the sampling rate, as DAgger's). PPO samples with ccgym's BatchedEnvRunner
(train/ppo_runner.py); --rllib-runner also times RLlib's own SingleAgentEnvRunner, the one it
replaces, in the same invocation ("ppo_rllib_runner"). ppo_multi_flow and dagger_multi_flow
are the trainers on shared links (--competitors, default two learned flows per simulation):
their env_steps_per_s counts simulation steps, flow_steps_per_s every learned flow's; PPO's
runner there is ccgym's BatchedMultiAgentEnvRunner (train/ppo_multi_runner.py). ppo_over_dagger
and ppo_multi_flow_over_dagger_multi_flow are the rate ratios, measured in the same invocation.
Prints one JSON object.

    .venv/bin/python benchmarks/bench_train_speed.py [--workers 2] [--num-envs 16] [--rounds 3]
        [--rllib-runner] [--competitors '["self"]']
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import time

import numpy as np
import torch

from ccgym.policies.lstm import LstmPolicy
from ccgym.train import dagger, ppo, ppo_multi
from ccgym.train.config import env_config, load_packaged_config, resolve_train_links, with_overrides
from ccgym.train.pool import RolloutPool

# A late DAgger iteration: beta = beta0 * decay^(k-1) is about 0, so the policy acts.
DAGGER_ITERATION = 20


def bench_dagger(config, links: list, rounds: int) -> dict[str, float]:
    torch.manual_seed(0)
    policy = LstmPolicy(config.model.hidden_size)
    rates, flow_rates = [], []
    env = env_config(config, links)
    with RolloutPool(config.run.workers) as pool:
        for k in range(rounds + 1):
            tasks = dagger.make_tasks(config, env, DAGGER_ITERATION + k, policy)
            started = time.perf_counter()
            results = pool.run(dagger.run_rollout, tasks)
            seconds = time.perf_counter() - started
            if k > 0:  # round 0 warms up
                steps = sum(t.num_envs * t.env_config.episode_steps for t in tasks)
                rates.append(steps / seconds)
                flow_rates.append(sum(r.env_steps for r in results) / seconds)
    return {"env_steps_per_s": float(np.mean(rates)), "rounds": rates,
            "flow_steps_per_s": float(np.mean(flow_rates))}


def flow_steps(episode) -> int:
    """Steps of every learned flow of an episode (multi-agent: each agent's)."""
    return episode.agent_steps() if hasattr(episode, "agent_episodes") else len(episode)


def rllib_sample(runner) -> tuple[list, int, float]:
    """sample_episodes on RLlib's own runner: one episode per slot, not reseeded (RLlib has no
    public door for that; the rate does not depend on it)."""
    started = time.perf_counter()
    episodes = runner.sample(num_episodes=runner.num_envs, explore=True)
    return episodes, sum(len(e) for e in episodes), time.perf_counter() - started


def bench_ppo(config, links: list, rounds: int, build=ppo.algorithm_config,
              rllib_runner: bool = False) -> dict[str, float]:
    from ray.rllib.env.single_agent_env_runner import SingleAgentEnvRunner
    from ray.rllib.utils.metrics import NUM_ENV_STEPS_SAMPLED_LIFETIME

    sample_rates, iteration_rates, learn_s, flow_rates = [], [], [], []
    with RolloutPool(config.run.workers):
        algo_config = build(config, env_config(config, links))
        if rllib_runner:
            algo_config.env_runners(env_runner_cls=SingleAgentEnvRunner)
        algo = algo_config.build_algo()
        try:
            total = 0
            for k in range(rounds + 1):
                started = time.perf_counter()
                results = algo.env_runner_group.foreach_env_runner(
                    rllib_sample if rllib_runner else functools.partial(
                        ppo.sample_episodes, seed=config.run.seed, iteration=k + 1),
                    local_env_runner=False)
                sampled = time.perf_counter()
                episodes = [e for r in results for e in r[0]]
                steps = sum(r[1] for r in results)
                total += steps
                algo.learner_group.update(
                    episodes=episodes, timesteps={NUM_ENV_STEPS_SAMPLED_LIFETIME: total},
                    num_epochs=config.ppo.num_epochs, minibatch_size=config.ppo.minibatch_size)
                algo.env_runner_group.sync_weights(
                    from_worker_or_learner_group=algo.learner_group, inference_only=True,
                    timeout_seconds=None)
                done = time.perf_counter()
                if k > 0:
                    sample_rates.append(steps / (sampled - started))
                    flow_rates.append(sum(map(flow_steps, episodes)) / (sampled - started))
                    iteration_rates.append(steps / (done - started))
                    learn_s.append(done - sampled)
        finally:
            algo.stop()
    return {"env_steps_per_s": float(np.mean(sample_rates)), "rounds": sample_rates,
            "flow_steps_per_s": float(np.mean(flow_rates)),
            "learner_update_s": float(np.mean(learn_s)),
            "iteration_env_steps_per_s": float(np.mean(iteration_rates))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (default 2)")
    parser.add_argument("--num-envs", type=int, default=16,
                        help="episodes per worker and round (default 16)")
    parser.add_argument("--rounds", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--rllib-runner", action="store_true",
                        help="also time PPO with RLlib's own env runner (before/after)")
    parser.add_argument("--competitors", type=json.loads, default=["self"],
                        help='PPO on shared links too, with these [links] competitors '
                             '(JSON, default \'["self"]\': two learned flows); [] skips it')
    args = parser.parse_args()
    if args.workers < 1 or args.num_envs < 1 or args.rounds < 1:
        parser.error("--workers, --num-envs and --rounds must be at least 1")
    torch.set_num_threads(1)
    n = args.num_envs
    config = with_overrides(load_packaged_config("quick"), **{
        "run.workers": args.workers, "run.num_envs": n,
        "dagger.rollouts_per_iteration": n * args.workers, "algorithm.name": "ppo",
        "ppo.minibatch_size": 4096})
    links = resolve_train_links(config)[0]
    out = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
           "workers": args.workers, "num_envs": n, "episode_ms": config.run.episode_ms,
           "links": "quick.toml train", "dagger": bench_dagger(config, links, args.rounds),
           "ppo": bench_ppo(config, links, args.rounds)}
    if args.competitors:
        # Shared links: the multi-agent env (train/ppo_multi.py); an env step is one step of
        # one simulation, a flow step one learned flow's.
        shared = with_overrides(config, **{"links.competitors": args.competitors})
        out["ppo_multi_flow"] = {"competitors": args.competitors, **bench_ppo(
            shared, links, args.rounds, build=ppo_multi.multi_algorithm_config)}
        out["dagger_multi_flow"] = {"competitors": args.competitors,
                                    **bench_dagger(shared, links, args.rounds)}
        out["ppo_multi_flow_over_dagger_multi_flow"] = (
            out["ppo_multi_flow"]["env_steps_per_s"]
            / out["dagger_multi_flow"]["env_steps_per_s"])
    out["ppo_over_dagger"] = out["ppo"]["env_steps_per_s"] / out["dagger"]["env_steps_per_s"]
    if args.rllib_runner:
        out["ppo_rllib_runner"] = bench_ppo(config, links, args.rounds, rllib_runner=True)
        out["ppo_rllib_runner_over_dagger"] = (out["ppo_rllib_runner"]["env_steps_per_s"]
                                               / out["dagger"]["env_steps_per_s"])
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
