import os
import signal
import subprocess
import sys
import time

import pytest

from ccgym.interrupts import (handlers_kept, interrupt_after, interrupt_outside_imports,
                              sigterm_as_interrupt)


def test_a_signal_in_the_block_calls_back_and_interrupts_only_once_the_block_has_ended():
    calls, finished = [], []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt):
        with interrupt_after(lambda: calls.append("killed"), [signal.SIGTERM]):
            os.kill(os.getpid(), signal.SIGTERM)
            finished.append(True)  # the block runs on past the signal
    assert calls == ["killed"] and finished == [True]
    assert signal.getsignal(signal.SIGTERM) is before


def test_without_a_signal_the_block_ends_normally():
    with interrupt_after(lambda: pytest.fail("called back without a signal"), [signal.SIGTERM]):
        pass


def test_handlers_kept_puts_back_the_handler_the_block_replaced():
    with sigterm_as_interrupt():
        ours = signal.getsignal(signal.SIGTERM)
        with handlers_kept():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as ray.init replaces it
        assert signal.getsignal(signal.SIGTERM) is ours
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)


def test_a_ctrl_c_during_an_import_interrupts_once_the_import_has_ended(tmp_path, monkeypatch):
    # A module whose import is interrupted halfway (as torch's C++ start-up would be).
    (tmp_path / "slow_to_import.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(0.2)\n"
        "FINISHED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    previous = signal.signal(signal.SIGINT, interrupt_outside_imports)
    try:
        with pytest.raises(KeyboardInterrupt):
            import slow_to_import  # noqa: F401
            time.sleep(2)  # the interrupt comes here
        assert sys.modules["slow_to_import"].FINISHED
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.modules.pop("slow_to_import", None)


# The console script as it is installed (`ccgym`, pyproject.toml's [project.scripts]), saying
# when its module is loaded: from then on every moment counts. (Before it, Python itself is
# starting and finding the package: a few milliseconds that no code of ccgym's can handle.)
CONSOLE = [sys.executable, "-c", "import sys; from ccgym.console import main; "
           "sys.stderr.write('loaded\\n'); sys.stderr.flush(); sys.exit(main())"]


@pytest.mark.parametrize("delay_s", [0.0, 0.1, 0.3, 0.6, 1.0, 1.5, 2.5])
def test_ctrl_c_at_any_moment_is_one_line_and_status_130(delay_s: float, tmp_path) -> None:
    """SIGINT while modules are imported (torch, for train), the command line parsed or the
    verb at work: "interrupted", exit status 130, never a traceback. A run that finished
    first exits 0."""
    argv = [*CONSOLE, "train", "--set", "run.iterations=1", "--set", "run.workers=0",
            "--out", str(tmp_path / "runs"), "--no-progress", "--no-leaderboard"]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert process.stderr is not None
    assert process.stderr.readline() == b"loaded\n"
    time.sleep(delay_s)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=600)
    text = err.decode()
    assert "Traceback" not in text, text
    assert process.returncode in (130, 0), text
    if process.returncode == 130:
        assert text.strip().splitlines()[-1].endswith("interrupted"), text
