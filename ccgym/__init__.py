"""ccgym: a training gym for machine-learned congestion control."""

__version__ = "0.1.0"
