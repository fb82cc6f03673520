"""The deploy tests stop programs with SIGINT, as Ctrl-C would. A test run started in the
background of a non-interactive shell (`pytest &` in a script) inherits SIGINT ignored, and
passes that on to every program it starts, so none of them would see Ctrl-C; here SIGINT is
handled again, so the programs under test start as they would from a terminal."""

import signal

import pytest


@pytest.fixture(autouse=True, scope="session")
def sigint_handled() -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
