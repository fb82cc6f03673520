"""Ray as training uses it: a local instance reachable from this machine only, a real cluster
joined through --ray-address (started here with `ray start`, as a user would), and a wrong
address failing within seconds."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ccgym.train.config import parse_config, to_toml
from ccgym.train.pool import RolloutPool
from processes import alive, descendants

CLI = [sys.executable, "-m", "ccgym.cli"]
TINY = {
    "run": {"name": "tiny", "seed": 3, "workers": 2, "iterations": 2, "num_envs": 2,
            "episode_ms": 1000.0},
    "links": {"train": ["rate_mbps=12,delay_ms=20", "rate_mbps=24,delay_ms=10"],
              "validation": ["name=held-out,rate_mbps=18,delay_ms=15"]},
    "model": {"hidden_size": 8},
    "dagger": {"rollouts_per_iteration": 4, "epochs": 1, "batch_size": 4,
               "holdout_fraction": 0.25},
    "eval": {"duration_s": 1.0, "baselines": [], "oracle": False, "leaderboard": False},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_addresses(pids: set[int]) -> set[str]:
    """The local addresses of the TCP sockets these processes listen on (from /proc)."""
    inodes = set()
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    addresses = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                raw = bytes.fromhex(local.split(":")[0][:width])
                words = [raw[i:i + 4][::-1] for i in range(0, len(raw), 4)]  # host order
                ip = socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6,
                                      b"".join(words))
                addresses.add(ip)
    return addresses


def test_local_ray_listens_on_loopback_only(monkeypatch, capfd) -> None:
    import ray

    if ray.is_initialized():
        pytest.skip("Ray is already running in this process")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)  # Ray's own default, as for a user
    with RolloutPool(workers=1) as pool:
        # A library function: workers import it by name (a test module is not on their path).
        assert pool.run(statistics.mean, [[1, 2], [3, 5]]) == [1.5, 4]
        addresses = listening_addresses(descendants(os.getpid()) | {os.getpid()})
        # Token authentication stays on, and Ray says nothing about it.
        assert pool.run(os.getenv, ["RAY_AUTH_MODE"]) == ["token"]
    assert addresses, "found no Ray server sockets"
    assert addresses <= {"127.0.0.1", "::ffff:127.0.0.1", "::1"}, addresses
    assert "Token authentication" not in capfd.readouterr().err


def test_a_ray_address_where_nothing_listens_fails_within_seconds(tmp_path: Path) -> None:
    config = tmp_path / "tiny.toml"
    config.write_text(to_toml(parse_config(TINY)))
    port = free_port()
    start = time.monotonic()
    result = subprocess.run([*CLI, "train", str(config), "--out", str(tmp_path / "runs"),
                             "--ray-address", f"127.0.0.1:{port}", "--no-progress"],
                            capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()[-1:]
    assert f"ray address 127.0.0.1:{port}: nothing answers there" in line
    assert "Traceback" not in result.stderr
    assert took < 60  # Ray alone retried for minutes; the check is a 5 s connect
    assert not (tmp_path / "runs").exists()  # checked before the run folder is made


TINY_PPO = {**TINY, "run": {**TINY["run"], "num_envs": 4, "episode_ms": 500.0},
            "algorithm": {"name": "ppo"}, "ppo": {"minibatch_size": 100}}


@pytest.mark.parametrize("doc", [TINY, TINY_PPO], ids=["dagger", "ppo"])
def test_sigterm_ends_a_training_as_ctrl_c_does(doc: dict, tmp_path: Path) -> None:
    """SIGTERM once Ray runs: the resume hint, status 130, no stack dump, Ray's processes gone.
    (Ray's core put abseil's handler on SIGTERM: a stack dump, then death by SIGABRT.)"""
    config = tmp_path / "tiny.toml"
    config.write_text(to_toml(parse_config({**doc, "run": {**doc["run"], "iterations": 50}})))
    train = subprocess.Popen([*CLI, "train", str(config), "--out", str(tmp_path / "runs"),
                              "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    watchdog = threading.Timer(300, train.kill)
    watchdog.start()
    try:
        assert train.stdout is not None
        for line in train.stdout:
            if line.startswith("iteration 1:"):
                break
        ray_processes = descendants(train.pid)
        assert ray_processes, "Ray's processes were not found"
        train.send_signal(signal.SIGTERM)
        _, stderr = train.communicate(timeout=120)
    finally:
        watchdog.cancel()
        train.kill()
    assert train.returncode == 130, stderr[-3000:]
    [run_dir] = (tmp_path / "runs").iterdir()
    assert f"continue with: ccgym train --resume {run_dir}" in stderr
    assert "SIGTERM received" not in stderr and "Traceback" not in stderr
    assert (run_dir / "checkpoint.pt").exists()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(map(alive, ray_processes)):
        time.sleep(0.5)
    assert not [p for p in ray_processes if alive(p)]


@pytest.fixture
def ray_cluster(tmp_path_factory: pytest.TempPathFactory):
    """`ray start --head` as a user starts it, with its own temp folder (so no other Ray on this
    machine sees it as the default cluster); stopped by its process group, not `ray stop`
    (which would stop every Ray on the machine)."""
    port = free_port()
    temp = Path(f"/tmp/ccgym-ray-{os.getpid()}")  # short: Ray's socket paths must fit 107 bytes
    ray_bin = Path(sys.executable).parent / "ray"
    head = subprocess.Popen([str(ray_bin), "start", "--head", "--block", "--port", str(port),
                             "--num-cpus", "2", "--include-dashboard", "false",
                             "--disable-usage-stats", "--temp-dir", str(temp)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if head.poll() is not None:
                pytest.fail(f"ray start failed: {head.stderr.read().decode()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("ray start --head did not listen within 60 s")
        yield f"127.0.0.1:{port}"
    finally:
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 10)):
            try:
                os.killpg(head.pid, sig)
            except ProcessLookupError:
                break
            try:
                head.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # The head's children (GCS, raylet, workers) share its process group.
        try:
            os.killpg(head.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        subprocess.run(["rm", "-rf", str(temp)], check=False)


def test_training_joins_a_real_cluster(ray_cluster: str, tmp_path: Path) -> None:
    from ccgym.train.config import load_config
    from ccgym.train.loop import load_checkpoint

    config = tmp_path / "tiny.toml"
    config.write_text(to_toml(parse_config(TINY)))
    out = tmp_path / "runs"
    result = subprocess.run([*CLI, "train", str(config), "--out", str(out), "--ray-address",
                             ray_cluster, "--no-progress"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    [run_dir] = out.iterdir()
    state = load_checkpoint(run_dir / "checkpoint.pt", load_config(run_dir / "config.toml"))
    assert state.iteration == 2
    assert state.trainer.dataset_size == 2 * 4 * 100  # every rollout came back from the cluster
