"""The best iteration and the patience count, decided from the object's own state."""

from __future__ import annotations

import math

from ccgym.train.early_stopping import EarlyStopping


def test_the_first_iteration_is_kept_whatever_its_score() -> None:
    stopping = EarlyStopping(patience=3)
    assert stopping.update(1, math.nan, agreement=0.2)  # no policy yet: keep this one
    assert stopping.best_iteration == 1
    assert stopping.update(2, -5.0)  # any number beats the NaN
    assert not stopping.update(3, -6.0)
    assert stopping.best_iteration == 2 and stopping.best_score == -5.0


def test_patience_counts_iterations_where_no_figure_progressed() -> None:
    stopping = EarlyStopping(patience=2, min_delta=0.1)
    stopping.update(1, 1.0, agreement=0.5)
    # The score improves by less than min_delta: a new best, but not progress.
    assert stopping.update(2, 1.05, agreement=0.5)
    assert stopping.stale == 1 and not stopping.stopped
    # Agreement progresses while the score falls: the run goes on, the best stays.
    assert not stopping.update(3, 0.0, agreement=0.7)
    assert stopping.stale == 0 and stopping.best_iteration == 2
    stopping.update(4, 1.0, agreement=0.7)
    stopping.update(5, 1.0, agreement=0.7)
    assert stopping.stopped
    stopping.restart()
    assert not stopping.stopped and stopping.stale == 0 and stopping.best_iteration == 2


def test_small_steps_add_up_to_progress() -> None:
    stopping = EarlyStopping(patience=5, min_delta=0.1)
    stopping.update(1, 0.0)
    stale = []
    for k, score in enumerate((0.06, 0.12, 0.18), start=2):
        stopping.update(k, score)
        stale.append(stopping.stale)
    # 0.12 is more than min_delta above the record 0.0; 0.18 is not above the new record 0.12.
    assert stale == [1, 0, 1]


def test_round_trip() -> None:
    stopping = EarlyStopping(patience=4, min_delta=0.01)
    for k, (score, agreement) in enumerate([(1.0, 0.3), (0.5, 0.4), (0.2, 0.4)], start=1):
        stopping.update(k, score, agreement=agreement)
    again = EarlyStopping.from_dict(stopping.to_dict(), 4, 0.01)
    assert again == stopping
    assert again.update(4, 2.0) and again.best_iteration == 4


def test_a_held_share_outranks_the_score() -> None:
    # [eval] share_floor: the lowest share capped at the floor decides first, the score second.
    stopping = EarlyStopping(patience=5)
    assert stopping.update(1, -1.0, held_share=0.10)
    assert stopping.update(2, -3.0, held_share=0.35)  # holds the floor: better despite its score
    assert not stopping.update(3, -0.5, held_share=0.20)  # a better score below the floor loses
    assert stopping.update(4, -2.0, held_share=0.35)  # at the floor the score decides
    assert stopping.best_iteration == 4
    assert (stopping.best_score, stopping.best_held_share) == (-2.0, 0.35)
    again = EarlyStopping.from_dict(stopping.to_dict(), 5, 0.0)
    assert again == stopping


def test_a_checkpoint_without_a_held_share_reads_as_none_held() -> None:
    data = EarlyStopping(patience=2).to_dict()
    del data["best_held_share"]  # written before share floors existed
    assert EarlyStopping.from_dict(data, 2, 0.0).best_held_share == 0.0
