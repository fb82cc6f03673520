"""Nothing left behind by a killed command: the temporary folder of a SIGKILLed `ccgym run` and
the temporary file of a killed writer are removed by the next ccgym command or write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ccgym import files
from ccgym.deploy.harness import find_program
from ccgym.errors import UserError

CLI = [sys.executable, "-m", "ccgym.cli"]
TIMEOUT_S = 300


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_sigkilled_run_leaves_no_temporary_folder(tmp_path: Path) -> None:
    try:
        find_program("ccgym-sender")
    except UserError as e:
        pytest.skip(str(e))
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = subprocess.Popen([*CLI, "run", "--link", "rate_mbps=12,delay_ms=20", "--scheme",
                            "cubic", "--duration-s", "30", "--no-progress"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + TIMEOUT_S
    while not list(tmp_path.glob(f"ccgym-run-{run.pid}-*")):
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert list(tmp_path.glob("ccgym-run-*"))  # SIGKILL runs no cleanup: it is there
    done = subprocess.run([*CLI, "links"], capture_output=True, env=env, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.glob("ccgym-run-*"))


def test_a_live_process_keeps_its_temporary_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    dead = tmp_path / f"ccgym-run-{_dead_pid()}-abc"
    dead.mkdir()
    with files.temporary_folder("run") as mine:
        files.remove_stale_temporaries()
        assert Path(mine).is_dir()
        assert not dead.exists()


def test_a_killed_writers_temporary_file_goes_at_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    stale = tmp_path / f".out.json.{_dead_pid()}-x1y2.tmp"
    stale.write_text("half")
    files.atomic_write_json(target, {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
