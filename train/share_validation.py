"""Validation beside competitors: the policy's share of a shared link, every iteration.

A policy is trained for paths it shares, so validation also runs it beside each of [eval]
share_against (e.g. cubic, bbr) on [eval] share_links: the competitor first, the policy
share_stagger_s later, as docs/results.md's shared-link rows and `ccgym eval --against cubic
--first competitors --interval-s 5` run it. A share is the policy's part of the bytes delivered
while both send, from the policy's start plus the ramp (measure.metrics.overlap_shares), the
figure bench_coexist.py reports. Every (competitor, link, seed) run steps in lockstep, so the
policy's inference is one batch.

[eval] share_floor and share_ceiling state how the best policy is chosen from them
(held_share, and train/early_stopping.py): iterations compare first by their held share, the
lowest share (on any link beside any competitor) capped at the floor less what the highest
exceeds the ceiling by, then by score. With the floor at 0 and the ceiling at 1 (the
defaults) that is the score alone; with a floor of 0.35, a policy that holds 0.35 beside
every competitor on every link beats any that does not, and among those the score decides; a
ceiling of 0.65 also ranks a policy that takes 0.80 beside cubic below one that shares it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.links import Link
from ccgym.envs.scoring import run_flows_stepped, score_simulation
from ccgym.errors import UserError
from ccgym.policies.lstm import LstmPolicy
from ccgym.policies.lstm_scheme import LstmScheme
from ccgym.train.sections import EvalSection

COMPETITOR_FLOW, POLICY_FLOW = 0, 1  # the competitor starts first


def share_tag(competitor: str, link: str | None = None) -> str:
    """The eval/ scalar of a share: shares/beside_cubic, shares/beside_cubic/LINK."""
    base = f"shares/beside_{competitor}"
    return base if link is None else f"{base}/{link}"


def check_shares(ev: EvalSection) -> None:
    """What only the build can check: each competitor is a classic scheme of the simulator."""
    for scheme in ev.share_against:
        try:
            _core.validate_classic_scheme(scheme)
        except ValueError as e:
            raise UserError(f"[eval] share_against: {scheme!r}: {e}") from None


def validate_shares(policy: LstmPolicy, links: Sequence[Link], ev: EvalSection,
                    seed: int) -> dict[str, float]:
    """The policy's mean share beside each competitor over the links and runs (share_tag's
    tags; per link too), and `shares/lowest` and `shares/highest`, the least and the greatest
    share on any link beside any competitor. Empty when [eval] share_against is."""
    if not ev.share_against:
        return {}
    seeds = [seed + r for r in range(ev.runs)]
    duration_ms = ev.share_duration_s * 1000.0
    stagger_ms = ev.share_stagger_s * 1000.0
    cases = [(competitor, link, s) for competitor in ev.share_against for link in links
             for s in seeds]
    sims = [_core.Simulator(link.spec, [(competitor, 0.0, -1.0),
                                        (_core.EXTERNAL_SCHEME, stagger_ms, -1.0)], s)
            for competitor, link, s in cases]
    policy_scheme = LstmScheme.from_policy(policy)
    run_flows_stepped(sims, [link for _, link, _ in cases], [s for _, _, s in cases],
                      lambda: policy_scheme, {POLICY_FLOW: (stagger_ms, math.inf)}, duration_ms)
    shares: dict[tuple[str, str], list[float]] = {}
    for (competitor, link, _), sim in zip(cases, sims):
        metrics = score_simulation(sim, duration_ms)[0]
        own = next((f for f in metrics.flows if f["flow"] == POLICY_FLOW), None)
        # A policy that sent nothing holds none of the link.
        share = 0.0 if own is None else float(own["share_overlap"])
        shares.setdefault((competitor, link.name), []).append(share)
    out: dict[str, float] = {}
    every_link: list[float] = []
    for competitor in ev.share_against:
        per_link = [float(np.mean(shares[(competitor, link.name)])) for link in links]
        out[share_tag(competitor)] = float(np.mean(per_link))
        out.update({share_tag(competitor, link.name): value
                    for link, value in zip(links, per_link)})
        every_link += per_link
    # Per link, not per competitor's mean: a mean in the band can hide a link where the policy
    # takes 0.9 of cubic's link and another where it keeps 0.2.
    out["shares/lowest"], out["shares/highest"] = min(every_link), max(every_link)
    return out


def held_share(shares: dict[str, float], floor: float, ceiling: float = 1.0) -> float:
    """The lowest share capped at the floor, less what the highest share exceeds the ceiling
    by: the first part of the best-iteration key (0 with neither, or no share validation)."""
    if (floor <= 0 and ceiling >= 1) or "shares/lowest" not in shares:
        return 0.0
    lowest, highest = shares["shares/lowest"], shares.get("shares/highest", math.nan)
    if math.isnan(lowest):
        return 0.0
    overshoot = max(0.0, highest - ceiling) if not math.isnan(highest) else 0.0
    return min(lowest, floor) - overshoot

