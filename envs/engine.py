"""The one simulation engine under every env of envs/, DAgger's rollouts and PPO's runners.

An Engine steps N simulations (VecSimulator, C++) in one call, each on a link drawn per
episode, with its learned flows ("rows", in simulation order, then flow order) among the
competitors its EnvConfig draws (envs/competitors.py). Everything an episode's rules say is
here, once: which link and simulation seed (draw_episode), the random start and how long it
is held (start_window), the competitors, the reward, the ideal window and the expert's
action. ccgym/Link-v0 (envs/link_env.py), its vector env (envs/vector.py),
ccgym/SharedLink-v0 (envs/shared_link.py) and the multi-agent env (envs/multi_agent.py) are
adapters that give an Engine gymnasium's or RLlib's shape.

- observation: Box(OBS_DIM,) float32, as the C++ core computes it (the same code the UDP
  sender runs, observation version 4 of policies/cpp/features.hh): Indigo's state
  (queueing-delay EWMA, delivery-rate EWMA, sending-rate EWMA, window), then min RTT, the
  latest queueing delay, time since the last ACK, window over the measured pipe, a loss
  EWMA and the ACK trains' rate, then the previous action one-hot. Never recomputed here.
  A flow observes only what its own sender measures, never the competitors' state.
- action: Discrete(NUM_ACTIONS), ACTION_NAMES (/2, -10, -1, +0, +1, +10, x2), applied to the
  window by the C++ apply_action; one step is STEP_MS (10 ms) of virtual time. -1 (an
  engine's row only) keeps the window.
- reward: the contest's objective, ln(throughput) - ln(delay), per step and normalized
  by the link, so that 0 is ideal on every link and rewards of links compare:

      reward = throughput_weight * ln(max(delivered, THROUGHPUT_FLOOR * rate) / rate)
             - delay_weight      * ln(max(delay, DELAY_FLOOR_MS) / max(propagation, DELAY_FLOOR_MS))

  delivered: Mbit/s the flow delivered during the step; rate: the link's mean rate; delay:
  the mean one-way delay of the flow's packets that arrived during the step, or, when none
  arrived, the previous step's delay plus STEP_MS (the contest's end-to-end delay grows 1 ms
  per ms while nothing arrives; the first step starts from the propagation delay);
  propagation: the link's one-way delay. The floor keeps an idle step finite (ln 0.01 =
  -4.6). The C++ step measures delivered and delay (VecSimulator's kStatDeliveredMbps and
  kStatDelayMs); Rewards computes the formula, nothing else does.
- expert: each learned flow's DAgger label, the action (within the flow's growth ceiling)
  whose window is closest to the expert's window: the link's ideal window (the oracle's) when
  the flow is alone, else its max-min fair window (oracle/shared.py says why).
- episodes never terminate; they truncate after ceil(episode_ms / STEP_MS) steps.

Links: the config's links resolved once into LinkProfiles (envs/config.py: name, spec, mean
rate, delay, ideal window), either given (a trainer's driver resolves them once for all its
workers: nothing is parsed again) or resolved here, each at its first episode. The oracle's window of
a link uses the config's oracle_seed, oracle_duration_ms and oracle_lookbacks (for links
whose ideal is not the BDP, a search of a few seconds; cached on disk).

Draws, per episode and simulation, from the generator its caller gives reset_sim: the link,
the simulation seed, the start window, then the competitors (envs/competitors.py). The same
generator state gives the same episode, whichever adapter runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from ccgym.emulators import _core
from ccgym.emulators.link_facts import bdp_packets
from ccgym.emulators.links import Link
from ccgym.envs.competitors import SELF, Scenario, draw_scenario, parse_entry
from ccgym.envs.config import EnvConfig, LinkProfile
from ccgym.oracle.ideal import ConstantIdealWindow, TraceIdealWindow
from ccgym.oracle.shared import fair_windows

# An idle step scores ln(1/100) on throughput rather than -inf.
THROUGHPUT_FLOOR = 0.01
# Delays are compared at millisecond resolution; this also covers links with no delay.
DELAY_FLOOR_MS = 1.0
# Episode simulation seeds are drawn below this bound (any non-negative int64 would do).
SIM_SEED_BOUND = 2**31
# A random start's window is drawn up to this many BDPs: from a window-limited trickle to
# a standing queue of three BDPs.
RANDOM_START_BDPS = 4.0
# ... and held for up to this long: Indigo's Poisson traces open with 1-3 s of a delivery
# every 100 ms, after which a policy that never met a long-held small window kept it.
RANDOM_START_HOLD_MS = 3000
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


def action_space() -> spaces.Discrete:
    return spaces.Discrete(_core.NUM_ACTIONS)


# ---------------------------------------------------------------- an episode's draws

def draw_episode(rng: np.random.Generator, num_links: int) -> tuple[int, int]:
    """(link index, simulation seed) of the next episode."""
    index = int(rng.integers(num_links))
    return index, int(rng.integers(SIM_SEED_BOUND))


def start_window(rng: np.random.Generator, profile: LinkProfile,
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


# ---------------------------------------------------------------- the reward

class Rewards:
    """The module docstring's reward of many rows at once, from a step's statistics by
    column (STAT_DELIVERED_MBPS and STAT_DELAY_MS, measured by the C++ step). Its per-row
    constants are computed once per reset and both logarithms are one numpy call on
    contiguous arrays: five array operations a step."""

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


# Rewards reads both measured statistics as one (2, rows) view.
assert _core.STAT_DELAY_MS == _core.STAT_DELIVERED_MBPS + 1
_MEASURED = slice(_core.STAT_DELIVERED_MBPS, _core.STAT_DELAY_MS + 1)
# Bytes over a step to Mbit/s: bytes x 8 / STEP_MS / 1000, as the C++ step's
# kStatDeliveredMbps (vec_simulator.hh).
BITS_PER_BYTE = 8
BITS_PER_KBIT = 1000


# ---------------------------------------------------------------- the engine

@dataclass
class RowStep:
    """One step of every row (learned flow): its observations, rewards and statistics, each
    an array (rows,) read from the step's columns when asked; done: per simulation."""

    obs: np.ndarray
    reward: np.ndarray
    columns: np.ndarray         # the step's statistics (STAT_COLUMNS, rows)
    done: np.ndarray            # bool (sims,): the episode reached its length

    @property
    def delivered_mbps(self) -> np.ndarray:
        return self.columns[_core.STAT_DELIVERED_MBPS]

    @property
    def delay_ms(self) -> np.ndarray:
        return self.columns[_core.STAT_DELAY_MS]

    @property
    def window(self) -> np.ndarray:
        return self.columns[_core.STAT_WINDOW]

    @property
    def active(self) -> np.ndarray:
        """bool: the flow sends at the step's end."""
        return self.columns[_core.STAT_ACTIVE] > 0

    @property
    def active_flows(self) -> np.ndarray:
        return self.columns[_core.STAT_ACTIVE_FLOWS]

    @property
    def capacity_mbps(self) -> np.ndarray:
        """What the link delivered or could have during the step, as the C++ step converts
        the delivered bytes."""
        return self.columns[_core.STAT_CAPACITY_BYTES] * BITS_PER_BYTE / _core.STEP_MS \
            / BITS_PER_KBIT

    @property
    def fair_share_mbps(self) -> np.ndarray:
        return self.capacity_mbps / np.maximum(self.active_flows, 1)


