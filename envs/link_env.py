"""One emulated link as a gymnasium environment: "ccgym/Link-v0", an adapter over the engine.

Each episode runs one link, drawn by the env's np_random from the config's links, with one
learned flow alone on it whose window the agent sets: one simulation of an Engine
(envs/engine.py), whose docstring defines the observation, the action, the reward and the
episode's length.

- info: ideal_window (the oracle's window now), expert_action (the action from the
  current window closest to it, grown at most to the policy's growth ceiling), window,
  link (name), delivered_mbps, delay_ms (the delay of the reward).

Seeding: reset(seed=s) seeds np_random, which draws each episode's link and simulation
seed; a first reset without a seed uses the config's seed (if any). The same seed gives
the same rollout.

ccgym/SharedLink-v0 (envs/shared_link.py) is this env with competitors, and its own info.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ccgym.emulators import _core
from ccgym.envs.config import EnvConfig
from ccgym.envs.engine import Engine, RowStep, action_space, observation_space

LINK_ENV = "ccgym/Link-v0"


def check_render_mode(render_mode: str | None) -> None:
    """gymnasium.make passes render_mode (often None); there is nothing to render."""
    if render_mode is not None:
        raise ValueError(f"render_mode: ccgym's envs render nothing, got {render_mode!r}")


class LinkEnv(gym.Env[np.ndarray, np.int64]):
    """One link per episode, the learned flow alone on it; see the module docstring."""

    metadata: dict[str, Any] = {"render_modes": []}
    # What the env runs: the learned flow alone (its competitors must all be "none").
    alone_only = True

    def __init__(self, config: Mapping[str, Any] | EnvConfig | None = None,
                 render_mode: str | None = None, **kwargs: Any) -> None:
        check_render_mode(render_mode)
        self.render_mode = render_mode
        self.config = EnvConfig.build(config, **kwargs)
        if self.alone_only:
            self.config.check_alone(LINK_ENV)
        self.engine = Engine(1, self.config, allow_self=False)
        self.observation_space = observation_space()
        self.action_space = action_space()

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        if seed is None and self._np_random is None:
            seed = self.config.seed
        super().reset(seed=seed)
        self.engine.reset_sim(0, self.np_random)
        rows = self.engine.first_step()
        return rows.obs[0], self._info(rows)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = int(action)
        if not 0 <= a < _core.NUM_ACTIONS:  # the C++ side indexes its action table with it
            raise ValueError(f"action must be in [0, {_core.NUM_ACTIONS}), got {action!r}")
        rows = self.engine.step(np.array([a], dtype=np.int32))
        return rows.obs[0], float(rows.reward[0]), False, bool(rows.done[0]), self._info(rows)

    def _info(self, rows: RowStep) -> dict[str, Any]:
        return {"ideal_window": float(self.engine.ideal_windows()[0]),
                "expert_action": self.expert_action(), "window": float(rows.window[0]),
                "link": self.engine.episode(0)[0].name,
                "delivered_mbps": float(rows.delivered_mbps[0]),
                "delay_ms": float(rows.delay_ms[0])}

    def expert_action(self) -> int:
        """The DAgger expert's action for the learned flow now (as in the last info)."""
        return int(self.engine.expert_actions()[0])
