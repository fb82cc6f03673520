"""What shares the link with the learned flow: the EnvConfig's competitors, drawn per episode.

Config (fields of envs/config.py's EnvConfig):

    competitors = ["none", "cubic", "bbr", "copa", "vegas", "self", "self:2", "cubic+self"]
    competitor_starts = ["before", "with", "after"]
    competitor_stagger_ms = 2000.0
    competitor_stop = 0.25

- competitors: one entry is drawn per episode, uniformly. An entry is "none" (the learned
  flow alone), a classic scheme spec as `ccgym eval --schemes` takes it ("cubic",
  "fixed:window=20"), "self" (one more learned flow, driven by the same policy: the
  multi-agent env), "self:N" (N more), or several of these joined by "+", one flow each.
- competitor_starts: each competing flow draws its start, uniformly among these, relative to
  the episode's learned flow (flow_0): "before" (up to competitor_stagger_ms earlier,
  uniformly), "with" (at the same time), "after" (up to competitor_stagger_ms later).
- competitor_stop: the share of competing flows that stop before the episode ends, each at a
  time drawn uniformly between its start (or the episode's start, if later) and the end;
  the others run to the end. flow_0 never stops early.

The simulation's clock starts with the earliest flow. An episode starts when the first
learned flow does (the simulator runs alone up to then: competitors that started "before"
have built their queue) and lasts episode_ms. Learned flows that start later join then.

Draws, in this order, from the env's np_random after the link, the simulation seed and the
start window (as in ccgym/Link-v0): the entry, then for each competing flow in the entry's
order its start mode, its stagger, whether it stops early and when. A choice with one option,
a stagger of 0 and a stop share of 0 draw nothing, so with competitors = ["none"] an episode
is drawn exactly as ccgym/Link-v0 draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ccgym.config_fields import rule
from ccgym.emulators import _core

NONE = "none"
SELF = "self"
START_MODES = ("before", "with", "after")


def parse_entry(entry: str) -> tuple[str, ...]:
    """The competing flows of one entry: a scheme spec or SELF per flow. ValueError names
    the part that is wrong."""
    flows: list[str] = []
    for part in (p.strip() for p in entry.split("+")):
        if part == NONE:
            continue
        if part == SELF or part.startswith(SELF + ":"):
            count = part[len(SELF) + 1:] or "1"
            if not count.isdigit() or int(count) < 1:
                raise ValueError(f"competitor {part!r}: the count of 'self:N' must be >= 1")
            flows += [SELF] * int(count)
            continue
        try:
            _core.validate_classic_scheme(part)
        except ValueError as e:
            raise ValueError(f"competitor {part!r}: {e}") from None
        flows.append(part)
    return tuple(flows)


def entries_problem(entries: list[str]) -> str | None:
    """What is wrong with the first entry that does not parse (naming the part), or None."""
    for entry in entries:
        try:
            parse_entry(entry)
        except ValueError as e:
            return str(e)
    return None


# The shape; entries_problem says what is wrong inside an entry.
COMPETITOR_ENTRIES = rule(lambda v: isinstance(v, (list, tuple)) and len(v) > 0
                          and all(isinstance(e, str) and e.strip() for e in v),
                          "must be a non-empty list of 'none', 'self', 'self:N' or classic "
                          "scheme specs, each alone or joined by '+'")
STARTS = rule(lambda v: isinstance(v, (list, tuple)) and len(v) > 0
              and all(m in START_MODES for m in v),
              f"must be a non-empty list of {', '.join(START_MODES)}")


@dataclass(frozen=True)
class FlowPlan:
    """One flow of a simulation: what the simulator's flow tuple holds, and whether learned."""

    scheme: str       # _core.EXTERNAL_SCHEME for learned flows
    start_ms: float
    stop_ms: float    # -1: runs to the end
    learned: bool

    def as_tuple(self) -> tuple[str, float, float]:
        return (self.scheme, self.start_ms, self.stop_ms)


@dataclass(frozen=True)
class Scenario:
    """An episode's flows (flow 0: the learned flow_0) and its span on the simulation's clock."""

    entry: str
    flows: tuple[FlowPlan, ...]
    begin_ms: float   # the first step starts here: the first learned flow's start
    end_ms: float     # begin_ms + episode_ms


def draw_scenario(rng: np.random.Generator, entry: str, competing: tuple[str, ...],
                  starts: list[str], stagger_ms: float, stop_share: float,
                  episode_ms: float) -> Scenario:
    """The flows of one episode for a drawn entry; see the module docstring."""
    offsets = [_start_offset(rng, starts, stagger_ms) for _ in competing]
    origin = min([0.0, *offsets])
    learned = [0.0] + [o for o, scheme in zip(offsets, competing) if scheme == SELF]
    begin = min(learned) - origin
    end = begin + episode_ms
    flows = [FlowPlan(_core.EXTERNAL_SCHEME, 0.0 - origin, -1.0, True)]
    for scheme, offset in zip(competing, offsets):
        start = offset - origin
        stop = -1.0
        if stop_share > 0.0 and rng.random() < stop_share:
            stop = float(rng.uniform(max(start, begin), end))
        flows.append(FlowPlan(_core.EXTERNAL_SCHEME if scheme == SELF else scheme, start, stop,
                              scheme == SELF))
    return Scenario(entry, tuple(flows), begin, end)


def _start_offset(rng: np.random.Generator, starts: list[str], stagger_ms: float) -> float:
    """A competing flow's start relative to flow_0's (ms)."""
    mode = starts[int(rng.integers(len(starts)))] if len(starts) > 1 else starts[0]
    if mode == "with" or stagger_ms == 0.0:
        return 0.0
    gap = float(rng.uniform(0.0, stagger_ms))
    return -gap if mode == "before" else gap