class Engine:
    """N simulations, all their learned flows stepped in one C++ call; see the module
    docstring."""

    def __init__(self, num_sims: int, config: EnvConfig, threads: int = 1,
                 allow_self: bool = True) -> None:
        """config's links as LinkProfiles (EnvConfig.resolved) are used as they are; named,
        they are resolved here, each link's profile at its first episode. threads:
        VecSimulator's (0: chosen by size)."""
        self.config = config
        given = config.profiles
        self._links: list[Link] = [] if given else config.named_links()
        self._profiles: list[LinkProfile | None] = (
            list(given) if given else [None] * len(self._links))
        self.entries = [parse_entry(e) for e in config.competitors]
        if not allow_self and any(SELF in flows for flows in self.entries):
            raise ValueError(f"EnvConfig: competitors: 'self' needs the multi-agent env "
                             f"(envs/multi_agent.py), got {config.competitors!r}")
        # Every flow alone on its link: one row per simulation, whose expert's window is
        # the link's ideal, known before the step, so the step's threads label it.
        self.alone = all(not flows for flows in self.entries)
        # Links resolved without the oracle (EnvConfig.resolved(expert=False)) have no expert.
        self.has_expert = not given or all(p.ideal is not None for p in given)
        self.num_sims = num_sims
        self.episode_steps = config.episode_steps
        self.vec = _core.VecSimulator(num_sims, threads)
        self.vec.set_observation_version(config.observation_version)
        self.scenarios: list[Scenario | None] = [None] * num_sims
        self.profiles: list[LinkProfile | None] = [None] * num_sims
        # Steps are counted on one clock (every step steps every simulation): a simulation's
        # steps are the clock less its value at the simulation's reset, worked out only when
        # read, so that a step adds 1 to one number rather than to an array.
        self._clock = 0
        self._start = np.zeros(num_sims, dtype=np.int64)
        self._first_end = self.episode_steps  # the clock when the first episode reaches its length
        self.held = np.zeros(num_sims, dtype=np.int64)   # see start_window
        self._any_held = False  # some simulation may still hold its start window
        self.link_index = np.zeros(num_sims, dtype=np.int64)
        self.begin_ms = np.zeros(num_sims)   # each simulation's clock at its first step
        self._reset: set[int] = set()
        self._row_sim = np.zeros(0, dtype=np.int64)
        self._rewards = Rewards(np.zeros(0), np.zeros(0), config)
        self._constant_ideal = np.zeros(num_sims)
        self._varying_ideal: list[tuple[TraceIdealWindow, np.ndarray]] = []  # (window, its sims)
        # Where no link's ideal varies: each row's ideal window and its expert's window (alone).
        self._constant_rows = np.zeros(0)
        self._constant_targets = np.zeros(0)
        # The rows' expert actions and ideal windows now, when known (None: not yet).
        self._expert: np.ndarray | None = None
        self._ideal: np.ndarray | None = None
        self._expert_out = np.zeros(0, dtype=np.int64)  # what an alone step labels into

    @property
    def num_links(self) -> int:
        return len(self._profiles)

    def link(self, index: int) -> LinkProfile:
        """The profile of the config's link at index."""
        profile = self._profiles[index]
        if profile is None:
            profile = self._profiles[index] = self.config.profile(self._links[index])
        return profile

    def reset_sim(self, i: int, rng: np.random.Generator) -> None:
        """Draws simulation i's next episode (link, start, competitors) and runs it to its
        start."""
        index, sim_seed = draw_episode(rng, self.num_links)
        profile = self.link(index)
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
        self._start[i] = self._clock
        self._any_held = self._any_held or self.held[i] > 0
        self._reset.add(i)
        self._expert = self._ideal = None

    def episode(self, i: int) -> tuple[LinkProfile, Scenario]:
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
        return RowStep(self.vec.observations(), np.zeros(self.num_rows), self.vec.stats().T,
                       self._done())

    def step(self, actions: np.ndarray) -> RowStep:
        """Applies one action per row (-1 keeps the window) and steps every simulation."""
        if self._reset:
            self._refresh_rows()
        if self._any_held:  # only early in an episode with a random start (start_window)
            holding = self.steps < self.held
            if holding.any():
                actions = np.where(holding[self._row_sim], _core.HOLD_ACTION, actions)
            else:
                self._any_held = False
        actions = np.ascontiguousarray(actions, dtype=np.int32)
        rows = len(actions)
        obs = np.empty((rows, self.vec.obs_dim), dtype=np.float32)
        columns = np.empty((_core.STAT_COLUMNS, rows))
        if self.alone and self.has_expert:
            # The expert labels the observations after the step: the ideal windows then.
            if self._varying_ideal:
                self._ideal = self._ideal_windows(self.steps + 1)
                targets = _expert_windows_alone(self._ideal)
            else:
                self._ideal, targets = self._constant_rows, self._constant_targets
            self.vec.step(actions, obs, columns, targets, self._expert_out)
            self._expert = self._expert_out
        else:
            self._expert = self._ideal = None
            self.vec.step(actions, obs, columns)
        self._clock += 1
        return RowStep(obs, self._rewards(columns), columns, self._done())

    @property
    def steps(self) -> np.ndarray:
        """Each simulation's steps since its reset."""
        return self._clock - self._start

    def _done(self) -> np.ndarray:
        """Whether each simulation's episode reached its length."""
        if self._clock < self._first_end:
            return np.zeros(self.num_sims, dtype=bool)
        return self.steps >= self.episode_steps

    def ideal_windows(self) -> np.ndarray:
        """Each row's link's ideal window (the oracle's, for a flow alone) now."""
        if not self.has_expert:
            raise ValueError("the links were resolved without the oracle (EnvConfig.resolved"
                             "(expert=False)): no ideal window, no expert")
        self._refresh_rows()
        if self._ideal is None:
            self._ideal = self._ideal_windows(self.steps)
        return self._ideal.copy()

    def expert_windows(self) -> np.ndarray:
        """Each row's expert window now (oracle/shared.py), from the last step's statistics."""
        stats = self.vec.stats()
        return fair_windows(self.ideal_windows(), stats[:, _core.STAT_ACTIVE_FLOWS],
                            stats[:, _core.STAT_CLASSIC_FLOWS],
                            stats[:, _core.STAT_CLASSIC_IN_FLIGHT])

    def expert_actions(self) -> np.ndarray:
        """Each row's expert action (int64): the one closest to its expert window, within
        its growth ceiling; one C++ call for every row, or none where the step labelled
        them."""
        if self._expert is None:
            self._expert = self.vec.closest_actions(self.expert_windows()).astype(np.int64)
        return self._expert.copy()

    def _ideal_windows(self, steps: np.ndarray) -> np.ndarray:
        """Each row's ideal window after `steps` steps of its simulation: constant links'
        from the last refresh, one oracle call per other distinct link, all its simulations'
        clocks at once. Not to be written to (it may be the constant rows')."""
        if not self._varying_ideal:
            return self._constant_rows
        ideal = self._constant_ideal.copy()
        now = self.begin_ms + steps * _core.STEP_MS
        for window, sims in self._varying_ideal:
            ideal[sims] = window.windows(now[sims])
        return ideal[self._row_sim]

    def _group_ideal_windows(self) -> None:
        """The simulations' ideal windows by distinct link, as _ideal_windows reads them:
        looked up once per reset rather than on every step."""
        self._constant_ideal = np.zeros(self.num_sims)
        self._varying_ideal = []
        for index in np.unique(self.link_index):
            sims = self.link_index == index
            window = self.link(int(index)).ideal
            if isinstance(window, ConstantIdealWindow):
                self._constant_ideal[sims] = window.value
            else:  # ideal_window's other kind, a trace's schedule
                assert isinstance(window, TraceIdealWindow)
                self._varying_ideal.append((window, sims))

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
        self._row_sim = np.array(row_sim, dtype=np.int64)
        self._first_end = int(self._start.min()) + self.episode_steps
        if self.has_expert:
            self._group_ideal_windows()
        self._constant_rows = self._constant_ideal[self._row_sim]
        self._constant_targets = _expert_windows_alone(self._constant_rows)
        self._expert_out = np.empty(len(row_sim), dtype=np.int64)
        self._rewards = Rewards(np.array(rate), np.array(propagation), self.config)
        self._reset.clear()


def _expert_windows_alone(ideal: np.ndarray) -> np.ndarray:
    """fair_windows of flows alone on their links (one active flow, no classic one): the
    ideal windows within the window's bounds."""
    return np.clip(ideal, _core.MIN_WINDOW, _core.MAX_WINDOW)
