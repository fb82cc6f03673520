"""Same config, same seed, same policy: two trainings of one config on one machine write
bit-identical policy.pt, the second from the oracle cache the first one filled.

The config has what makes a training hard to repeat: Ray workers, each running several rollout
tasks in an order that depends on timing; links crossed with delays, buffers and ACK paths,
whose oracle windows come from searches (generated cellular traces and a Poisson link); and
the policy in the loop from the second iteration on. Each training runs in its own process,
as users run them, so that the second finds nothing in memory and everything on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from ccgym.train.config import parse_config, to_toml
from ccgym.train.run_folder import MACHINE_FILE

CLI = [sys.executable, "-m", "ccgym.cli"]
RUN_TIMEOUT_S = 600  # a busy machine; a run takes well under a minute on an idle one

LINK_SET = """\
group = "determinism"
description = "two short generated cellular traces and a Poisson link"

[[link]]
name = "cellular-a"
delay_ms = 20
synthetic_trace = { model = "cellular", mean_mbps = 6.0, seed = 11, duration_s = 6 }
ack_synthetic_trace = { model = "cellular", mean_mbps = 6.0, seed = 11, duration_s = 6 }

[[link]]
name = "cellular-b"
delay_ms = 20
synthetic_trace = { model = "cellular", mean_mbps = 12.0, seed = 12, duration_s = 6 }

[[link]]
name = "poisson"
delay_ms = 20
rate_mbps = 8
delivery = "poisson"
"""

CONFIG = {
    # Four rollout tasks per iteration on two workers.
    "run": {"name": "determinism", "seed": 5, "workers": 2, "iterations": 3, "num_envs": 4,
            "episode_ms": 2000.0, "patience": 10},
    # 3 links x 2 delays x 2 buffers x 2 ACK paths: 24 training links.
    "links": {"train": "links.toml", "vary_delay_ms": [10.0, 40.0], "vary_queue_bdp": [0.0, 1.0],
              "vary_ack": ["own", "clean"],
              "validation": ["name=v-poisson,rate_mbps=10,delivery=poisson,delay_ms=25",
                             "name=v-droptail,rate_mbps=15,delay_ms=30,queue=droptail:packets=40"]},
    "model": {"hidden_size": 16, "head": "log_change"},
    "dagger": {"rollouts_per_iteration": 16, "epochs": 2, "batch_size": 4, "beta_decay": 0.5,
               "oracle_duration_s": 2.0,
               "oracle_lookbacks": [1.0], "random_start": 0.5},
    "eval": {"duration_s": 2.0, "baselines": [], "oracle": False, "leaderboard": False},
}


def train_once(config: Path, out: Path) -> Path:
    """One `ccgym train` in its own process; its run folder."""
    result = subprocess.run([*CLI, "train", str(config), "--out", str(out), "--no-progress"],
                            capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    [run_dir] = out.iterdir()
    return run_dir


def searches(cache: Path) -> dict[str, int]:
    """The oracle's cached searches: file name -> modification time (ns)."""
    return {p.name: p.stat().st_mtime_ns for p in sorted((cache / "oracle").glob("*.json"))}


def test_two_trainings_of_one_config_and_seed_write_the_same_policy(tmp_path: Path,
                                                                    monkeypatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CCGYM_CACHE", str(cache))  # inherited by the runs and their workers
    (tmp_path / "links.toml").write_text(LINK_SET)
    config = tmp_path / "determinism.toml"
    config.write_text(to_toml(parse_config(CONFIG, "determinism")))

    first = train_once(config, tmp_path / "first")
    filled = searches(cache)
    # The first run searched both kinds of oracle window and kept them on disk.
    assert any(name.startswith("trace-") for name in filled)
    assert any(name.startswith("fixed-") for name in filled)

    second = train_once(config, tmp_path / "second")
    assert searches(cache) == filled  # read, none searched or written again

    def digest(run_dir: Path) -> str:
        return hashlib.sha256((run_dir / "policy.pt").read_bytes()).hexdigest()

    def history(run_dir: Path) -> list[dict[str, float]]:
        return torch.load(run_dir / "checkpoint.pt", weights_only=True)["history"]

    assert history(first) == history(second)  # every iteration's loss, agreement and score
    assert len(history(first)) == CONFIG["run"]["iterations"]
    assert digest(first) == digest(second)
    # Each run says what it ran on, so runs from other machines are not compared by mistake.
    machines = [json.loads((run / MACHINE_FILE).read_text()) for run in (first, second)]
    assert machines[0] == machines[1] and machines[0]["libraries"]["torch"]
