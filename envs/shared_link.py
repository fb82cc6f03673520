"""A link shared with competitors: "ccgym/SharedLink-v0" and the engine of the multi-agent env.

SharedLinkEnv is ccgym/Link-v0 with company: one learned flow (flow_0) among classic
competitors that the EnvConfig's `competitors` fields draw per episode (envs/competitors.py:
which schemes, when each starts and stops). Spaces, action semantics and the reward are
Link-v0's (envs/link_env.py), for the learned flow's own packets: it observes only what its
own sender measures, never the competitors' state. Entries with "self" need the multi-agent
env (envs/multi_agent.py), which drives several learned flows.

    env = gymnasium.make("ccgym/SharedLink-v0",
                         config={"links": ["rate_mbps=24,delay_ms=20,queue=droptail:packets=80"],
                                 "competitors": ["none", "cubic", "bbr", "vegas"],
                                 "competitor_starts": ["before", "with", "after"]})

info: window, link (name), competitors (the drawn entry), delivered_mbps, delay_ms (as
Link-v0's), active_flows (flows sending at the step's end, the learned one included),
capacity_mbps (what the link delivered or could have during the step) and fair_share_mbps =
capacity_mbps / active_flows: a reward that judges sharing can use it.

With competitors = ["none"] an episode is drawn and run exactly as ccgym/Link-v0's with the
same seed (tests/envs/test_shared_link.py). The DAgger expert of a shared link is each
learned flow's max-min fair window (oracle/shared.py says why): env.expert_action() here,
env.expert_actions() in the multi-agent env, SharedLinks.expert_actions() for every row; it
is not in info, so that episodes that are not labelled never pay for the link's oracle
(a search on a link that is not plain constant, cached).

SharedLinks steps N such simulations with all their learned flows ("rows", in simulation
order, then flow order) in one C++ call: the engine of this env, of the multi-agent env and
of benchmarks/bench_env.py --flows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ccgym.emulators import _core
from ccgym.envs.competitors import SELF, Scenario, draw_scenario, parse_entry
from ccgym.emulators.link_facts import mean_rate_mbps
from ccgym.emulators.links import Link
from ccgym.envs.link_env import (EnvConfig, LinkProfile, RowRewards, check_render_mode,
                                 delivered_mbps, draw_episode, link_profile, observation_space,
                                 resolve_env_links, start_window)
from ccgym.oracle.ideal import ConstantIdealWindow, IdealWindow, TraceIdealWindow
from ccgym.oracle.shared import fair_windows


@dataclass(frozen=True)
class SharedProfile:
    """What the reward needs of a link (Link-v0's LinkProfile without the oracle, which a
    shared link does not have), computed once per link."""

    name: str
    spec: str
    rate_mbps: float   # mean delivery rate: the throughput of a full link
    delay_ms: float    # one-way propagation delay


@lru_cache(maxsize=4096)
def shared_profile(link: Link, oracle_seed: int) -> SharedProfile:
    delay = _core.parse_link_spec(link.spec).delay_ms
    return SharedProfile(link.name, link.spec, mean_rate_mbps(link.spec, oracle_seed), delay)


@dataclass
class RowStep:
    """One step of every row (learned flow), arrays (rows,); done: per simulation."""

    obs: np.ndarray
    reward: np.ndarray
    delivered_mbps: np.ndarray
    delay_ms: np.ndarray
    window: np.ndarray
    active: np.ndarray          # bool: the flow sends at the step's end
    active_flows: np.ndarray
    capacity_mbps: np.ndarray
    fair_share_mbps: np.ndarray
    done: np.ndarray            # bool (sims,): the episode reached its length


class SharedLinks:
    """N simulations of shared links, all their learned flows stepped in one C++ call."""

    def __init__(self, num_sims: int, config: EnvConfig, threads: int = 1,
                 allow_self: bool = True,
                 profiles: Sequence[LinkProfile | SharedProfile] | None = None) -> None:
        """profiles: config.links already resolved (link_profile, with config's oracle
        settings), as a trainer's driver resolves them once for all its workers: used as
        they are, no spec parsed again; SharedProfiles have no expert (expert_actions
        refuses). None: config.links are resolved here."""
        self.config = config
        self._given = tuple(profiles) if profiles is not None else None
        self.links: list[Link] = [] if self._given else resolve_env_links(config.links)
        self.entries = [parse_entry(e) for e in config.competitors]
        if not allow_self and any(SELF in flows for flows in self.entries):
            raise ValueError(f"EnvConfig: competitors: 'self' needs the multi-agent env "
                             f"(envs/multi_agent.py), got {config.competitors!r}")
        self.num_sims = num_sims
        self.vec = _core.VecSimulator(num_sims, threads)
        self.scenarios: list[Scenario | None] = [None] * num_sims
        self.profiles: list[SharedProfile | None] = [None] * num_sims
        self.steps = np.zeros(num_sims, dtype=np.int64)
        self.held = np.zeros(num_sims, dtype=np.int64)   # see link_env.start_window
        self.link_index = np.zeros(num_sims, dtype=np.int64)
        self.begin_ms = np.zeros(num_sims)   # each simulation's clock at its first step
        self._reset: set[int] = set()
        self._row_sim = np.zeros(0, dtype=np.int64)
        self._rewards = RowRewards(np.zeros(0), np.zeros(0), config)
        self._constant_ideal = np.zeros(num_sims)
        self._varying_ideal: list[tuple[TraceIdealWindow, np.ndarray]] = []  # (window, its sims)
        self._ideal_grouped = False  # since the last reset

    def reset_sim(self, i: int, rng: np.random.Generator) -> None:
        """Draws simulation i's next episode (link, competitors) and runs it to its start."""
        index, sim_seed = draw_episode(rng, self.num_links)
        profile = self._shared_profile(index)
        window, self.held[i] = start_window(rng, profile, self.config)
        k = int(rng.integers(len(self.entries))) if len(self.entries) > 1 else 0
        c = self.config
        scenario = draw_scenario(rng, c.competitors[k], self.entries[k], c.competitor_starts,
                                 c.competitor_stagger_ms, c.competitor_stop,
                                 c.episode_steps * _core.STEP_MS)
        self.vec.reset_flows(i, profile.spec, sim_seed, [f.as_tuple() for f in scenario.flows],
                             window)
        if scenario.begin_ms > 0:
            self.vec.advance(i, scenario.begin_ms)
        self.scenarios[i], self.profiles[i] = scenario, profile
        self.link_index[i], self.begin_ms[i] = index, scenario.begin_ms
        self.steps[i] = 0
        self._reset.add(i)

    @property
    def num_links(self) -> int:
        return len(self._given) if self._given else len(self.links)

    def _shared_profile(self, index: int) -> SharedProfile:
        if self._given:
            given = self._given[index]
            if isinstance(given, SharedProfile):
                return given
            return SharedProfile(given.name, given.spec, given.rate_mbps, given.delay_ms)
        return shared_profile(self.links[index], self.config.oracle_seed)

    def _ideal_window(self, index: int) -> IdealWindow:
        if self._given:
            given = self._given[index]
            if not isinstance(given, LinkProfile):
                raise ValueError(f"{given.name}: resolved without its oracle, the link has no "
                                 "expert")
            return given.ideal
        return link_profile(self.links[index], self.config).ideal

    def episode(self, i: int) -> tuple[SharedProfile, Scenario]:
        """Simulation i's link and competitors, as reset_sim drew them."""
        profile, scenario = self.profiles[i], self.scenarios[i]
        assert profile is not None and scenario is not None, f"simulation {i} was never reset"
        return profile, scenario

    @property
    def num_rows(self) -> int:
        return int(self.vec.num_rows)

    def row_begin(self, i: int) -> int:
        return int(self.vec.row_begin(i))

    def observations(self) -> np.ndarray:
        return self.vec.observations()

    def first_step(self) -> RowStep:
        """The rows as they are after reset: observations, no reward, nothing delivered."""
        self._refresh_rows()
        zeros = np.zeros(self.num_rows)
        return self._row_step(self.vec.observations(), zeros, zeros, self.vec.stats().T)

    def step(self, actions: np.ndarray) -> RowStep:
        """Applies one action per row (-1 keeps the window) and steps every simulation."""
        self._refresh_rows()
        holding = self.steps < self.held
        if holding.any():  # only early in an episode with a random start (start_window)
            actions = np.where(holding[self._row_sim], _core.HOLD_ACTION, actions)
        actions = np.ascontiguousarray(actions, dtype=np.int32)
        rows = len(actions)
        obs = np.empty((rows, _core.OBS_DIM), dtype=np.float32)
        columns = np.empty((_core.STAT_COLUMNS, rows))
        self.vec.step(actions, obs, columns)
        self.steps += 1
        return self._row_step(obs, self._rewards(columns),
                              columns[_core.STAT_DELIVERED_MBPS], columns)

    def expert_windows(self) -> np.ndarray:
        """Each row's expert window now (oracle/shared.py), from the last step's statistics."""
        self._refresh_rows()
        stats = self.vec.stats()
        return fair_windows(self._ideal_windows()[self._row_sim], stats[:, _core.STAT_ACTIVE_FLOWS],
                            stats[:, _core.STAT_CLASSIC_FLOWS],
                            stats[:, _core.STAT_CLASSIC_IN_FLIGHT])

    def expert_actions(self) -> np.ndarray:
        """Each row's expert action (int64): the one closest to its expert window, within
        its growth ceiling; one C++ call for every row."""
        return self.vec.closest_actions(self.expert_windows()).astype(np.int64)

    def _ideal_windows(self) -> np.ndarray:
        """Each simulation's single-flow ideal window now: constant links' from the last
        refresh, one oracle call per other distinct link, all its simulations' clocks at once."""
        if not self._ideal_grouped:
            self._group_ideal_windows()
            self._ideal_grouped = True
        now = self.begin_ms + self.steps * _core.STEP_MS
        ideal = self._constant_ideal.copy()
        for window, sims in self._varying_ideal:
            ideal[sims] = window.windows(now[sims])
        return ideal

    def _group_ideal_windows(self) -> None:
        """The simulations' ideal windows by distinct link, as _ideal_windows reads them:
        looked up once per reset rather than on every step."""
        self._constant_ideal = np.zeros(self.num_sims)
        self._varying_ideal = []
        for index in np.unique(self.link_index):
            sims = self.link_index == index
            window = self._ideal_window(int(index))
            if isinstance(window, ConstantIdealWindow):
                self._constant_ideal[sims] = window.value
            else:  # ideal_window's other kind, a trace's schedule
                assert isinstance(window, TraceIdealWindow)
                self._varying_ideal.append((window, sims))

    def _row_step(self, obs: np.ndarray, reward: np.ndarray, delivered: np.ndarray,
                  columns: np.ndarray) -> RowStep:
        """columns: the statistics (STAT_COLUMNS, rows)."""
        active_flows = columns[_core.STAT_ACTIVE_FLOWS]
        capacity = delivered_mbps(columns[_core.STAT_CAPACITY_BYTES])
        return RowStep(obs, reward, delivered, columns[_core.STAT_DELAY_MS],
                       columns[_core.STAT_WINDOW],
                       columns[_core.STAT_ACTIVE] > 0, active_flows, capacity,
                       capacity / np.maximum(active_flows, 1),
                       self.steps >= self.config.episode_steps)

    def _refresh_rows(self) -> None:
        """Per-row link facts after resets (the C++ core keeps each row's delay)."""
        if not self._reset:
            return
        begins = [self.row_begin(i) for i in range(self.num_sims + 1)]
        row_sim, rate, propagation = [], [], []
        for i in range(self.num_sims):
            n = begins[i + 1] - begins[i]
            p = self.episode(i)[0]
            row_sim += [i] * n
            rate += [p.rate_mbps] * n
            propagation += [p.delay_ms] * n
        self._ideal_grouped = False  # regrouped when the expert is asked (not every run asks)
        self._row_sim = np.array(row_sim, dtype=np.int64)
        self._rewards = RowRewards(np.array(rate), np.array(propagation), self.config)
        self._reset.clear()


