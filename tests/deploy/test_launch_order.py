"""The order in which the real-time harnesses launch their senders: flows due together in an
order drawn from the run's seed, so that no flow of a pair gets the link first in every run."""
from __future__ import annotations

from ccgym.deploy.harness import launch_order


def test_flows_due_together_lead_by_turns_over_seeds() -> None:
    leaders = [launch_order([0.0, 0.0], seed)[0] for seed in range(1, 41)]
    assert 10 <= leaders.count(1) <= 30
    three = {tuple(launch_order([0.0, 0.0, 0.0], seed)) for seed in range(1, 41)}
    assert len(three) == 6


def test_one_seed_gives_one_order() -> None:
    assert launch_order([0.0] * 5, 7) == launch_order([0.0] * 5, 7)


def test_a_later_start_is_launched_later() -> None:
    for seed in range(1, 21):
        order = launch_order([5.0, 0.0, 0.0, 2.5], seed)
        assert order[2:] == [3, 0]
        assert sorted(order[:2]) == [1, 2]
