"""Reliability: bad input, fuzzing, and processes killed at random moments.

1. Bad inputs: every case of tests/ccgym/test_bad_inputs.py (what a new user tried), per
   class: how many ended in a clean error (exit status 2, one line naming the mistake as the
   test expects, no traceback). Goal: all.
2. Fuzzing: scripts/fuzz.sh for --fuzz-seconds per libFuzzer harness (trace loader, link spec
   and queue spec parsers, wire decoders, the sender's ONNX reader and runtime): executions
   and crashes. Goal: 0 crashes.
3. `ccgym train` killed with SIGKILL at a random moment, then `--resume`d to the end, --kills
   times: iterations that had finished (announced, so checkpointed) but were lost, and whether
   the final weights equal an uninterrupted run's. Goal: 0 lost, all equal.
4. `ccgym run` killed with SIGKILL at a random moment, --kills times: endpoint processes still
   alive and UDP ports still bound 10 s later. Goal: 0 and 0.
5. Outputs: every verb's output (tests/ccgym/outputs.py: eval --json, links show --json,
   report -o, export -o, calibrate -o, oracle --json) written to a FIFO with a reader, a
   symlink, '-', /dev/fd/N of a pipe, a read-only folder and one of its own inputs; per kind
   of path, how many ended clean (the node kept, the content whole, exit status 0 or 2, no
   traceback). Goal: all.
6. The user's folders: every verb that writes a folder (eval --plots, links generate --out,
   run --logs, shell --log) given a folder of the user's own files, directly, through a
   symlink, and with --force: how many ended clean (exit status 2 in one line, or 0 with
   --force) with every file of the user's unchanged byte for byte (with --force: every file
   of a name ccgym does not write). Goal: all.
7. Ctrl-C at a random moment of `ccgym train`'s first 3 s (imports, parsing, setup) once
   its console script is loaded, --kills times: how many ended in one line "interrupted"
   (exit status 130), or finished (0), with no traceback. Goal: all.
8. The reader of standard output gone before the command starts (`| head -1` at its
   earliest), per verb: how many ended with exit status 0 and nothing said. Goal: all.

Prints one JSON object (progress on stderr). Takes about 4 x --fuzz-seconds plus a minute per
kill on 2 cores.

  python benchmarks/bench_reliability.py [--kills 20] [--fuzz-seconds 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "ccgym.cli"]
TRAIN_DOC = {
    "run": {"name": "kill", "seed": 3, "workers": 0, "iterations": 4, "num_envs": 4,
            "episode_ms": 2000.0},
    "links": {"train": ["rate_mbps=12,delay_ms=20", "rate_mbps=24,delay_ms=10"],
              "validation": ["name=held-out,rate_mbps=18,delay_ms=15"]},
    "model": {"hidden_size": 8},
    "dagger": {"rollouts_per_iteration": 4, "epochs": 2, "batch_size": 4,
               "holdout_fraction": 0.25},
    "eval": {"duration_s": 1.0, "baselines": [], "oracle": False, "leaderboard": False},
}
FUZZ_LINE = re.compile(r"fuzz: (\S+): (\d+) runs in (\S+) s, (\d+) crashes")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _load_test_module(name: str):
    path = REPO / "tests" / "ccgym" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- 1. bad inputs

def bad_inputs() -> dict[str, dict[str, int]]:
    from ccgym.cli import main

    cases = _load_test_module("test_bad_inputs")
    counts: dict[str, dict[str, int]] = {}
    for name, (argv, expected) in sorted(cases.CASES.items()):
        with tempfile.TemporaryDirectory() as folder:
            files = cases.make_bad_files(Path(folder))
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    status = main([arg.replace("{d}", str(files)) for arg in argv])
                except Exception as e:  # noqa: BLE001 - an escaped exception is a traceback
                    status, _ = 1, err.write(f"Traceback: {type(e).__name__}: {e}")
        lines = err.getvalue().strip().splitlines()
        # Clean: one line that names the mistake (the case's expected words), exit status 2.
        clean = (status == 2 and len(lines) == 1 and "Traceback" not in err.getvalue()
                 and expected in lines[0])
        entry = counts.setdefault(cases.input_class(name), {"tried": 0, "clean": 0})
        entry["tried"] += 1
        entry["clean"] += int(clean)
        if not clean:
            say(f"bad input {name!r}: status {status}: {err.getvalue()[-300:]}")
    return counts


# ---------------------------------------------------------------- 2. fuzzing

def fuzz(seconds: int) -> dict[str, dict[str, float]]:
    result = subprocess.run([str(REPO / "scripts" / "fuzz.sh"), str(seconds)],
                            capture_output=True, text=True)
    out: dict[str, dict[str, float]] = {}
    for line in result.stdout.splitlines():
        if match := FUZZ_LINE.match(line):
            out[match[1]] = {"runs": int(match[2]), "seconds": float(match[3]),
                             "crashes": int(match[4])}
        elif "crashed" in line:
            out[line.split(":")[1].strip()] = {"runs": None, "crashes": 1}
    if result.returncode != 0 and not out:
        raise SystemExit(f"scripts/fuzz.sh failed: {result.stderr[-2000:]}")
    return out


# ---------------------------------------------------------------- 3. train killed

def _weights(run_dir: Path) -> dict:
    from ccgym.train.config import load_config
    from ccgym.train.loop import load_checkpoint

    state = load_checkpoint(run_dir / "checkpoint.pt", load_config(run_dir / "config.toml"))
    return {"iteration": state.iteration, "weights": state.trainer.policy.state_dict()}


def _train(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "train", *args, "--no-progress", "--no-leaderboard"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)


class _Announcements:
    """The moments a training process says it made its run folder (stage 0) and finished
    iteration k (stage k), read from its stdout on a thread."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.start = time.monotonic()
        self.stages: dict[int, float] = {}
        self._thread = threading.Thread(target=self._read, args=(process.stdout,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            if line.startswith("run folder:"):
                self.stages[0] = time.monotonic() - self.start
            elif match := re.match(r"iteration (\d+):", line):
                self.stages[int(match[1])] = time.monotonic() - self.start

    def last(self) -> int:
        return max((k for k in self.stages if k > 0), default=0)

    def join(self) -> None:
        self._thread.join(timeout=5)


def _uninterrupted_runs(config: Path, iterations: int, env: dict,
                        work: Path) -> tuple[list[float], dict]:
    """Each stage's length in an uninterrupted run, and its final weights. Twice: the first
    run fills the oracle cache, so the second's stage times are the ones the killed runs (warm
    cache) have; both must end with the same weights."""
    import torch

    for attempt in ("cold", "reference"):
        reference = _train([str(config), "--out", str(work / attempt)], env)
        seen = _Announcements(reference)
        reference.wait()
        seen.join()
    # Stage k+1 runs from announcement k.
    stage_s = [seen.stages[k + 1] - seen.stages[k] for k in range(iterations)]
    [reference_dir] = (work / "reference").iterdir()
    [cold_dir] = (work / "cold").iterdir()
    expected = _weights(reference_dir)
    if not all(torch.equal(a, b) for a, b in zip(_weights(cold_dir)["weights"].values(),
                                                 expected["weights"].values())):
        raise SystemExit("two uninterrupted runs of the same config differ: not deterministic")
    return stage_s, expected


def _finish_killed_run(out: Path, config: Path, iterations: int, env: dict) -> tuple[Path, int]:
    """What a user does after a kill: resume the run (or start it again if it was killed
    before its folder held its config); the run folder and the iterations it had finished."""
    run_dirs = sorted(out.iterdir()) if out.exists() else []
    if not run_dirs or not (run_dirs[0] / "config.toml").exists():
        shutil.rmtree(out, ignore_errors=True)
        _train([str(config), "--out", str(out)], env).communicate()
        return sorted(out.iterdir())[0], 0
    checkpoint = run_dirs[0] / "checkpoint.pt"
    done = _weights(run_dirs[0])["iteration"] if checkpoint.exists() else 0
    if done < iterations:
        _train(["--resume", str(run_dirs[0])], env).communicate()
    return run_dirs[0], done


def train_kills(kills: int, rng: random.Random, work: Path) -> dict:
    import torch

    from ccgym.train.config import parse_config, to_toml

    config = work / "kill.toml"
    config.write_text(to_toml(parse_config(TRAIN_DOC)))
    iterations = TRAIN_DOC["run"]["iterations"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    stage_s, expected = _uninterrupted_runs(config, iterations, env, work)
    lost, equal, killed_with_checkpoint = 0, 0, 0
    for i in range(kills):
        out = work / f"kill-{i}"
        process = _train([str(config), "--out", str(out)], env)
        announced = _Announcements(process)
        # A random moment inside a random stage (setup and iteration 1, or a later iteration),
        # timed from that stage's start in this run: kills land where there is work to lose.
        stage = rng.randrange(iterations)
        while stage not in announced.stages and process.poll() is None:
            time.sleep(0.05)
        time.sleep(rng.uniform(0, stage_s[stage]))
        process.send_signal(signal.SIGKILL)
        process.wait()
        announced.join()
        run_dir, done = _finish_killed_run(out, config, iterations, env)
        killed_with_checkpoint += int(0 < done < iterations)
        lost += max(0, announced.last() - done)
        final = _weights(run_dir)
        same = final["iteration"] == expected["iteration"] and all(
            torch.equal(a, b) for a, b in zip(final["weights"].values(),
                                              expected["weights"].values()))
        equal += int(same)
        say(f"train kill {i + 1}/{kills}: in stage {stage}, killed after iteration {done} "
            f"(announced {announced.last()}), resumed weights {'equal' if same else 'DIFFER'}")
    return {"kills": kills, "iterations": iterations,
            "stage_s": [round(x, 1) for x in stage_s],
            "killed_between_checkpoints": killed_with_checkpoint, "iterations_lost": lost,
            "resumed_equal_to_uninterrupted": equal}


# ---------------------------------------------------------------- 4. run killed

def _children(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.add(int(entry.name))
                todo.append(int(entry.name))
    return found


def _udp_ports(pids: set[int]) -> set[int]:
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    ports = set()
    for line in Path("/proc/net/udp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes:
            ports.add(int(fields[1].split(":")[1], 16))
    return ports


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def run_kills(kills: int, rng: random.Random) -> dict:
    processes_left, ports_left, endpoints_seen = 0, 0, 0
    for i in range(kills):
        run = subprocess.Popen([*CLI, "run", "--link", "rate_mbps=12,delay_ms=20", "--scheme",
                                "cubic", "--duration-s", "20", "--no-progress"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + rng.uniform(1.0, 12.0)
        endpoints: set[int] = set()
        ports: set[int] = set()
        while time.monotonic() < deadline and run.poll() is None:
            endpoints |= _children(run.pid)
            ports |= _udp_ports(endpoints)
            time.sleep(0.2)
        run.send_signal(signal.SIGKILL)
        run.wait()
        endpoints_seen += len(endpoints)
        time.sleep(10)  # the endpoints' parent-death signal, then their exit
        alive = [pid for pid in endpoints if _alive(pid)]
        bound = [port for port in ports if not _port_free(port)]
        processes_left += len(alive)
        ports_left += len(bound)
        for pid in alive:  # this benchmark's own leftovers: do not let them pile up
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        say(f"run kill {i + 1}/{kills}: {len(endpoints)} endpoints seen, {len(alive)} left, "
            f"{len(bound)} of {len(ports)} ports still bound")
    return {"kills": kills, "endpoints_seen": endpoints_seen, "processes_left": processes_left,
            "ports_left": ports_left}


# ---------------------------------------------------------------- 5. outputs

def output_kinds(folder: Path) -> dict[str, dict[str, int]]:
    cases = _load_test_module("outputs")
    inputs = cases.make_inputs(folder / "output-inputs")
    counts: dict[str, dict[str, int]] = {}
    for verb in cases.VERBS.values():
        for kind in cases.KINDS:
            case_folder = folder / "output-case"
            outcome = cases.run_case(verb, kind, inputs, case_folder)
            cases.remove(case_folder)
            clean = cases.clean(verb, kind, outcome)
            entry = counts.setdefault(kind, {"tried": 0, "clean": 0})
            entry["tried"] += 1
            entry["clean"] += int(clean)
            if not clean:
                say(f"output {verb.name} to {kind}: {outcome}")
    return counts


# ---------------------------------------------------------------- 6. the user's folders

def users_folders(folder: Path) -> dict[str, dict[str, int]]:
    cases = _load_test_module("test_output_folders")
    counts: dict[str, dict[str, int]] = {}
    for name, (argv, replaced) in sorted(cases.FOLDER_VERBS.items()):
        for how in ("folder", "symlink", "force"):
            case = folder / "folder-case"
            own = cases.users_folder(case / "photos")
            given = case / "photos"
            if how == "symlink":
                given = case / "link"
                given.symlink_to(case / "photos")
            args = [a.replace("{dir}", str(given)) for a in argv]
            done = subprocess.run([*CLI, *(cases.with_force(args) if how == "force" else args)],
                                  capture_output=True, text=True)
            # With --force, files of the names the verb writes are replaced; every other kept.
            kept = {n: data for n, data in own.items() if how != "force" or n not in replaced}
            unchanged = cases.unchanged(case / "photos", kept)
            expected = 0 if how == "force" else 2
            clean = (done.returncode == expected and unchanged and "Traceback" not in done.stderr
                     and (how == "force" or len(done.stderr.strip().splitlines()) == 1))
            entry = counts.setdefault(how, {"tried": 0, "clean": 0})
            entry["tried"] += 1
            entry["clean"] += int(clean)
            if not clean:
                say(f"folder {name} by {how}: status {done.returncode}, the user's files "
                    f"unchanged: {unchanged}: {done.stderr[-300:]}")
            shutil.rmtree(case, ignore_errors=True)
    return counts


# ---------------------------------------------------------------- 7. Ctrl-C early

def early_interrupts(kills: int, rng: random.Random, folder: Path) -> dict[str, int]:
    """Through the console script (`ccgym`), timed from when its module is loaded (before
    that, Python itself is starting: tests/ccgym/test_interrupts.py)."""
    console = _load_test_module("test_interrupts").CONSOLE
    clean = 0
    for i in range(kills):
        out = folder / f"interrupt-{i}"
        process = subprocess.Popen([*console, "train", "--set", "run.iterations=1", "--set",
                                    "run.workers=0", "--out", str(out), "--no-progress",
                                    "--no-leaderboard"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        process.stderr.readline()  # "loaded"
        time.sleep(rng.uniform(0.0, 3.0))
        process.send_signal(signal.SIGINT)
        _, err = process.communicate()
        lines = err.strip().splitlines()
        ok = "Traceback" not in err and (process.returncode == 0 or (
            process.returncode == 130 and lines and lines[-1].endswith("interrupted")))
        clean += int(ok)
        if not ok:
            say(f"interrupt {i + 1}: status {process.returncode}: {err[-300:]}")
        shutil.rmtree(out, ignore_errors=True)
    return {"tried": kills, "clean": clean}


# ---------------------------------------------------------------- 8. the reader gone

def reader_gone(folder: Path) -> dict[str, int]:
    cases = _load_test_module("test_reader_gone")
    clean = 0
    for args in cases.VERBS:
        done = cases.run_with_reader_gone(args, folder)
        ok = done.returncode == 0 and b"Traceback" not in done.stderr \
            and b"error" not in done.stderr
        clean += int(ok)
        if not ok:
            say(f"reader gone: {' '.join(args)}: status {done.returncode}")
    return {"tried": len(cases.VERBS), "clean": clean}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20, help="kills of train and of run each")
    parser.add_argument("--fuzz-seconds", type=int, default=60, help="per libFuzzer harness")
    parser.add_argument("--seed", type=int, default=1, help="seed of the kill moments")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["bad_inputs", "fuzz", "train_kills", "run_kills", "outputs",
                                 "folders", "interrupts", "reader_gone"])
    args = parser.parse_args()
    rng = random.Random(args.seed)
    result: dict = {}
    with tempfile.TemporaryDirectory(prefix="ccgym-reliability-") as folder:
        os.environ.setdefault("CCGYM_CACHE", str(Path(folder) / "cache"))
        if "bad_inputs" not in args.skip:
            say("bad inputs ...")
            result["bad_inputs"] = bad_inputs()
        if "fuzz" not in args.skip:
            say(f"fuzzing, {args.fuzz_seconds} s per harness ...")
            result["fuzz"] = fuzz(args.fuzz_seconds)
        if "train_kills" not in args.skip:
            result["train_kills"] = train_kills(args.kills, rng, Path(folder))
        if "run_kills" not in args.skip:
            result["run_kills"] = run_kills(args.kills, rng)
        if "outputs" not in args.skip:
            say("outputs to every kind of path ...")
            result["outputs"] = output_kinds(Path(folder))
        if "folders" not in args.skip:
            say("the user's folders ...")
            result["folders"] = users_folders(Path(folder))
        if "interrupts" not in args.skip:
            say("Ctrl-C in the first seconds ...")
            result["interrupts"] = early_interrupts(args.kills, rng, Path(folder))
        if "reader_gone" not in args.skip:
            say("the reader of standard output gone ...")
            result["reader_gone"] = reader_gone(Path(folder))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
