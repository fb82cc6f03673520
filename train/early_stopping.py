"""Which iteration's policy to keep, and when to stop: one small object every trainer uses.

The best iteration is the one with the highest validation score; the first iteration is the
best so far whatever its score (a policy must exist to keep). Progress is any watched figure
(the score, and e.g. DAgger's held-out agreement) beating its best by more than min_delta;
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
    # Each watched figure's value when it last progressed (the score under "score").
    records: dict[str, float] = field(default_factory=dict)
    stale: int = 0  # iterations since any figure last progressed
    stopped: bool = False

    def update(self, iteration: int, score: float, **figures: float) -> bool:
        """Records a finished iteration's validation score and other watched figures (higher is
        better; NaN never progresses). True when this iteration is the new best: keep its
        policy."""
        progressed = False
        for name, value in {"score": score, **figures}.items():
            # A record moves only on progress (as Keras's EarlyStopping): a figure creeping
            # up by less than min_delta an iteration still counts once the steps add up.
            if value > self.records.get(name, -math.inf) + self.min_delta:
                self.records[name] = value
                progressed = True
        value = -math.inf if math.isnan(score) else score
        new_best = self.best_iteration == 0 or value > self.best_score
        if new_best:
            self.best_iteration = iteration
            self.best_score = max(value, self.best_score)
        self.stale = 0 if progressed else self.stale + 1
        self.stopped = self.stale >= self.patience
        return new_best

    def restart(self) -> None:
        """Continue a run that had stopped: patience starts over, the records stay."""
        self.stale, self.stopped = 0, False

    def to_dict(self) -> dict[str, Any]:
        return {"best_iteration": self.best_iteration, "best_score": self.best_score,
                "records": dict(self.records), "stale": self.stale, "stopped": self.stopped}

    @classmethod
    def from_dict(cls, data: dict[str, Any], patience: int, min_delta: float) -> EarlyStopping:
        return cls(patience, min_delta, best_iteration=int(data["best_iteration"]),
                   best_score=float(data["best_score"]),
                   records={str(k): float(v) for k, v in data["records"].items()},
                   stale=int(data["stale"]), stopped=bool(data["stopped"]))
