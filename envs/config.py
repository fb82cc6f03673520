"""The environments' one config object, EnvConfig, and the links it names resolved once.

Every env of envs/ and the engine under them (envs/engine.py) take an EnvConfig; each field
is declared here once, with its rule and its description (a training config's [links]
competitor keys are these fields, train/sections.py). Its links are names (spec strings, link
sets) or LinkProfiles: links already resolved, with what an episode needs of each (its rate,
delay and ideal window). A trainer's driver resolves its links once (EnvConfig.resolved) and
hands the config to its workers, which then parse no link again.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ccgym.config_fields import (NON_NEGATIVE, NON_NEGATIVE_INT, PROBABILITY, SHARES, at_least,
                                 between, broken_rule, described, optional, rule)
from ccgym.emulators import _core
from ccgym.emulators.link_facts import mean_rate_mbps
from ccgym.emulators.link_names import resolve_entries
from ccgym.emulators.links import Link
from ccgym.envs.competitors import COMPETITOR_ENTRIES, NONE, STARTS, entries_problem
from ccgym.errors import UserError
from ccgym.oracle.ideal import LOOKBACKS, IdealWindow, ideal_window

# Indigo's training grid: the links to learn on when none are named.
DEFAULT_LINKS = "indigo-synthetic"


@dataclass(frozen=True)
class LinkProfile:
    """What an episode needs of a link, computed once per link; picklable, so that a driver
    resolves it once and its workers use it as it is."""

    name: str
    spec: str
    rate_mbps: float   # mean delivery rate: the throughput of a full link
    delay_ms: float    # one-way propagation delay
    ideal: IdealWindow | None  # the oracle's window; None: resolved without it (no expert)


# What an observation version may be: one the C++ features compute (features.hh).
OBSERVATION_VERSIONS = rule(lambda v: v in _core.OBS_DIMS,
                            f"must be one of {', '.join(map(str, _core.OBS_DIMS))}")


def _link_entries(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value.strip())
    return isinstance(value, (list, tuple)) and len(value) > 0 and (
        all(isinstance(e, str) and e.strip() for e in value)
        or all(isinstance(e, LinkProfile) for e in value))


@dataclass
class EnvConfig:
    """The environment's one config object; every field is checked when it is built."""

    links: list[str] | str | tuple[LinkProfile, ...] = described(
        DEFAULT_LINKS, "The links episodes draw from, uniformly: spec strings, or the name or "
        "path of a link set (a string), or a list mixing both (an entry with '=' is a spec, "
        "any other a link set); or LinkProfiles, links already resolved (resolved()).",
        rule(_link_entries, "must be a link set name or path, or a non-empty list of link "
                            "spec strings (or of LinkProfiles)"))
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
    observation_version: int = described(
        _core.OBSERVATION_VERSION, "What the learned flows observe (policies/cpp/features.hh, "
        "OBS_DIMS' keys): 4, or 6 with the readings that tell a competitor's standing queue from "
        "the flow's own ([model] observation_version).",
        OBSERVATION_VERSIONS)
    competitors: list[str] = described(
        [NONE], 'What shares the link with the learned flow in an episode: one entry drawn '
        'uniformly per episode (envs/competitors.py). "none": the flow alone; a classic '
        'scheme as `ccgym eval --schemes` takes it ("cubic", "bbr", "copa", "vegas", '
        '"fixed:window=20"); "self": one more flow driven by the policy being trained, '
        '"self:N": N more; several joined by "+" ("cubic+self"), one flow each. ccgym/Link-v0 '
        'and its vector env take only ["none"], ccgym/SharedLink-v0 no "self"; in training, '
        'any entry but "none" makes PPO train on shared links (train/ppo_multi.py) and DAgger '
        'label every learned flow with the shared expert (oracle/shared.py).',
        COMPETITOR_ENTRIES)
    competitor_starts: list[str] = described(
        ["with"], 'Each competing flow\'s start relative to the learned flow\'s, drawn '
        'uniformly among these: "before" (up to competitor_stagger_ms earlier), "with", '
        '"after" (up to competitor_stagger_ms later).', STARTS)
    competitor_stagger_ms: float = described(
        2000.0, "The most a competing flow starts before or after the learned flow, ms "
        "(drawn uniformly).", NON_NEGATIVE)
    competitor_stop: float = described(
        0.0, "The share of competing flows that stop before the episode ends, each at a time "
        "drawn uniformly after its start.", PROBABILITY)

    def __post_init__(self) -> None:
        broken = broken_rule(self)
        if broken:
            raise ValueError(f"EnvConfig: {broken[0]} {broken[1]}")
        problem = entries_problem(self.competitors)
        if problem:
            raise ValueError(f"EnvConfig: competitors: {problem}")

    @classmethod
    def build(cls, config: Mapping[str, Any] | EnvConfig | None = None,
              **overrides: Any) -> EnvConfig:
        """A config from a dict, an EnvConfig or nothing, with keyword overrides."""
        if isinstance(config, EnvConfig):
            values = {f.name: getattr(config, f.name) for f in dataclasses.fields(cls)}
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

    @property
    def profiles(self) -> tuple[LinkProfile, ...] | None:
        """The links as resolved LinkProfiles, when they are given so; else None."""
        links = self.links
        if isinstance(links, (list, tuple)) and links and isinstance(links[0], LinkProfile):
            return tuple(links)
        return None

    def named_links(self) -> list[Link]:
        """The Link objects the config names (not LinkProfiles); ValueError naming 'links'."""
        assert self.profiles is None, "the links are resolved already"
        try:
            return resolve_entries(self.links)  # type: ignore[arg-type]  # names, not profiles
        except UserError as e:
            raise ValueError(f"EnvConfig: links: {e}") from None

    def profile(self, link: Link, expert: bool = True) -> LinkProfile:
        """The link's profile with the config's oracle settings (computed once per link);
        without the expert, no oracle is asked (a link that is not plain constant would cost
        a search) and the profile's ideal is None."""
        if not expert:
            return _link_profile_without_oracle(link, self.oracle_seed)
        return _link_profile(link, self.oracle_seed, self.oracle_duration_ms,
                             tuple(self.oracle_lookbacks))

    def resolved(self, links: Sequence[Link] | None = None, expert: bool = True) -> EnvConfig:
        """This config with its links (or `links`, Link objects) resolved into LinkProfiles
        now: what a driver hands its workers, which then parse nothing. expert: False for
        rollouts that never ask the expert (a teacher labels them): no oracle runs."""
        if links is None and self.profiles is not None:
            return self
        chosen = self.named_links() if links is None else links
        return dataclasses.replace(self, links=tuple(self.profile(link, expert)
                                                     for link in chosen))


@lru_cache(maxsize=4096)
def _link_profile(link: Link, oracle_seed: int, oracle_duration_ms: float | None,
                  oracle_lookbacks: tuple[float, ...]) -> LinkProfile:
    parsed = _core.parse_link_spec(link.spec)  # what the rate, delay and oracle all read
    return LinkProfile(link.name, link.spec, mean_rate_mbps(parsed, oracle_seed), parsed.delay_ms,
                       ideal_window(parsed, oracle_seed, oracle_duration_ms, oracle_lookbacks))


@lru_cache(maxsize=4096)
def _link_profile_without_oracle(link: Link, oracle_seed: int) -> LinkProfile:
    parsed = _core.parse_link_spec(link.spec)
    return LinkProfile(link.name, link.spec, mean_rate_mbps(parsed, oracle_seed), parsed.delay_ms,
                       None)
