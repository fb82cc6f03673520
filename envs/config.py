"""The environments' one config object, EnvConfig: what every env of envs/ and the engine
under them (envs/engine.py) take, each field checked when it is built."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ccgym.config_fields import (NON_NEGATIVE, NON_NEGATIVE_INT, PROBABILITY, SHARES, at_least,
                                 between, broken_rule, optional, rule)
from ccgym.emulators import _core
from ccgym.emulators.link_names import resolve_entries
from ccgym.emulators.links import Link
from ccgym.envs.competitors import COMPETITOR_ENTRIES, NONE, STARTS
from ccgym.errors import UserError
from ccgym.oracle.ideal import LOOKBACKS

# Indigo's training grid: the links to learn on when none are named.
DEFAULT_LINKS = "indigo-synthetic"
_LINK_ENTRIES = rule(lambda v: isinstance(v, str) and v.strip() or (
    isinstance(v, (list, tuple)) and v and all(isinstance(e, str) and e.strip() for e in v)),
    "must be a link set name or path, or a non-empty list of link spec strings")


@dataclass
class EnvConfig:
    """The environment's one config object; every field is checked when it is built.

    links: spec strings, or the name/path of a link set (a string), or a list mixing
    both (an entry with '=' is a spec, any other a link set).
    """

    links: list[str] | str = field(default=DEFAULT_LINKS, metadata=_LINK_ENTRIES)
    episode_ms: float = field(default=10_000.0, metadata=at_least(_core.STEP_MS))
    initial_window: float = field(default=_core.INITIAL_WINDOW,
                                  metadata=between(_core.MIN_WINDOW, _core.MAX_WINDOW))
    throughput_weight: float = field(default=1.0, metadata=NON_NEGATIVE)
    delay_weight: float = field(default=1.0, metadata=NON_NEGATIVE)
    seed: int | None = field(default=None, metadata=optional(NON_NEGATIVE_INT))
    oracle_seed: int = field(default=1, metadata=NON_NEGATIVE_INT)
    # How long each oracle search run is; None: as `ccgym eval` runs the link (a trace
    # once, else 30 s). Shorter searches start training sooner on many non-BDP links.
    oracle_duration_ms: float | None = field(default=None,
                                             metadata=optional(at_least(_core.STEP_MS)))
    # Where a trace oracle may count its RTT, as shares of it behind now (oracle/ideal.py
    # LOOKBACKS); [1.0]: only the RTT behind now, an expert that never looks ahead.
    oracle_lookbacks: list[float] = field(default_factory=lambda: list(LOOKBACKS),
                                          metadata=SHARES)
    # The share of episodes that start from a random window (start_window) instead of
    # initial_window: windows far below or above the pipe, as after a cold start, an outage
    # or a drop in rate, which episodes starting at initial_window seldom reach.
    random_start: float = field(default=0.0, metadata=PROBABILITY)
    # What shares the link, drawn per episode (envs/competitors.py says how): entries of
    # "none", classic scheme specs, "self" / "self:N" (more learned flows), joined by "+".
    # ccgym/Link-v0 runs its flow alone: it takes only ["none"]; ccgym/SharedLink-v0 and the
    # multi-agent env (envs/multi_agent.py) take the rest.
    competitors: list[str] = field(default_factory=lambda: [NONE], metadata=COMPETITOR_ENTRIES)
    # Each competing flow's start relative to the learned flow's: "before", "with", "after".
    competitor_starts: list[str] = field(default_factory=lambda: ["with"], metadata=STARTS)
    # How far before or after (at most; drawn uniformly).
    competitor_stagger_ms: float = field(default=2000.0, metadata=NON_NEGATIVE)
    # The share of competing flows that stop before the episode's end.
    competitor_stop: float = field(default=0.0, metadata=PROBABILITY)

    def __post_init__(self) -> None:
        broken = broken_rule(self)
        if broken:
            raise ValueError(f"EnvConfig: {broken[0]} {broken[1]}")

    @classmethod
    def build(cls, config: Mapping[str, Any] | EnvConfig | None = None,
              **overrides: Any) -> EnvConfig:
        """A config from a dict, an EnvConfig or nothing, with keyword overrides."""
        if isinstance(config, EnvConfig):
            values = dataclasses.asdict(config)
        elif config is None:
            values = {}
        elif isinstance(config, Mapping):
            values = dict(config)
        else:
            raise ValueError(f"EnvConfig: config must be a dict or an EnvConfig, "
                             f"got {type(config).__name__}")
        values.update(overrides)
        valid = [f.name for f in dataclasses.fields(cls)]
        for key in values:
            if key not in valid:
                raise ValueError(f"EnvConfig: unknown key {key!r}; valid keys: {', '.join(valid)}")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def alone(self) -> bool:
        """No competitor in any episode: what ccgym/Link-v0 runs."""
        return all(e.strip() == NONE for e in self.competitors)

    def check_alone(self, env_id: str) -> None:
        """ValueError unless alone: env_id runs one flow only."""
        if not self.alone:
            raise ValueError(f"EnvConfig: competitors: {env_id} runs one flow alone; "
                             f"use ccgym/SharedLink-v0 or the multi-agent env, got "
                             f"{self.competitors!r}")

    @property
    def episode_steps(self) -> int:
        return math.ceil(self.episode_ms / _core.STEP_MS)


def resolve_env_links(links: list[str] | str) -> list[Link]:
    """The Link objects a config names; ValueError naming 'links' on any problem."""
    try:
        return resolve_entries(links)
    except UserError as e:
        raise ValueError(f"EnvConfig: links: {e}") from None
