"""The report's training sections (analysis/report_training.py) on a run that chose its policy
by a share floor ([eval] share_floor), as training does, drawn for real."""

from __future__ import annotations

from pathlib import Path

from ccgym.analysis.report_parts import Figures
from ccgym.analysis.report_training import TrainingRun, best, training_section

STEPS = [1, 2, 3]
SCALARS = {
    "eval/score": (STEPS, [-2.0, -2.5, -2.2]),
    "eval/shares/beside_cubic": (STEPS, [0.5, 0.5, 0.8]),
    "eval/shares/beside_cubic/shared-24mbps-20ms-1bdp": (STEPS, [0.5, 0.5, 0.8]),
    "eval/shares/beside_bbr": (STEPS, [0.1, 0.4, 0.36]),
    "eval/shares/beside_bbr/shared-24mbps-20ms-1bdp": (STEPS, [0.1, 0.4, 0.36]),
    "eval/shares/lowest": (STEPS, [0.1, 0.4, 0.36]),
}


def run(floor: float, ceiling: float = 1.0) -> TrainingRun:
    config = {"run": {"name": "r"}, "eval": {"share_against": ["cubic", "bbr"],
                                             "share_floor": floor, "share_ceiling": ceiling}}
    return TrainingRun(Path("runs/r__1__20260101-000000"), config, SCALARS, None)


def test_the_kept_policy_is_the_one_training_chose() -> None:
    # By score alone iteration 1; held to 0.35, iterations 2 and 3 both hold it, and 3 scores
    # higher.
    assert best(run(0.0)) == (1, -2.0)
    assert best(run(0.35)) == (3, -2.2)
    # A ceiling of 0.65: iteration 3 takes 0.8 beside cubic, so 2 is kept.
    assert best(run(0.35, 0.65)) == (2, -2.5)


def test_a_floor_run_says_how_it_chose_and_draws_its_shares(tmp_path: Path) -> None:
    figures = Figures(tmp_path)
    section = training_section(run(0.35), figures)
    assert "policy kept at iteration 3" in section.summary
    assert "lowest share up to 0.35" in section.summary
    assert "share beside each competitor" in section.body
    # loss and agreement are not logged here: the score and the shares are the two figures
    assert figures.count == 2 and all(p.stat().st_size > 0 for p in tmp_path.iterdir())
    banded = training_section(run(0.35, 0.65), Figures(tmp_path / "banded"))
    assert "policy kept at iteration 2" in banded.summary
    assert "shares within 0.35-0.65" in banded.summary
