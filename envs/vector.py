"""N links stepped together in C++: the natively vectorized "ccgym/Link-v0".

    env = VecLinkEnv(num_envs, config, threads=0)    # or gymnasium.make_vec(
                                                     #   "ccgym/Link-v0", num_envs,
                                                     #   vectorization_mode="vector_entry_point")
    obs, infos = env.reset(seed=s)                   # obs: (N, OBS_DIM) float32
    obs, rewards, terminated, truncated, infos = env.step(actions)   # actions: (N,) ints
    infos["expert_action"]                           # (N,) int64: the oracle's actions for obs
    env.expert_actions()                             # the same, without an info dict

Sub-environment i behaves exactly as a LinkEnv with the same config reset with seed s + i
(test_vector.py checks this step by step): the same links, simulation seeds, observations,
rewards and infos (see envs/link_env.py for their definitions). One call steps every
simulation STEP_MS in C++ on `threads` threads (0: chosen by size, never slower than one; see
emulators/cpp/vec_simulator.hh) without the GIL.

Autoreset is gymnasium's SAME_STEP mode: when an episode ends, the step that ends it
returns the first observation of the slot's next episode (a new link drawn from the
slot's own np_random), with the ended episode's last observation and info in
infos["final_obs"] (object array) and infos["final_info"] (dict of arrays), each with
its "_final_obs" / "_final_info" mask. So every returned observation needs a decision
and has an expert label; a recurrent policy resets its state where
terminated | truncated. Episodes never terminate and all have the same length, so every
slot truncates and resets on the same step: the slots share one virtual clock, which the
C++ VecSimulator relies on (it steps every simulation to the first one's time + STEP_MS).

With autoreset_mode=AutoresetMode.NEXT_STEP (gymnasium's default, which RLlib's env runners
expect) the step that ends the episodes returns their last observations and infos, and the
next step call starts the new episodes instead of stepping: it ignores its actions and returns
their first observations with reward 0 and neither flag set.

infos is a dict of arrays (N,): ideal_window, expert_action, window, link (names, object),
delivered_mbps, delay_ms; each with gymnasium's "_key" mask (all True). window,
delivered_mbps and delay_ms are rows of one (STAT_COLUMNS, N) array: fresh arrays every
step, built with as few numpy calls as can be.

A step's Python is the part that more threads do not speed up, so it is kept short: the C++
step's threads write the observations, statistics (with the delivered rate and the delay)
and expert actions straight into the step's arrays; Python adds the rewards' logarithms
(RowRewards) and the info dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ccgym.emulators import _core
from ccgym.envs.link_env import (EnvConfig, LinkProfile, RowRewards, check_render_mode,
                                 draw_episode, link_profile, observation_space,
                                 resolve_env_links, start_window)
from ccgym.oracle.ideal import ConstantIdealWindow

INFO_KEYS = ("ideal_window", "expert_action", "window", "link", "delivered_mbps", "delay_ms")
MASK_KEYS = tuple(f"_{key}" for key in INFO_KEYS)


class VecLinkEnv(VectorEnv):
    """num_envs LinkEnvs in one C++ VecSimulator; see the module docstring."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(self, num_envs: int, config: Mapping[str, Any] | EnvConfig | None = None,
                 threads: int = 0, render_mode: str | None = None,
                 autoreset_mode: AutoresetMode | str = AutoresetMode.SAME_STEP,
                 **kwargs: Any) -> None:
        check_render_mode(render_mode)
        self.render_mode = render_mode
        modes = (AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP)
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError:
            mode = None
        if mode not in modes:
            raise ValueError(f"autoreset_mode must be one of {[m.value for m in modes]}, "
                             f"got {autoreset_mode!r}")
        self.metadata = {**self.metadata, "autoreset_mode": mode}
        if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
        if not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads must be an integer >= 0 (0: chosen by size), got {threads!r}")
        self.config = EnvConfig.build(config, **kwargs)
        self.config.check_alone("ccgym/Link-v0")
        self.links = resolve_env_links(self.config.links)
        self.num_envs = num_envs
        self.single_observation_space = observation_space()
        self.single_action_space: spaces.Discrete = spaces.Discrete(_core.NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)

        self._vec = _core.VecSimulator(num_envs, threads)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._profiles: list[LinkProfile | None] = [None] * num_envs
        self._unique: list[LinkProfile] | None = None  # see _unique_profiles
        self._profile_index = np.zeros(num_envs, dtype=np.int64)
        self._constant_ideal: np.ndarray | None = None  # see _unique_profiles
        self._names = np.full(num_envs, "", dtype=object)
        self._rate = np.ones(num_envs)
        self._propagation = np.zeros(num_envs)
        self._rewards = RowRewards(self._rate, self._propagation, self.config)
        self._steps = 0
        self._held_steps = np.zeros(num_envs, dtype=np.int64)  # see start_window
        self._hold_until = 0  # no slot holds its window from this step on
        self._all = np.ones(num_envs, dtype=bool)
        self._expert = np.full(num_envs, _core.HOLD_ACTION, dtype=np.int64)
        self._reset_next = False  # NEXT_STEP: the episodes ended; the next step starts new ones

    # ------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        for i, s in enumerate(self._seeds(seed)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
        self._reset_all()
        return self._vec.observations(), self._first_infos()

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        if self._reset_next:
            self._reset_all()
            zeros, none = np.zeros(self.num_envs), np.zeros(self.num_envs, dtype=bool)
            return self._vec.observations(), zeros, none, none.copy(), self._first_infos()
        if self._steps < self._hold_until:
            actions = np.where(self._steps < self._held_steps, _core.HOLD_ACTION, actions)
        n = self.num_envs
        obs = np.empty((n, _core.OBS_DIM), dtype=np.float32)
        columns = np.empty((_core.STAT_COLUMNS, n))
        # The expert labels the observations after the step: the oracle's windows then.
        ideal = self._ideal_windows(self._vec.now_ms(0) + _core.STEP_MS)
        self._expert = np.empty(n, dtype=np.int64)
        self._vec.step(np.ascontiguousarray(actions, dtype=np.int32), obs, columns,
                       np.asarray(ideal, dtype=np.float64), self._expert)
        self._steps += 1
        rewards = self._rewards(columns)
        terminated = np.zeros(n, dtype=bool)
        ended = self._steps >= self.config.episode_steps
        truncated = ~terminated if ended else terminated.copy()
        infos = self._with_masks({
            "ideal_window": ideal, "expert_action": self._expert.copy(),
            "window": columns[_core.STAT_WINDOW], "link": self._names.copy(),
            "delivered_mbps": columns[_core.STAT_DELIVERED_MBPS],
            "delay_ms": columns[_core.STAT_DELAY_MS]})
        if ended and self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP:
            self._reset_next = True
        elif ended:
            infos = self._autoreset(obs, infos)
            obs = self._vec.observations()
        return obs, rewards, terminated, truncated, infos

    def expert_actions(self) -> np.ndarray:
        """The oracle's actions for the last returned observations, (N,) int64."""
        return self._expert.copy()

    # ------------------------------------------------------------ internals

    def _seeds(self, seed: int | Sequence[int] | None) -> list[int | None]:
        if seed is None:
            base = self.config.seed if all(r is None for r in self._rngs) else None
            return [None if base is None else base + i for i in range(self.num_envs)]
        if isinstance(seed, (int, np.integer)):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds: list[int | None] = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset: {len(seeds)} seeds for {self.num_envs} environments")
        return seeds

    def _reset_all(self) -> None:
        """Starts every slot's next episode (all episodes end together)."""
        for i in range(self.num_envs):
            self._reset_slot(i)
        self._steps = 0
        self._reset_next = False
        self._hold_until = int(self._held_steps.max())
        self._rewards = RowRewards(self._rate, self._propagation, self.config)

    def _reset_slot(self, i: int) -> None:
        rng = self._rngs[i]
        assert rng is not None  # reset seeds every slot before it resets any
        index, sim_seed = draw_episode(rng, len(self.links))
        profile = link_profile(self.links[index], self.config)
        window, self._held_steps[i] = start_window(rng, profile, self.config)
        self._vec.reset(i, profile.spec, sim_seed, window)
        self._profiles[i] = profile
        self._unique = None
        self._names[i] = profile.name
        self._rate[i] = profile.rate_mbps
        self._propagation[i] = profile.delay_ms

    def _unique_profiles(self) -> list[LinkProfile]:
        """The slots' distinct links, each slot's index into them in _profile_index; and
        when every one's ideal window is constant, each slot's in _constant_ideal."""
        if self._unique is None:
            index: dict[LinkProfile, int] = {}
            slots = []
            for p in self._profiles:
                assert p is not None  # infos come after reset, which gives every slot a link
                slots.append(index.setdefault(p, len(index)))
            self._profile_index = np.array(slots, dtype=np.int64)
            self._unique = list(index)
            self._constant_ideal = None
            if all(isinstance(p.ideal, ConstantIdealWindow) for p in self._unique):
                self._constant_ideal = self._oracle_windows(0.0)
        return self._unique

    def _ideal_windows(self, now_ms: float) -> np.ndarray:
        """Each slot's oracle window at now_ms."""
        self._unique_profiles()
        if self._constant_ideal is not None:
            return self._constant_ideal.copy()
        return self._oracle_windows(now_ms)

    def _oracle_windows(self, now_ms: float) -> np.ndarray:
        # One oracle call per distinct link: nothing per slot in Python on the hot path.
        assert self._unique is not None
        return np.array([p.ideal.window(now_ms) for p in self._unique])[self._profile_index]

    def _autoreset(self, obs: np.ndarray, infos: dict[str, Any]) -> dict[str, Any]:
        """Every slot's episode ended on this step: start the next ones (SAME_STEP)."""
        final_obs = np.empty(self.num_envs, dtype=object)
        for i in range(self.num_envs):
            final_obs[i] = obs[i]
        self._reset_all()
        fresh = self._first_infos()
        fresh.update({"final_obs": final_obs, "_final_obs": self._all.copy(),
                      "final_info": infos, "_final_info": self._all.copy()})
        return fresh

    def _first_infos(self) -> dict[str, Any]:
        """The infos of the episodes' first observations: nothing delivered yet, the delay
        that of the link."""
        ideal = self._ideal_windows(self._vec.now_ms(0))  # every slot is at the same time
        self._expert = self._vec.closest_actions(ideal).astype(np.int64)
        return self._with_masks({
            "ideal_window": ideal, "expert_action": self._expert.copy(),
            "window": self._vec.stats()[:, _core.STAT_WINDOW], "link": self._names.copy(),
            "delivered_mbps": np.zeros(self.num_envs), "delay_ms": self._propagation.copy()})

    def _with_masks(self, infos: dict[str, Any]) -> dict[str, Any]:
        """infos (INFO_KEYS, in order) with gymnasium's masks: all True."""
        for key in MASK_KEYS:
            infos[key] = self._all.copy()
        return infos
