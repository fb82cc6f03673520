"""Writing one verb's output to every kind of path, with real files, FIFOs, pipes and processes:
shared by tests/ccgym/test_outputs.py and benchmarks/bench_reliability.py.

Each case runs `ccgym VERB ... OUTPUT` in a subprocess and returns what a user would see: the
exit status, whether the node at the path is the same kind of node as before, and whether the
content arrived (parsed by the verb's own check). Nothing here replaces a part by a stand-in.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LINK = "rate_mbps=12,delay_ms=20"
RUN_S = "1"
KINDS = ("fifo", "symlink", "stdout", "devfd", "readonly", "input")
TIMEOUT_S = 600  # a busy machine: imports of torch alone can take a minute


@dataclass
class Verb:
    """A verb with one output: argv(inputs, out) makes its command line, `ok` checks bytes."""
    name: str
    argv: Callable[[dict[str, Path], str], list[str]]
    ok: Callable[[bytes], bool]
    suffix: str
    text: bool              # whether '-' (standard output) takes it
    input_key: str          # the input a symlinked output points at in the "input" case


def _json_rows(data: bytes) -> bool:
    rows = json.loads(data)
    return isinstance(rows, list) and any(r.get("scheme") == "omniscient" for r in rows)


def _onnx(data: bytes) -> bool:
    import onnx

    return len(onnx.load_model_from_string(data).graph.input) == 3


VERBS = {
    "eval --json": Verb("eval --json", lambda i, out: [
        "eval", "--links", str(i["links"]), "--schemes", "fixed:20", "--duration-s", RUN_S,
        "--no-progress", "--json", out], _json_rows, ".json", True, "links"),
    "links show --json": Verb("links show --json", lambda i, out: [
        "links", "show", "--links", str(i["links"]), "--json", out],
        lambda d: len(json.loads(d)["links"]) == 1, ".json", True, "links"),
    "report -o": Verb("report -o", lambda i, out: ["report", str(i["rows"]), "-o", out],
                      lambda d: d.startswith(b"<!DOCTYPE html>") and b"</html>" in d, ".html",
                      True, "rows"),
    "export -o": Verb("export -o", lambda i, out: ["export", str(i["policy"]), "--no-check",
                                                   "-o", out], _onnx, ".onnx", False, "policy"),
    "calibrate -o": Verb("calibrate -o", lambda i, out: [
        "calibrate", *map(str, i["measured"]), "--trials", "1", "--sim-runs", "1",
        "--no-progress", "-o", out],
        lambda d: len(tomllib.loads(d.decode())["link"]) == 1, ".toml", True, "measured0"),
    "search -o": Verb("search -o", lambda i, out: [
        "search", "--scheme", "fixed:5", "--space", str(i["space"]), "--baselines", "cubic",
        "--trials", "1", "--seeds", "1", "--duration-s", "1", "--no-progress", "-o", out],
        lambda d: len(tomllib.loads(d.decode())["link"]) == 1, ".toml", True, "space"),
    "links sample -o": Verb("links sample -o", lambda i, out: [
        "links", "sample", "--space", str(i["space"]), "--count", "2", "-o", out],
        lambda d: len(tomllib.loads(d.decode())["link"]) == 2, ".toml", True, "space"),
    "oracle --json": Verb("oracle --json", lambda i, out: [
        "oracle", "--links", str(i["links"]), "--duration-s", RUN_S,
        "--no-progress", "--json", out], lambda d: len(json.loads(d)) == 1, ".json", True,
        "links"),
}


def make_inputs(folder: Path) -> dict[str, Path]:
    """Small real inputs for every verb: a link set, eval rows, a policy, measured runs, a
    link space."""
    folder.mkdir(parents=True, exist_ok=True)
    links = folder / "set.toml"
    links.write_text('group = "g"\ndescription = "one link"\n'
                     '[[link]]\nname = "l"\nrate_mbps = 12\ndelay_ms = 20\n')
    rows = folder / "rows.json"
    rows.write_text(json.dumps([
        {"link": "l", "scheme": "omniscient", "runs": 1, "throughput_mbps": 12.0,
         "delay_p95_ms": 20.0, "e2e_delay_p95_ms": 20.0, "score": -0.5},
        {"link": "l", "scheme": "cubic", "runs": 1, "throughput_mbps": 11.0,
         "delay_p95_ms": 90.0, "e2e_delay_p95_ms": 95.0, "score": -2.1}]))
    policy = folder / "policy.pt"
    subprocess.run([sys.executable, "-c", "import sys; from ccgym.policies.lstm import "
                    "LstmPolicy; LstmPolicy(hidden_size=8).save(sys.argv[1])", str(policy)],
                   check=True, timeout=TIMEOUT_S)
    measured = []
    for scheme, tput, delay in (("cubic", 9.5, 60.0), ("fixed:20", 8.0, 30.0)):
        path = folder / f"{scheme.replace(':', '_')}.json"
        path.write_text(json.dumps([
            {"link": LINK, "scheme": "omniscient", "runs": 1, "throughput_mbps": 10.0,
             "delay_p95_ms": 20.0},
            {"link": LINK, "group": "command-line", "scheme": scheme, "runs": 1,
             "throughput_mbps": tput, "delay_p95_ms": delay, "mode": "real-time",
             "clock": "synchronized", "duration_s": 2.0, "seed": 1}]))
        measured.append(path)
    space = folder / "space.toml"
    space.write_text('rate_mbps = 12\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n')
    return {"links": links, "rows": rows, "policy": policy, "measured": measured,
            "measured0": measured[0], "space": space}


@dataclass
class Outcome:
    status: int
    node_kept: bool     # the node at the path is what it was (or nothing was created)
    arrived: bool       # the content reached the reader or the file, and parses
    stderr: str


def ccgym(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "ccgym.cli", *args], capture_output=True,
                          timeout=TIMEOUT_S, env=env, **kwargs)


def run_case(verb: Verb, kind: str, inputs: dict[str, Path], folder: Path) -> Outcome:
    """`verb` writing to a path of `kind` inside `folder` (a fresh one)."""
    folder.mkdir(parents=True, exist_ok=True)
    return CASES[kind](verb, inputs, folder)


def _parses(verb: Verb, data: bytes) -> bool:
    try:
        return bool(data) and verb.ok(data)
    except Exception:  # any parse failure means the content did not arrive whole
        return False


def _fifo(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    path = folder / f"out{verb.suffix}"
    os.mkfifo(path)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(path.read_bytes()), daemon=True)
    reader.start()
    done = ccgym(verb.argv(inputs, str(path)))
    if reader.is_alive():  # the verb never opened the FIFO: let the reader go
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    reader.join(TIMEOUT_S)
    return Outcome(done.returncode, stat.S_ISFIFO(os.lstat(path).st_mode),
                   _parses(verb, got[0] if got else b""), done.stderr.decode())


def _symlink(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    (folder / "real").mkdir()
    target = folder / "real" / f"target{verb.suffix}"
    target.write_text("old")
    link = folder / f"out{verb.suffix}"
    link.symlink_to(target)
    done = ccgym(verb.argv(inputs, str(link)))
    kept = link.is_symlink() and os.readlink(link) == str(target)
    return Outcome(done.returncode, kept, _parses(verb, target.read_bytes()),
                   done.stderr.decode())


def _stdout(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    done = ccgym(verb.argv(inputs, "-"), cwd=folder)
    return Outcome(done.returncode, not (folder / "-").exists(), _parses(verb, done.stdout),
                   done.stderr.decode())


def _devfd(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    """As `--json >(consumer)`: the path is /dev/fd/N of a pipe the command inherits."""
    read_end, write_end = os.pipe()
    got: list[bytes] = []

    def consume() -> None:
        with os.fdopen(read_end, "rb") as f:
            got.append(f.read())
    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    try:
        done = subprocess.run([sys.executable, "-m", "ccgym.cli",
                               *verb.argv(inputs, f"/dev/fd/{write_end}")],
                              capture_output=True, timeout=TIMEOUT_S, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    reader.join(TIMEOUT_S)
    return Outcome(done.returncode, True, _parses(verb, got[0] if got else b""),
                   done.stderr.decode())


def _readonly(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    """A folder nobody may write into: a read-only bind mount for root (whom permissions do
    not stop), permissions otherwise."""
    locked = folder / "locked"
    locked.mkdir()
    done = run_read_only(locked, verb.argv(inputs, str(locked / f"out{verb.suffix}")))
    return Outcome(done.returncode, not any(locked.iterdir()), False, done.stderr.decode())


def run_read_only(locked: Path, args: list[str]) -> subprocess.CompletedProcess:
    """`ccgym ARGS` with `locked` read-only to it."""
    argv = [sys.executable, "-m", "ccgym.cli", *args]
    if os.geteuid() == 0:
        argv = ["unshare", "--mount", "sh", "-c",
                'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"',
                "sh", str(locked), *argv]
    else:
        locked.chmod(0o555)
    try:
        return subprocess.run(argv, capture_output=True, timeout=TIMEOUT_S)
    finally:
        locked.chmod(0o755)


def _input(verb: Verb, inputs: dict[str, Path], folder: Path) -> Outcome:
    """The output is one of the inputs, reached through a symlink with the output's suffix."""
    source = inputs[verb.input_key]
    before = source.read_bytes()
    link = folder / f"out{verb.suffix}"
    link.symlink_to(source)
    done = ccgym(verb.argv(inputs, str(link)))
    return Outcome(done.returncode, source.read_bytes() == before, False, done.stderr.decode())


CASES = {"fifo": _fifo, "symlink": _symlink, "stdout": _stdout, "devfd": _devfd,
         "readonly": _readonly, "input": _input}


def expected(verb: Verb, kind: str) -> tuple[int, bool]:
    """(exit status, whether the content arrives) a correct ccgym gives."""
    if kind in ("readonly", "input") or (kind == "stdout" and not verb.text):
        return 2, False
    return 0, True


def clean(verb: Verb, kind: str, outcome: Outcome) -> bool:
    status, arrives = expected(verb, kind)
    return (outcome.status == status and outcome.node_kept and outcome.arrived == arrives
            and "internal error" not in outcome.stderr and "Traceback" not in outcome.stderr)


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
