"""Pantheon's calibrated emulators: fit a five-parameter link to measured runs of several schemes.

The link is a bottleneck rate, a one-way propagation delay, a DropTail queue (packets), an
i.i.d. loss rate and constant or Poisson deliveries. A candidate is scored by simulating every
measured scheme over it in virtual time and taking the replication error (Pantheon, section
5): for each scheme the mean of the relative differences in mean throughput and in
95th-percentile one-way delay between the emulated and the measured runs, averaged over the
schemes. The four numeric parameters are searched by Bayesian optimization (Optuna's
Gaussian-process sampler, expected improvement), once for each delivery process; the better
fit wins.

A candidate's simulations use fixed seeds, so the error of a link is a deterministic function
of its parameters, which is what the Gaussian process assumes.
"""

from __future__ import annotations

import contextlib
import logging
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.link_facts import PACKET_BYTES
from ccgym.emulators.links import link_set_text
from ccgym.interrupts import handlers_kept
from ccgym.measure.measurements import Measured, Measurements
from ccgym.measure.metrics import delay_p95_ms, throughput_mbps

DELIVERIES = ("constant", "poisson")
# The search space, bounded by what the measurements show: no scheme delivers more than the
# rate; no packet arrives sooner than the propagation delay; a buffer-filling scheme's extra
# delay is the queue's; every scheme sees the link's random loss, so the least loss measured
# is at least that (within the noise of a few runs).
RATE_RANGE = (0.9, 2.5)          # x the highest measured throughput
DELAY_RANGE = (0.5, 1.05)        # x the lowest measured p95 one-way delay
QUEUE_PACKETS_LIMITS = (2, 4000)
QUEUE_HEADROOM = 4.0             # x (pipe + the largest standing queue measured), in packets
QUEUE_MIN_UPPER = 20             # the queue's upper bound is never below this
LOSS_LIMITS = (1e-5, 0.1)        # log scale: 1e-5 is no loss over runs of seconds
LOSS_HEADROOM = 2.0              # x the least measured loss rate
LOSS_MIN_UPPER = 1e-3            # the loss's upper bound is never below this
PACKET_BITS = PACKET_BYTES * 8
STARTUP_TRIALS = 8               # random trials before the Gaussian process takes over
DEFAULT_SIM_RUNS = 2             # seeds per scheme in each candidate's simulation


@dataclass
class LinkParams:
    rate_mbps: float
    delay_ms: float
    queue_packets: int
    loss: float
    delivery: str

    def spec(self) -> str:
        return (f"rate_mbps={self.rate_mbps:.6g},delay_ms={self.delay_ms:.6g},"
                f"delivery={self.delivery},queue=droptail:packets={self.queue_packets},"
                f"loss={self.loss:.6g}")


@dataclass
class SchemeFit:
    """A scheme measured and emulated, and its replication error."""

    scheme: str
    measured_throughput_mbps: float
    measured_delay_p95_ms: float
    emulated_throughput_mbps: float
    emulated_delay_p95_ms: float
    error: float


@dataclass
class Fit:
    params: LinkParams
    error: float                    # mean over schemes
    schemes: list[SchemeFit]
    trials: int
    error_by_delivery: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {"link": {**asdict(self.params), "spec": self.params.spec()}, "error": self.error,
                "error_by_delivery": self.error_by_delivery, "trials": self.trials,
                "schemes": [asdict(s) for s in self.schemes]}


# ---------------------------------------------------------------- scoring a candidate

def relative_error(emulated: float, measured: float) -> float:
    return abs(emulated - measured) / measured


def emulate(params: LinkParams, measured: Sequence[Measured], sim_runs: int = DEFAULT_SIM_RUNS,
            threads: int = 0) -> list[SchemeFit]:
    """Every measured scheme simulated over the candidate link (seeds 1..sim_runs, each scheme
    for its measured duration), against its measurement."""
    spec = params.spec()
    seeds = range(1, sim_runs + 1)
    sims = [[_core.Simulator(spec, [(m.scheme, 0.0, -1.0)], seed) for seed in seeds]
            for m in measured]
    longest_ms = max(m.duration_s for m in measured) * 1000.0
    _core.run_all_until([s for group in sims for s in group], longest_ms, threads)
    out = []
    for m, group in zip(measured, sims):
        duration_ms = m.duration_s * 1000.0
        logs = [sim.log() for sim in group]
        tput = float(np.mean([throughput_mbps(log, duration_ms) for log in logs]))
        delays = [delay_p95_ms(log, duration_ms) for log in logs]
        delays = [d for d in delays if math.isfinite(d)]
        delay = float(np.mean(delays)) if delays else math.inf
        # A link that delivers nothing has no delay to compare: count it as all wrong.
        delay_error = relative_error(delay, m.delay_p95_ms) if math.isfinite(delay) else 1.0
        error = (relative_error(tput, m.throughput_mbps) + delay_error) / 2
        out.append(SchemeFit(m.scheme, m.throughput_mbps, m.delay_p95_ms, tput, delay, error))
    return out


