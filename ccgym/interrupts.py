"""Ctrl-C before a verb's work starts, and SIGTERM handled like Ctrl-C, for commands that start
processes (Ray, the UDP endpoints). Imports stay light: the console script imports this module
first of all (ccgym/console.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

INTERRUPTED_STATUS = 130  # what a shell reports for a process ended by SIGINT
REPEAT_INTERRUPT_S = 0.05  # a Ctrl-C held back by an import comes again this much later


def quit_interrupted(signum: int, frame: object) -> None:
    """SIGINT while there is nothing to clean up (modules being imported, the command line
    parsed): "ccgym VERB: interrupted" and exit status 130 at once, with no traceback."""
    verb = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1].isalpha() else ""
    os.write(2, f"ccgym{' ' + verb if verb else ''}: interrupted\n".encode())
    os._exit(INTERRUPTED_STATUS)


def interrupt_outside_imports(signum: int, frame: FrameType | None) -> None:
    """SIGINT while a verb works: KeyboardInterrupt, so that its cleanup runs. Not inside an
    import, though: raised there, within torch's C++ start-up, pybind11 aborts the process
    (status -6, 1 of 120 timed interrupts of `import torch`). The signal comes again 50 ms
    later, until the import has ended."""
    if _importing(frame):
        again = threading.Timer(REPEAT_INTERRUPT_S, os.kill, (os.getpid(), signum))
        again.daemon = True
        again.start()
        return
    raise KeyboardInterrupt


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def exit_status(status: int) -> int:
    """The process's exit status, for the console script and `python -m ccgym.cli`: after a
    verb has reported "interrupted", status 130 at once. Python ends itself by SIGINT at exit
    when it judges a KeyboardInterrupt unhandled, and it can judge so of one the verb handled
    (CI saw a -2 after "ccgym search: interrupted"): a script waiting on ccgym must see 130."""
    if status == INTERRUPTED_STATUS:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED_STATUS)
    return status


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt, so that cleanup code (stopping Ray,
    stopping the endpoints) runs as it does on Ctrl-C. Off the main thread, where Python
    cannot install handlers, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def handlers_kept(signals: Sequence[int] = (signal.SIGTERM,)) -> Iterator[None]:
    """After the block, `signals` have the handlers they had before it. For ray.init, whose C++
    core puts abseil's failure handler on SIGTERM (a stack dump, then an abort 3 s later, before
    any cleanup: `ccgym train` died so of SIGABRT, its resume hint unsaid) and
    whose driver puts a Python handler of its own there, so that a command's own handling
    (sigterm_as_interrupt) stays in force. Off the main thread it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.getsignal(signum) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in before.items():
            if handler is not None:  # None: set outside Python, nothing Python can put back
                signal.signal(signum, handler)


@contextmanager
def interrupt_after(on_signal: Callable[[], None], signals: Sequence[int]) -> Iterator[None]:
    """Within the block, each of `signals` calls on_signal() (which should end what the block
    waits for: kill its child) instead of raising; KeyboardInterrupt is raised once the block
    has ended. For blocks that wait on a subprocess: an exception raised inside
    Popen.wait(timeout) can leave the Popen's wait lock held (Python 3.11: 2 of 5000 timed
    interrupts), and a cleanup's wait then blocks for ever. Main thread only."""
    received: list[int] = []

    def remember(signum: int, frame: object) -> None:
        received.append(signum)
        on_signal()

    previous = {signum: signal.signal(signum, remember) for signum in signals}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        raise KeyboardInterrupt
