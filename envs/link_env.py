"""One emulated link as a gymnasium environment: "ccgym/Link-v0".

Each episode runs one link, drawn by the env's np_random from the config's links, in
the virtual-time simulator with one "external" flow whose window the agent sets.

- observation: Box(OBS_DIM,) float32, as the C++ core computes it (the same code the UDP
  sender runs, observation version 4 of policies/cpp/features.hh): Indigo's state
  (queueing-delay EWMA, delivery-rate EWMA, sending-rate EWMA, window), then min RTT, the
  latest queueing delay, time since the last ACK, window over the measured pipe, a loss
  EWMA and the ACK trains' rate, then the previous action one-hot. Never recomputed here.
- action: Discrete(NUM_ACTIONS), ACTION_NAMES (/2, -10, -1, +0, +1, +10, x2), applied to the
  window by the C++ apply_action; one step is STEP_MS (10 ms) of virtual time.
- reward: the contest's objective, ln(throughput) - ln(delay), per step and normalized
  by the link, so that 0 is ideal on every link and rewards of links compare:

      reward = throughput_weight * ln(max(delivered, THROUGHPUT_FLOOR * rate) / rate)
             - delay_weight      * ln(max(delay, DELAY_FLOOR_MS) / max(propagation, DELAY_FLOOR_MS))

  delivered: Mbit/s delivered during the step; rate: the link's mean rate; delay: the mean
  one-way delay of the packets that arrived during the step, or, when none arrived, the
  previous step's delay plus STEP_MS (the contest's end-to-end delay grows 1 ms per ms
  while nothing arrives; the first step starts from the propagation delay); propagation:
  the link's one-way delay. The floor keeps an idle step finite (ln 0.01 = -4.6).
- info: ideal_window (the oracle's window now), expert_action (the action from the
  current window closest to it, grown at most to the policy's growth ceiling), window,
  link (name), delivered_mbps, delay_ms (the delay of the reward).
- episodes never terminate; they truncate after ceil(episode_ms / STEP_MS) steps.

Seeding: reset(seed=s) seeds np_random, which draws each episode's link and simulation
seed; a first reset without a seed uses the config's seed (if any). The same seed gives
the same rollout. The oracle's window of a link is computed once per link with the
config's oracle_seed, oracle_duration_ms and oracle_lookbacks (for links whose ideal is not
the BDP, a search of a few seconds at the first episode on that link; cached on disk).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ccgym.config_fields import (NON_NEGATIVE, NON_NEGATIVE_INT, PROBABILITY, SHARES, at_least,
                                 between, broken_rule, optional, rule)
from ccgym.emulators import _core
from ccgym.emulators.link_facts import bdp_packets, mean_rate_mbps
from ccgym.emulators.link_names import resolve_entries
from ccgym.emulators.links import Link
from ccgym.envs.competitors import COMPETITOR_ENTRIES, NONE, STARTS
from ccgym.errors import UserError
from ccgym.oracle.ideal import LOOKBACKS, IdealWindow, expert_action, ideal_window

# Indigo's training grid: the links to learn on when none are named.
DEFAULT_LINKS = "indigo-synthetic"
_LINK_ENTRIES = rule(lambda v: isinstance(v, str) and v.strip() or (
    isinstance(v, (list, tuple)) and v and all(isinstance(e, str) and e.strip() for e in v)),
    "must be a link set name or path, or a non-empty list of link spec strings")
# An idle step scores ln(1/100) on throughput rather than -inf.
THROUGHPUT_FLOOR = 0.01
# Delays are compared at millisecond resolution; this also covers links with no delay.
DELAY_FLOOR_MS = 1.0
BITS_PER_BYTE = 8
BITS_PER_KBIT = 1000  # bits per ms / 1000 = Mbit/s
# Episode simulation seeds are drawn below this bound (any non-negative int64 would do).
SIM_SEED_BOUND = 2**31
# A random start's window is drawn up to this many BDPs: from a window-limited trickle to
# a standing queue of three BDPs.
RANDOM_START_BDPS = 4.0
# ... and held for up to this long: Indigo's Poisson traces open with 1-3 s of a delivery
# every 100 ms, after which a policy that never met a long-held small window kept it.
RANDOM_START_HOLD_MS = 3000


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


# ---------------------------------------------------------------- shared with the vector env

@dataclass(frozen=True)
class LinkProfile:
    """What the reward and the expert need of a link, computed once per link."""

    name: str
    spec: str
    rate_mbps: float   # mean delivery rate: the throughput of a full link
    delay_ms: float    # one-way propagation delay
    ideal: IdealWindow


class LinkRates(Protocol):
    """What start_window needs of a link: Link-v0's LinkProfile or a shared link's profile."""

    @property
    def rate_mbps(self) -> float: ...

    @property
    def delay_ms(self) -> float: ...


def link_profile(link: Link, config: EnvConfig) -> LinkProfile:
    return _link_profile(link, config.oracle_seed, config.oracle_duration_ms,
                         tuple(config.oracle_lookbacks))


@lru_cache(maxsize=4096)
def _link_profile(link: Link, oracle_seed: int, oracle_duration_ms: float | None,
                  oracle_lookbacks: tuple[float, ...]) -> LinkProfile:
    delay = _core.parse_link_spec(link.spec).delay_ms
    return LinkProfile(link.name, link.spec, mean_rate_mbps(link.spec, oracle_seed), delay,
                       ideal_window(link.spec, oracle_seed, oracle_duration_ms, oracle_lookbacks))


# The scaled delay, rates and window have no upper bound; the largest float32 says so in
# a finite number, which tools that normalize by the bounds (and gymnasium's checker) accept.
UNBOUNDED = float(np.finfo(np.float32).max)


def observation_space() -> spaces.Box:
    """The scaled quantities are >= 0 and unbounded but the signed ones, each in [-1, 1]
    (features.hh's kObsSignedIndices, however many); the one-hot is in [0, 1]."""
    low = np.zeros(_core.OBS_DIM, np.float32)
    high = np.array([UNBOUNDED] * _core.OBS_SCALED + [1.0] * _core.NUM_ACTIONS, dtype=np.float32)
    signed = list(_core.OBS_SIGNED_INDICES)
    low[signed], high[signed] = -1.0, 1.0
    return spaces.Box(low=low, high=high, dtype=np.float32)


def check_render_mode(render_mode: str | None) -> None:
    """gymnasium.make passes render_mode (often None); there is nothing to render."""
    if render_mode is not None:
        raise ValueError(f"render_mode: ccgym/Link-v0 renders nothing, got {render_mode!r}")


def start_window(rng: np.random.Generator, profile: LinkRates,
                 config: EnvConfig) -> tuple[float, int]:
    """(window, steps it is held) at an episode's start: initial_window, not held, or for a
    random_start share of episodes a window drawn log-uniformly in [MIN_WINDOW,
    RANDOM_START_BDPS x the link's BDP], held for up to RANDOM_START_HOLD_MS (drawn
    uniformly) whatever the policy asks, so that the measured pipe settles on it as after
    a cold start or an outage. Nothing is drawn when the share is 0: such runs replay as
    before."""
    if config.random_start == 0.0 or rng.random() >= config.random_start:
        return config.initial_window, 0
    bdp = bdp_packets(profile.rate_mbps, profile.delay_ms)
    high = float(np.clip(RANDOM_START_BDPS * bdp, 2 * _core.MIN_WINDOW, _core.MAX_WINDOW))
    window = float(np.exp(rng.uniform(np.log(_core.MIN_WINDOW), np.log(high))))
    return window, int(rng.integers(int(RANDOM_START_HOLD_MS // _core.STEP_MS) + 1))


def draw_episode(rng: np.random.Generator, num_links: int) -> tuple[int, int]:
    """(link index, simulation seed) of the next episode."""
    index = int(rng.integers(num_links))
    return index, int(rng.integers(SIM_SEED_BOUND))


def delivered_mbps(delivered_bytes: Any) -> Any:
    return delivered_bytes * BITS_PER_BYTE / _core.STEP_MS / BITS_PER_KBIT


def step_delay_ms(mean_delay_ms: Any, previous_delay_ms: Any) -> Any:
    """The step's delay: its arrivals' mean one-way delay, else the last one plus STEP_MS."""
    return np.where(np.isnan(mean_delay_ms), previous_delay_ms + _core.STEP_MS, mean_delay_ms)


def step_reward(delivered: Any, delay_ms: Any, rate_mbps: Any, propagation_ms: Any,
                throughput_weight: float, delay_weight: float) -> Any:
    """The normalized per-step objective of the module docstring (arrays or scalars)."""
    throughput_term = np.log(np.maximum(delivered, THROUGHPUT_FLOOR * rate_mbps) / rate_mbps)
    delay_term = np.log(np.maximum(delay_ms, DELAY_FLOOR_MS)
                        / np.maximum(propagation_ms, DELAY_FLOOR_MS))
    return throughput_weight * throughput_term - delay_weight * delay_term


class RowRewards:
    """step_reward of many rows (learned flows) at once, from a VecSimulator step's
    statistics by column, whose STAT_DELIVERED_MBPS and STAT_DELAY_MS are delivered_mbps and
    step_delay_ms computed in C++. Its per-row constants are computed once per reset and
    both logarithms are one numpy call on contiguous arrays: five array operations a step
    rather than seventeen, on the vector envs' serial path. Each value goes through
    step_reward's operations, so the rewards are the same bits."""

    def __init__(self, rate_mbps: np.ndarray, propagation_ms: np.ndarray,
                 config: EnvConfig) -> None:
        rate_mbps = np.asarray(rate_mbps, dtype=np.float64)
        self._floor = np.stack([THROUGHPUT_FLOOR * rate_mbps,
                                np.full(len(rate_mbps), DELAY_FLOOR_MS)])
        self._scale = np.stack([rate_mbps, np.maximum(propagation_ms, DELAY_FLOOR_MS)])
        self._weights = np.stack([np.full(len(rate_mbps), config.throughput_weight),
                                  np.full(len(rate_mbps), config.delay_weight)])

    def __call__(self, columns: np.ndarray) -> np.ndarray:
        """Each row's reward, from the step's statistics (STAT_COLUMNS, rows)."""
        terms = np.maximum(columns[_MEASURED], self._floor)  # (2, rows): throughput, delay
        terms /= self._scale
        np.log(terms, out=terms)
        terms *= self._weights
        return np.subtract(terms[0], terms[1])


# RowRewards reads both measured statistics as one (2, rows) view.
assert _core.STAT_DELAY_MS == _core.STAT_DELIVERED_MBPS + 1
_MEASURED = slice(_core.STAT_DELIVERED_MBPS, _core.STAT_DELAY_MS + 1)


# ---------------------------------------------------------------- the environment

class LinkEnv(gym.Env[np.ndarray, np.int64]):
    """One link per episode; see the module docstring for spaces, reward and info."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, config: Mapping[str, Any] | EnvConfig | None = None,
                 render_mode: str | None = None, **kwargs: Any) -> None:
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.config = EnvConfig.build(config, **kwargs)
        self.config.check_alone("ccgym/Link-v0")
        self.links = resolve_env_links(self.config.links)
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(_core.NUM_ACTIONS)
        self._sim: Any = None
        self._profile: LinkProfile | None = None
        self._previous_action = _core.HOLD_ACTION
        self._previous_delay = 0.0
        self._steps = 0
        self._held_steps = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None and self._np_random is None:
            seed = self.config.seed
        super().reset(seed=seed)
        index, sim_seed = draw_episode(self.np_random, len(self.links))
        self._profile = link_profile(self.links[index], self.config)
        self._sim = _core.Simulator(self._profile.spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], sim_seed,
                                    False)
        window, self._held_steps = start_window(self.np_random, self._profile, self.config)
        self._sim.set_window(window)
        self._previous_action = _core.HOLD_ACTION
        self._previous_delay = self._profile.delay_ms
        self._steps = 0
        return self._observation(), self._info(0.0, self._previous_delay)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < _core.NUM_ACTIONS:  # the C++ side indexes its action table with it
            raise ValueError(f"action must be in [0, {_core.NUM_ACTIONS}), got {action!r}")
        if self._steps < self._held_steps:
            a = _core.HOLD_ACTION
        sim = self._sim
        sim.clear_step_stats()
        sim.take_action(a)
        sim.run_until(sim.now_ms + _core.STEP_MS)
        self._previous_action = a
        self._steps += 1

        stats = sim.step_stats()
        mean_delay = (stats["delay_sum_ms"] / stats["arrivals"] if stats["arrivals"]
                      else math.nan)
        delay = float(step_delay_ms(mean_delay, self._previous_delay))
        self._previous_delay = delay
        delivered = float(delivered_mbps(stats["delivered_bytes"]))
        p = self._link()
        reward = float(step_reward(delivered, delay, p.rate_mbps, p.delay_ms,
                                   self.config.throughput_weight, self.config.delay_weight))
        truncated = self._steps >= self.config.episode_steps
        return self._observation(), reward, False, truncated, self._info(delivered, delay)

    def _observation(self) -> np.ndarray:
        return np.asarray(self._sim.observation(self._previous_action), dtype=np.float32)

    def _info(self, delivered: float, delay_ms: float) -> dict[str, Any]:
        window = float(self._sim.window())
        ideal = float(self._link().ideal.window(self._sim.now_ms))
        return {"ideal_window": ideal, "expert_action": self.expert_action(), "window": window,
                "link": self._link().name, "delivered_mbps": delivered, "delay_ms": delay_ms}

    def expert_action(self) -> int:
        """The oracle's action now (as in the last info)."""
        window = float(self._sim.window())
        return expert_action(window, self._link().ideal.window(self._sim.now_ms),
                             self._sim.growth_ceiling())

    def _link(self) -> LinkProfile:
        # reset sets it, with the simulator that every call after reset needs as well
        assert self._profile is not None, "reset() the environment first"
        return self._profile
