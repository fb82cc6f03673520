"""The `ccgym` console script: Ctrl-C is one line and exit status 130 from its first moment.

It puts that handling in place (ccgym.interrupts.quit_interrupted) before ccgym.cli and a
verb's libraries (torch, matplotlib: seconds) are imported; ccgym.cli hands SIGINT back to
Python (KeyboardInterrupt, which runs every cleanup) only when the verb starts its work.
"""

import signal

from ccgym.interrupts import exit_status, quit_interrupted


def main() -> int:
    signal.signal(signal.SIGINT, quit_interrupted)
    from ccgym.cli import main as cli_main

    return exit_status(cli_main())
