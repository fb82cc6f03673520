"""Value rules declared beside a config's fields and checked by one function, so that every
config (the training config's sections, the environment's EnvConfig) states its bounds the
same way, where the field is:

    seed: int = field(default=1, metadata=NON_NEGATIVE_INT)

Types of TOML values are checked when a file is read (train/config.py); these rules check
types too, for configs built from Python values (EnvConfig from an RLlib dict).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable
from dataclasses import field
from typing import Any


def rule(test: Callable[[Any], Any], text: str) -> dict[str, Any]:
    """Field metadata: value must pass test; text says what it must be ("must be positive")."""
    return {"rule": (test, text)}


def is_real(value: Any) -> bool:
    """A real number, infinities and NaN included (bool is an int in Python, but not one)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return is_real(value) and math.isfinite(value)


def is_count(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0


def at_least(low: float) -> dict[str, Any]:
    return rule(lambda v: is_number(v) and v >= low, f"must be a number >= {low:g}")


def between(low: float, high: float) -> dict[str, Any]:
    return rule(lambda v: is_number(v) and low <= v <= high,
                f"must be a number in [{low:g}, {high:g}]")


def optional(metadata: dict[str, Any]) -> dict[str, Any]:
    """The same rule, or None."""
    test, text = metadata["rule"]
    return rule(lambda v: v is None or test(v), f"{text} (or none)")


POSITIVE = rule(lambda v: is_number(v) and v > 0, "must be positive")
NON_NEGATIVE = rule(lambda v: is_number(v) and v >= 0, "must not be negative")
NON_NEGATIVE_INT = rule(is_count, "must not be negative")
PROBABILITY = rule(lambda v: is_number(v) and 0.0 <= v <= 1.0, "must be in [0, 1]")
SHARES = rule(lambda v: isinstance(v, (list, tuple)) and len(v) > 0
              and all(is_number(e) and 0.0 <= e <= 1.0 for e in v),
              "must be a non-empty list of numbers in [0, 1]")


def broken_rule(config: Any) -> tuple[str, str] | None:
    """The first field of a dataclass whose value breaks its rule: (name, "must ..., got V")."""
    for f in dataclasses.fields(config):
        if "rule" in f.metadata:
            value = getattr(config, f.name)
            test, text = f.metadata["rule"]
            if not test(value):
                return f.name, f"{text}, got {value!r}"
    return None


def about(text: str, value_rule: dict[str, Any] | None = None) -> dict[str, Any]:
    """Field metadata: its description (one paragraph) and its value rule, if any."""
    return {**(value_rule or {}), "doc": " ".join(text.split())}


def described(default: Any, text: str, value_rule: dict[str, Any] | None = None) -> Any:
    """A field with a default (a list is copied for each config), a description and a rule."""
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=about(text, value_rule))
    return field(default=default, metadata=about(text, value_rule))


def same_field(owner: type, name: str) -> Any:
    """A new field declared as the dataclass owner's `name` (default, rule, description): for a
    config that passes the value on to owner, so that the field is described in one place."""
    declared = {f.name: f for f in dataclasses.fields(owner)}[name]
    if declared.default_factory is not dataclasses.MISSING:
        return field(default_factory=declared.default_factory, metadata=declared.metadata)
    return field(default=declared.default, metadata=declared.metadata)