class SharedLinkEnv(gym.Env[np.ndarray, np.int64]):
    """One learned flow among classic competitors; see the module docstring."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, config: Mapping[str, Any] | EnvConfig | None = None,
                 render_mode: str | None = None, **kwargs: Any) -> None:
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.config = EnvConfig.build(config, **kwargs)
        self.core = SharedLinks(1, self.config, threads=1, allow_self=False)
        self.observation_space = observation_space()
        self.action_space = spaces.Discrete(_core.NUM_ACTIONS)

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None and self._np_random is None:
            seed = self.config.seed
        super().reset(seed=seed)
        self.core.reset_sim(0, self.np_random)
        rows = self.core.first_step()
        return rows.obs[0], self._info(rows)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < _core.NUM_ACTIONS:
            raise ValueError(f"action must be in [0, {_core.NUM_ACTIONS}), got {action!r}")
        rows = self.core.step(np.array([a], dtype=np.int32))
        return rows.obs[0], float(rows.reward[0]), False, bool(rows.done[0]), self._info(rows)

    def _info(self, rows: RowStep) -> dict[str, Any]:
        profile, scenario = self.core.episode(0)
        return row_info(rows, 0, profile.name, scenario.entry)

    def expert_action(self) -> int:
        """The DAgger expert's action for the learned flow now (oracle/shared.py)."""
        return int(self.core.expert_actions()[0])


def row_info(rows: RowStep, r: int, link: str, entry: str) -> dict[str, Any]:
    """Row r's info dict (the module docstring's keys)."""
    return {"window": float(rows.window[r]), "link": link, "competitors": entry,
            "delivered_mbps": float(rows.delivered_mbps[r]), "delay_ms": float(rows.delay_ms[r]),
            "active_flows": int(rows.active_flows[r]),
            "capacity_mbps": float(rows.capacity_mbps[r]),
            "fair_share_mbps": float(rows.fair_share_mbps[r])}
