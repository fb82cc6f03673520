"""Validation beside competitors: the same shares `ccgym eval --against` reports, logged to
TensorBoard, and the best policy chosen by the config's share floor."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from ccgym.analysis.coexist import runs_on_link
from ccgym.emulators.link_names import link_from_spec
from ccgym.policies.lstm import LstmPolicy
from ccgym.train.config import parse_config
from ccgym.train.loop import train
from ccgym.train.sections import EvalSection
from ccgym.train.share_validation import held_share, share_tag, validate_shares

from tests.train.test_dagger import quiet, tiny_doc

SHARE_LINK = "name=narrow,rate_mbps=12,delay_ms=10,queue=droptail:packets=40"


def test_shares_are_those_eval_against_reports(tmp_path: Path) -> None:
    torch.manual_seed(7)
    policy = LstmPolicy(hidden_size=8)
    policy.save(tmp_path / "policy.pt")
    link = link_from_spec(SHARE_LINK)
    ev = EvalSection(runs=2, share_against=["cubic", "bbr"], share_duration_s=12.0)
    shares = validate_shares(policy, [link], ev, seed=4)
    for competitor in ("cubic", "bbr"):
        # ccgym eval --links ... --against COMPETITOR --first competitors --interval-s 5
        runs = runs_on_link(link, f"lstm:{tmp_path / 'policy.pt'}", [competitor], "competitors",
                            [4, 5], 12_000.0, 5.0)
        expected = np.mean([next(f["share_overlap"] for f in run.metrics.flows
                                 if f["flow"] == 1) for run in runs])
        assert shares[share_tag(competitor)] == pytest.approx(expected, abs=1e-9)
        assert shares[share_tag(competitor, "narrow")] == shares[share_tag(competitor)]
    assert shares["shares/lowest"] == min(shares[share_tag("cubic")], shares[share_tag("bbr")])
    assert shares["shares/highest"] == max(shares[share_tag("cubic")], shares[share_tag("bbr")])
    assert validate_shares(policy, [link], dataclasses.replace(ev, share_against=[]), 4) == {}


def test_the_lowest_and_highest_shares_are_per_link() -> None:
    # A competitor's mean over links in the band can hide a link where the policy takes most of
    # the link and one where it keeps little: the band judges each link.
    torch.manual_seed(3)
    links = [link_from_spec(SHARE_LINK),
             link_from_spec("name=wide,rate_mbps=48,delay_ms=10,queue=droptail:packets=20")]
    ev = EvalSection(runs=1, share_against=["cubic", "bbr"], share_duration_s=11.0)
    shares = validate_shares(LstmPolicy(hidden_size=8), links, ev, seed=2)
    per_link = [shares[share_tag(c, link.name)] for c in ("cubic", "bbr") for link in links]
    assert shares["shares/lowest"] == min(per_link)
    assert shares["shares/highest"] == max(per_link)
    assert len(set(per_link)) > 1  # the links differ, or this checks nothing


def test_the_held_share_is_the_lowest_capped_at_the_floor() -> None:
    assert held_share({"shares/lowest": 0.2}, 0.0) == 0.0
    assert held_share({"shares/lowest": 0.2}, 0.35) == 0.2
    assert held_share({"shares/lowest": 0.5}, 0.35) == 0.35
    assert held_share({}, 0.35) == 0.0


def test_a_ceiling_takes_off_what_the_highest_share_exceeds_it_by() -> None:
    shares = {"shares/lowest": 0.4, "shares/highest": 0.8}
    assert held_share(shares, 0.35) == 0.35  # no ceiling: taking the link is not counted
    assert held_share(shares, 0.35, 0.65) == pytest.approx(0.35 - 0.15)
    assert held_share({"shares/lowest": 0.4, "shares/highest": 0.6}, 0.35, 0.65) == 0.35
    # A ceiling alone: only the overshoot counts.
    assert held_share(shares, 0.0, 0.65) == pytest.approx(-0.15)


def test_training_logs_the_shares_and_keeps_the_policy_the_floor_prefers(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    # A floor no policy reaches: the best iteration is the one with the highest lowest share.
    doc = tiny_doc(eval={"share_against": ["cubic", "bbr"], "share_links": [SHARE_LINK],
                         "share_duration_s": 11.0, "share_floor": 1.0})
    doc["run"]["iterations"] = 3
    state = train(parse_config(doc, "tiny"), tmp_path / "run", progress=False, say=quiet)
    lowest = [h["shares/lowest"] for h in state.history]
    assert state.early_stopping.best_iteration == 1 + int(np.argmax(lowest)), state.history
    events = EventAccumulator(str(tmp_path / "run"))
    events.Reload()
    scalars = set(events.Tags()["scalars"])
    assert {"eval/shares/beside_cubic", "eval/shares/beside_bbr", "eval/shares/lowest",
            "eval/shares/beside_bbr/narrow"} <= scalars, scalars
    logged = [e.value for e in events.Scalars("eval/shares/lowest")]
    assert logged == pytest.approx(lowest)


def test_dagger_trains_a_version_6_policy_beside_bbr(tmp_path: Path) -> None:
    from ccgym.emulators import _core

    # What configs/train/mixed-bbr.toml asks, on tiny links: bbr in the episodes, observation
    # version 5, shares validated.
    doc = tiny_doc(model={"observation_version": _core.COMPETITION_OBSERVATION_VERSION},
                   eval={"share_against": ["bbr"], "share_links": [SHARE_LINK],
                         "share_duration_s": 11.0})
    doc["run"]["iterations"] = 2
    doc["links"]["competitors"] = ["none", "bbr"]
    state = train(parse_config(doc, "tiny"), tmp_path / "run", progress=False, say=quiet)
    policy = LstmPolicy.load(tmp_path / "run" / "policy.pt")
    assert policy.observation_version == _core.COMPETITION_OBSERVATION_VERSION
    assert policy.obs_dim == _core.OBS_DIMS[_core.COMPETITION_OBSERVATION_VERSION]
    assert all(0.0 <= h["shares/beside_bbr"] <= 1.0 for h in state.history)
    assert state.trainer.dataset_size > 0
