"""The `ccgym` console script: Ctrl-C is one line and exit status 130 from its first moment.

It puts that handling in place (ccgym.interrupts.quit_interrupted) before ccgym.cli and a
verb's libraries (torch, matplotlib: seconds) are imported; ccgym.cli hands SIGINT back to
Python (KeyboardInterrupt, which runs every cleanup) only when the verb starts its work.
"""

import signal

from ccgym.interrupts import exit_status, quit_interrupted

# On import, not in main(): the console script imports this module and then calls main(), and
# a Ctrl-C between the two (a busy machine can hold the process there for milliseconds) would
# otherwise be Python's KeyboardInterrupt with a traceback. Only the console script imports it.
signal.signal(signal.SIGINT, quit_interrupted)


def main() -> int:
    from ccgym.cli import main as cli_main

    return exit_status(cli_main())
