"""A link shared with competitors: "ccgym/SharedLink-v0", an adapter over the engine.

SharedLinkEnv is ccgym/Link-v0 (envs/link_env.py) with company: one learned flow (flow_0)
among classic competitors that the EnvConfig's `competitors` fields draw per episode
(envs/competitors.py: which schemes, when each starts and stops). Spaces, action semantics
and the reward are the engine's (envs/engine.py), for the learned flow's own packets. Entries
with "self" need the multi-agent env (envs/multi_agent.py), which drives several learned
flows.

    env = gymnasium.make("ccgym/SharedLink-v0",
                         config={"links": ["rate_mbps=24,delay_ms=20,queue=droptail:packets=80"],
                                 "competitors": ["none", "cubic", "bbr", "vegas"],
                                 "competitor_starts": ["before", "with", "after"]})

info: window, link (name), competitors (the drawn entry), delivered_mbps, delay_ms (as
Link-v0's), active_flows (flows sending at the step's end, the learned one included),
capacity_mbps (what the link delivered or could have during the step) and fair_share_mbps =
capacity_mbps / active_flows: a reward that judges sharing can use it.

With competitors = ["none"] an episode is drawn and run exactly as ccgym/Link-v0's with the
same seed (tests/envs/test_shared_link.py). The DAgger expert of a shared link is the
learned flow's max-min fair window (oracle/shared.py says why): env.expert_action(); it is
not in info, so that an episode that is not labelled never computes it.
"""

from __future__ import annotations

from typing import Any

from ccgym.envs.engine import RowStep
from ccgym.envs.link_env import LinkEnv


class SharedLinkEnv(LinkEnv):
    """One learned flow among classic competitors; see the module docstring."""

    alone_only = False

    def _info(self, rows: RowStep) -> dict[str, Any]:
        profile, scenario = self.engine.episode(0)
        return row_info(rows, 0, profile.name, scenario.entry)


def row_info(rows: RowStep, r: int, link: str, entry: str) -> dict[str, Any]:
    """Row r's info dict (the module docstring's keys)."""
    return {"window": float(rows.window[r]), "link": link, "competitors": entry,
            "delivered_mbps": float(rows.delivered_mbps[r]), "delay_ms": float(rows.delay_ms[r]),
            "active_flows": int(rows.active_flows[r]),
            "capacity_mbps": float(rows.capacity_mbps[r]),
            "fair_share_mbps": float(rows.fair_share_mbps[r])}
