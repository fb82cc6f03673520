"""Which iteration's policy to keep, and when to stop: one small object every trainer uses.

The best iteration is the one with the highest (held share, validation score): the held share
is the policy's lowest share beside competitors capped at [eval] share_floor, less what its
highest exceeds share_ceiling by (train/share_validation.py), 0 for every iteration when
neither is set, so that the score alone decides; the first iteration is the best so far
whatever its figures (a policy must exist to keep). Progress is any watched figure (the score,
and e.g. DAgger's held-out agreement) beating its best by more than min_delta;
after `patience` iterations without progress the run stops. All of it is decided from this
object's state, which a checkpoint carries (to_dict / from_dict), never from the files on disk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EarlyStopping:
    patience: int
    min_delta: float = 0.0
    best_iteration: int = 0  # 0: no iteration recorded yet
    best_score: float = -math.inf
    best_held_share: float = 0.0  # the best iteration's held share (0: no floor set)
    # Each watched figure's value when it last progressed (the score under "score").
    records: dict[str, float] = field(default_factory=dict)
    stale: int = 0  # iterations since any figure last progressed
    stopped: bool = False

    def update(self, iteration: int, score: float, held_share: float = 0.0,
               **figures: float) -> bool:
        """Records a finished iteration's validation score, its held share (see the module)
        and other watched figures (higher is better; NaN never progresses). True when this
        iteration is the new best: keep its policy."""
        progressed = False
        for name, value in {"score": score, **figures}.items():
            # A record moves only on progress (as Keras's EarlyStopping): a figure creeping
            # up by less than min_delta an iteration still counts once the steps add up.
            if value > self.records.get(name, -math.inf) + self.min_delta:
                self.records[name] = value
                progressed = True
        value = -math.inf if math.isnan(score) else score
        new_best = (self.best_iteration == 0
                    or (held_share, value) > (self.best_held_share, self.best_score))
        if new_best:
            self.best_iteration = iteration
            self.best_score, self.best_held_share = value, held_share
        self.stale = 0 if progressed else self.stale + 1
        self.stopped = self.stale >= self.patience
        return new_best

    def restart(self) -> None:
        """Continue a run that had stopped: patience starts over, the records stay."""
        self.stale, self.stopped = 0, False

    def to_dict(self) -> dict[str, Any]:
        return {"best_iteration": self.best_iteration, "best_score": self.best_score,
                "best_held_share": self.best_held_share, "records": dict(self.records),
                "stale": self.stale, "stopped": self.stopped}

    @classmethod
    def from_dict(cls, data: dict[str, Any], patience: int, min_delta: float) -> EarlyStopping:
        return cls(patience, min_delta, best_iteration=int(data["best_iteration"]),
                   best_score=float(data["best_score"]),
                   best_held_share=float(data.get("best_held_share", 0.0)),
                   records={str(k): float(v) for k, v in data["records"].items()},
                   stale=int(data["stale"]), stopped=bool(data["stopped"]))
