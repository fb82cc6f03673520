"""What validation beside competitors ([eval] share_against) adds to a training iteration.

Times, for a packaged config (default mixed-bbr, which validates beside cubic and bbr), one
share validation (train/share_validation.py: each competitor first on each share link, the
policy 5 s later) and one validation alone on the config's validation links
(train/validation.py), with a fresh policy of the config's model on one torch thread, as the
training loop runs them ([run] torch_threads = 1). Each is run --repeats times; the medians are
reported, with the load average beside them. Without the shared data (CCGYM_DATA) validation
alone runs on the config's fallback links. Prints one JSON object.

    .venv/bin/python benchmarks/bench_share_validation.py [--config mixed-bbr] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import torch

from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import (load_packaged_config, resolve_share_links,
                                resolve_validation_links, with_overrides)
from ccgym.train.share_validation import validate_shares
from ccgym.train.validation import validate_policy


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="mixed-bbr")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = load_packaged_config(args.config)
    if not config.eval.share_against:
        config = with_overrides(config, **{"eval.share_against": ["cubic", "bbr"]})
    torch.set_num_threads(1)
    torch.manual_seed(1)
    policy = LstmPolicy(hidden_size=config.model.hidden_size, head=config.model.head,
                        observation_version=config.model.observation_version)
    ev = config.eval
    share_links = resolve_share_links(config)
    links, note = resolve_validation_links(config)
    shares_s = median_seconds(lambda: validate_shares(policy, share_links, ev, 1), args.repeats)
    alone_s = median_seconds(lambda: validate_policy(policy, links, ev.validation_length_s,
                                                     ev.runs, 1), args.repeats)
    print(json.dumps({
        "config": args.config, "competitors": ev.share_against, "share_links": len(share_links),
        "share_duration_s": ev.share_duration_s, "validation_links": len(links),
        "validation_duration_s": ev.validation_length_s, "fallback_note": note,
        "share_validation_s": round(shares_s, 3), "validation_alone_s": round(alone_s, 3),
        "share_over_alone": round(shares_s / alone_s, 3), "repeats": args.repeats,
        "load_average_1min": round(os.getloadavg()[0], 1)}))


if __name__ == "__main__":
    main()
