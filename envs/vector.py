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
rewards and infos (see envs/link_env.py for their definitions): both are adapters over the
engine (envs/engine.py), this one with N simulations. One call steps every simulation
STEP_MS in C++ on `threads` threads (0: chosen by size, never slower than one; see
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
(the engine's Rewards) and the info dict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import Engine, RowStep, action_space, observation_space
from ccgym.envs.link_env import LINK_ENV, check_render_mode

INFO_KEYS = ("ideal_window", "expert_action", "window", "link", "delivered_mbps", "delay_ms")
MASK_KEYS = tuple(f"_{key}" for key in INFO_KEYS)


class VecLinkEnv(VectorEnv):
    """num_envs LinkEnvs in one Engine; see the module docstring."""

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
        self.config.check_alone(LINK_ENV)
        self.engine = Engine(num_envs, self.config, threads, allow_self=False)
        self.num_envs = num_envs
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs
        self._names = np.full(num_envs, "", dtype=object)
        self._all = np.ones(num_envs, dtype=bool)
        self._reset_next = False  # NEXT_STEP: the episodes ended; the next step starts new ones

    # ------------------------------------------------------------ gymnasium API

    def reset(self, *, seed: int | Sequence[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        for i, s in enumerate(self._seeds(seed)):
            if s is not None or self._rngs[i] is None:
                self._rngs[i], _ = seeding.np_random(s)
        rows = self._reset_all()
        return rows.obs, self._infos(rows)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        n = self.num_envs
        if self._reset_next:
            rows = self._reset_all()
            none = np.zeros(n, dtype=bool)
            return rows.obs, np.zeros(n), none, none.copy(), self._infos(rows)
        rows = self.engine.step(actions)
        terminated = np.zeros(n, dtype=bool)
        ended = bool(rows.done[0])  # every slot's episode has the same length
        truncated = ~terminated if ended else terminated.copy()
        infos = self._infos(rows)
        obs = rows.obs
        if ended and self.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP:
            self._reset_next = True
        elif ended:
            obs, infos = self._autoreset(obs, infos)
        return obs, rows.reward, terminated, truncated, infos

    def expert_actions(self) -> np.ndarray:
        """The oracle's actions for the last returned observations, (N,) int64."""
        return self.engine.expert_actions()

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

    def _reset_all(self) -> RowStep:
        """Starts every slot's next episode (all episodes end together)."""
        for i, rng in enumerate(self._rngs):
            assert rng is not None  # reset seeds every slot before it resets any
            self.engine.reset_sim(i, rng)
            self._names[i] = self.engine.episode(i)[0].name
        self._reset_next = False
        return self.engine.first_step()

    def _autoreset(self, obs: np.ndarray, infos: dict[str, Any]) -> tuple[np.ndarray,
                                                                         dict[str, Any]]:
        """Every slot's episode ended on this step: start the next ones (SAME_STEP)."""
        final_obs = np.empty(self.num_envs, dtype=object)
        for i in range(self.num_envs):
            final_obs[i] = obs[i]
        rows = self._reset_all()
        fresh = self._infos(rows)
        fresh.update({"final_obs": final_obs, "_final_obs": self._all.copy(),
                      "final_info": infos, "_final_info": self._all.copy()})
        return rows.obs, fresh

    def _infos(self, rows: RowStep) -> dict[str, Any]:
        """INFO_KEYS, in order, with gymnasium's masks: all True."""
        columns = rows.columns
        infos = {"ideal_window": self.engine.ideal_windows(),
                 "expert_action": self.engine.expert_actions(),
                 "window": columns[_core.STAT_WINDOW], "link": self._names.copy(),
                 "delivered_mbps": columns[_core.STAT_DELIVERED_MBPS],
                 "delay_ms": columns[_core.STAT_DELAY_MS]}
        for key in MASK_KEYS:
            infos[key] = self._all.copy()
        return infos