def replication_error(fits: Sequence[SchemeFit]) -> float:
    return sum(f.error for f in fits) / len(fits)


# ---------------------------------------------------------------- the search

@dataclass
class SearchSpace:
    rate_mbps: tuple[float, float]
    delay_ms: tuple[float, float]
    queue_packets: tuple[int, int]
    loss: tuple[float, float]
    guess: dict[str, float]  # the first candidate: where a person would start

    @classmethod
    def around(cls, measured: Sequence[Measured]) -> SearchSpace:
        top = max(m.throughput_mbps for m in measured)
        low = min(m.delay_p95_ms for m in measured)
        high = max(m.delay_p95_ms for m in measured)
        packets_per_ms = top * 1000.0 / PACKET_BITS
        pipe = packets_per_ms * 2 * low          # a BDP, with the delay's upper bound
        standing = packets_per_ms * (high - low)  # the longest queue a scheme kept
        queue = (QUEUE_PACKETS_LIMITS[0],
                 int(min(max(QUEUE_HEADROOM * (pipe + standing), QUEUE_MIN_UPPER),
                         QUEUE_PACKETS_LIMITS[1])))
        losses = [m.loss for m in measured if m.loss is not None]
        least_loss = min(losses) if len(losses) == len(measured) else None
        loss = (LOSS_LIMITS[0], LOSS_LIMITS[1] if least_loss is None else
                min(max(LOSS_HEADROOM * least_loss, LOSS_MIN_UPPER), LOSS_LIMITS[1]))
        rate, delay = (top * RATE_RANGE[0], top * RATE_RANGE[1]), (low * DELAY_RANGE[0],
                                                                    low * DELAY_RANGE[1])
        guess = {"rate_mbps": _clamp(top * 1.05, rate), "delay_ms": _clamp(low * 0.9, delay),
                 "queue_packets": int(_clamp(pipe, queue)),
                 "loss": _clamp(least_loss if least_loss is not None else 1e-3, loss)}
        return cls(rate, delay, queue, loss, guess)


def _clamp(value: float, bounds: tuple[float, float]) -> float:
    return min(max(value, bounds[0]), bounds[1])


Progress = Callable[[int, float], None]  # (trials done, best error so far)
Evaluator = Callable[[list[LinkParams]], list[float]]  # candidates -> their errors


def _suggest(trial: Any, space: SearchSpace, delivery: str) -> LinkParams:
    return LinkParams(
        rate_mbps=trial.suggest_float("rate_mbps", *space.rate_mbps, log=True),
        delay_ms=trial.suggest_float("delay_ms", *space.delay_ms, log=True),
        queue_packets=trial.suggest_int("queue_packets", *space.queue_packets, log=True),
        loss=trial.suggest_float("loss", *space.loss, log=True),
        delivery=delivery)


def fit_delivery(measured: Sequence[Measured], delivery: str, trials: int, seed: int = 1,
                 sim_runs: int = DEFAULT_SIM_RUNS, batch: int = 1,
                 evaluate_batch: Evaluator | None = None,
                 progress: Progress | None = None) -> tuple[LinkParams, float]:
    """The best link of one delivery process after `trials` candidates: (params, error).

    With evaluate_batch (e.g. on a Ray cluster), `batch` candidates are asked for at once and
    scored together; otherwise one at a time, here.
    """
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # deterministic_objective is marked experimental; its meaning (no noise term) is all we use.
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    space = SearchSpace.around(measured)
    sampler = optuna.samplers.GPSampler(seed=seed, n_startup_trials=STARTUP_TRIALS,
                                        deterministic_objective=True)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.enqueue_trial(space.guess)

    def score(params: list[LinkParams]) -> list[float]:
        if evaluate_batch is not None:
            return evaluate_batch(params)
        return [replication_error(emulate(p, measured, sim_runs)) for p in params]

    done = 0
    while done < trials:
        asked = [study.ask() for _ in range(min(batch, trials - done))]
        params = [_suggest(t, space, delivery) for t in asked]
        for trial, error in zip(asked, score(params)):
            study.tell(trial, error)
        done += len(asked)
        if progress is not None:
            progress(len(asked), study.best_value)
    best = study.best_trial
    assert best.value is not None  # every trial was told its error
    return _suggest(optuna.trial.FixedTrial(best.params), space, delivery), best.value


