"""The classic schemes' catalog, read from the C++ core: the one list of schemes and their
parameters (name, default, valid range, meaning) that the factory checks specs against.

Everything that lists schemes — `ccgym eval`'s default baselines, `ccgym schemes`, the tests —
derives the list from here, so a scheme added in C++ appears everywhere at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from ccgym.emulators import _core


@dataclass(frozen=True)
class SchemeParam:
    name: str
    default: float
    help: str
    range: str  # as the factory's error messages say it: "> 0", "in (0, 1)"
    min: float | None  # None: unbounded
    max: float | None
    min_open: bool
    max_open: bool


@dataclass(frozen=True)
class Scheme:
    name: str
    summary: str
    params: tuple[SchemeParam, ...]

    @property
    def is_baseline(self) -> bool:
        # external: the learned flow's slot, its window set from outside: no baseline to score
        return self.name != _core.EXTERNAL_SCHEME


def scheme_catalog() -> list[Scheme]:
    """Every scheme the factory knows, in catalog order (external last)."""
    return [Scheme(entry["name"], entry["summary"],
                   tuple(SchemeParam(**p) for p in entry["params"]))
            for entry in _core.scheme_catalog()]


def baseline_schemes() -> list[str]:
    """The classic schemes a learned policy is scored against: the catalog without external."""
    return [s.name for s in scheme_catalog() if s.is_baseline]
