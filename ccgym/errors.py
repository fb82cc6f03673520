"""The one error type a user should see: a clear message and exit status 2."""


class UserError(Exception):
    """Bad input from the user (a trace, a link spec, a config, a flag).

    The message names the file, line or key that was wrong; the CLI prints it
    and exits with status 2, writing no partial output.
    """