def fit(measured: Sequence[Measured], trials: int, seed: int = 1,
        sim_runs: int = DEFAULT_SIM_RUNS, batch: int = 1,
        evaluate_batch: Evaluator | None = None,
        progress: Progress | None = None) -> Fit:
    """Fits each delivery process with `trials` candidates and keeps the better link."""
    best: dict[str, tuple[LinkParams, float]] = {}
    for delivery in DELIVERIES:
        best[delivery] = fit_delivery(measured, delivery, trials, seed, sim_runs, batch,
                                      evaluate_batch, progress)
    params, _ = min(best.values(), key=lambda item: item[1])
    schemes = emulate(params, measured, sim_runs)
    return Fit(params, replication_error(schemes), schemes, trials * len(DELIVERIES),
               {delivery: error for delivery, (_, error) in best.items()})


@dataclass
class LeftOut:
    scheme: str
    params: LinkParams
    fit_error: float      # on the schemes it was fitted to
    predicted: SchemeFit  # the left-out scheme over that link

    def to_dict(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "link": {**asdict(self.params), "spec": self.params.spec()},
                "fit_error": self.fit_error, "error": self.predicted.error,
                "predicted": asdict(self.predicted)}


def leave_one_out(measured: Sequence[Measured], delivery: str, trials: int, seed: int = 1,
                  sim_runs: int = DEFAULT_SIM_RUNS, batch: int = 1,
                  evaluator_for: Callable[[Sequence[Measured]], Evaluator] | None = None,
                  progress: Progress | None = None) -> list[LeftOut]:
    """For each scheme: fit a link of `delivery` on all the others, then predict the one left
    out. The delivery process is the full fit's: searching both again for each scheme would
    double the time for a choice the full fit already made."""
    out = []
    for left in measured:
        rest = [m for m in measured if m is not left]
        evaluate = evaluator_for(rest) if evaluator_for else None
        params, error = fit_delivery(rest, delivery, trials, seed, sim_runs, batch, evaluate,
                                     progress)
        predicted = emulate(params, [left], sim_runs)[0]
        out.append(LeftOut(left.scheme, params, error, predicted))
    return out


# ---------------------------------------------------------------- the result

@dataclass
class Calibration:
    measurements: Measurements
    fit: Fit
    left_out: list[LeftOut] | None
    wall_time_s: float

    def to_dict(self) -> dict[str, Any]:
        """What --json writes; `kind` lets `ccgym report` recognize it."""
        out: dict[str, Any] = {
            "kind": "calibration",
            "path": self.measurements.path,
            "files": self.measurements.files,
            "measured": [asdict(m) for m in self.measurements.schemes],
            **self.fit.to_dict(),
            "wall_time_s": self.wall_time_s,
        }
        if self.left_out is not None:
            out["leave_one_out"] = {
                "error": sum(x.predicted.error for x in self.left_out) / len(self.left_out),
                "schemes": [x.to_dict() for x in self.left_out]}
        return out


def link_set_toml(params: LinkParams, name: str, description: str, source: str) -> str:
    """A one-link TOML link set (configs/links format) holding the calibrated link."""
    def rounded(value: float) -> float:
        return float(f"{value:.6g}")

    return link_set_text("calibrated", description, [{
        "name": name, "source": source, "rate_mbps": rounded(params.rate_mbps),
        "delay_ms": rounded(params.delay_ms), "delivery": params.delivery,
        "queue": f"droptail:packets={params.queue_packets}", "loss": rounded(params.loss)}])


# ---------------------------------------------------------------- Ray


@contextlib.contextmanager
def ray_evaluators(address: str, sim_runs: int = DEFAULT_SIM_RUNS
                   ) -> Iterator[tuple[int, Callable[[Sequence[Measured]], Evaluator]]]:
    """Candidates scored as Ray tasks on the cluster at `address`: (how many to score at once,
    a factory of evaluators for a set of measurements). Disconnects when the block ends."""
    import ray

    with handlers_kept():
        ray.init(address=address, logging_level=logging.WARNING)
    try:
        @ray.remote(num_cpus=1)
        def score(params: LinkParams, measured: list[Measured]) -> float:
            # One core per task: the cluster's parallelism is across tasks.
            return replication_error(emulate(params, measured, sim_runs, threads=1))

        def evaluator(measured: Sequence[Measured]) -> Evaluator:
            shared = ray.put(list(measured))
            return lambda params: ray.get([score.remote(p, shared) for p in params])

        yield max(1, int(ray.cluster_resources().get("CPU", 1))), evaluator
    finally:
        ray.shutdown()
