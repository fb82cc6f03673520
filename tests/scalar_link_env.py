"""ccgym/Link-v0's rules written out a second way, for the tests to hold the engine to: the
scalar Simulator stepped flow by flow, and the step's delay, the reward (envs/engine.py's
docstring) and the expert (oracle/ideal.py's expert_action) computed here in Python from its
raw step statistics. Same draws as the engine (its draw_episode and start_window), so a
ScalarLinkEnv reset with seed s runs the episodes a LinkEnv reset with s runs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import DELAY_FLOOR_MS, THROUGHPUT_FLOOR, draw_episode, start_window
from ccgym.oracle.ideal import expert_action


class ScalarLinkEnv:
    """Link-v0's reset and step (obs, reward, terminated, truncated, info)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = EnvConfig.build(config)
        self.links = self.config.named_links()
        self.rng: np.random.Generator | None = None

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is not None or self.rng is None:
            self.rng, _ = seeding.np_random(seed)
        index, sim_seed = draw_episode(self.rng, len(self.links))
        self.profile = self.config.profile(self.links[index])
        self.sim = _core.Simulator(self.profile.spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)],
                                   sim_seed, False)
        window, self.held = start_window(self.rng, self.profile, self.config)
        self.sim.set_window(window)
        self.previous_action, self.delay, self.steps = _core.HOLD_ACTION, self.profile.delay_ms, 0
        return self.observation(), self.info(0.0)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = _core.HOLD_ACTION if self.steps < self.held else int(action)
        self.sim.clear_step_stats()
        self.sim.take_action(a)
        self.sim.run_until(self.sim.now_ms + _core.STEP_MS)
        self.previous_action, self.steps = a, self.steps + 1
        stats = self.sim.step_stats()
        if stats["arrivals"]:
            self.delay = stats["delay_sum_ms"] / stats["arrivals"]
        else:
            self.delay += _core.STEP_MS
        delivered = stats["delivered_bytes"] * 8 / _core.STEP_MS / 1000
        rate, c = self.profile.rate_mbps, self.config
        reward = (c.throughput_weight * math.log(max(delivered, THROUGHPUT_FLOOR * rate) / rate)
                  - c.delay_weight * math.log(max(self.delay, DELAY_FLOOR_MS)
                                              / max(self.profile.delay_ms, DELAY_FLOOR_MS)))
        truncated = self.steps >= c.episode_steps
        return self.observation(), reward, False, truncated, self.info(delivered)

    def observation(self) -> np.ndarray:
        return np.asarray(self.sim.observation(self.previous_action), dtype=np.float32)

    def info(self, delivered: float) -> dict[str, Any]:
        window = float(self.sim.window())
        ideal = float(self.profile.ideal.window(self.sim.now_ms))
        return {"ideal_window": ideal,
                "expert_action": expert_action(window, ideal, self.sim.growth_ceiling()),
                "window": window, "link": self.profile.name, "delivered_mbps": delivered,
                "delay_ms": self.delay}
