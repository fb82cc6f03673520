"""Synthetic cellular-like traces, so that the gym trains and tests without recorded data.

A trace is in mahimahi's format: one integer millisecond timestamp per line, non-decreasing,
each line one delivery opportunity for a 1500-byte packet; the trace repeats with period =
its last timestamp.

The stochastic model of one link direction
------------------------------------------
* Rate. The log of the rate, x(t) = ln r(t), is a driftless Brownian motion with volatility
  `volatility_per_sqrt_s` (ln units per sqrt(second)), reflected at ln r_min and ln r_max,
  where r_max / r_min = `rate_range`. Reflected Brownian motion on an interval has the
  uniform law as its stationary law, so in the long run r(t) is log-uniform on
  [r_min, r_max], with mean (r_max - r_min) / ln(r_max / r_min); the walk starts from that law.
* Outages. A two-state Markov (on/off) process independent of the rate: on periods are
  exponential with mean `mean_time_between_outages_s`, outages exponential with mean
  `mean_outage_s`; nothing is delivered during an outage, and the rate walk goes on beneath
  it. The process starts on, so a trace does not open with dead air.
* Scale. r_min is chosen so that the long-run mean, P(on) times the log-uniform mean, equals
  `mean_mbps`. The realized path (outages included) is then rescaled so that its
  time-average over this trace is exactly `mean_mbps`: over a few minutes the walk alone
  wanders by about ten percent, and a user asking for an 8 Mbit/s trace should get one.
* Deliveries. Given the rate, opportunities are a Poisson process of rate r(t) / 1500 bytes:
  millisecond k (the interval (k, k+1] ms) holds Poisson(r_k * 1 ms / 12000 bit)
  opportunities, all stamped k + 1. Several lines may share a millisecond, as in mahimahi.
* Period. The last timestamp is pinned to the duration (one extra opportunity at the end if
  the last millisecond drew none) so that the trace repeats with period exactly `duration_s`.

The defaults are fitted by eye to the Saturator recordings (mahimahi's traces/): over 500 ms
windows they give a 5th / 95th percentile near 0.2 / 2.3 times the mean, an autocorrelation
near 0.85 at 500 ms and 0.3 at 5 s, and about 1% of windows with no delivery.

The same (parameters, seed, stream) give the same trace; `stream` separates independent
traces drawn from one seed (0 for the data direction, 1 for the ACK direction).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from ccgym.emulators.link_facts import PACKET_BYTES
from ccgym.files import atomic_write_text

# Bumped whenever the model or its use of the random stream changes, so that traces cached
# under a hash of the parameters are regenerated rather than silently reused.
GENERATOR_VERSION = 1

OPPORTUNITY_BITS = PACKET_BYTES * 8   # one delivery opportunity: a 1500-byte packet
STEP_MS = 1                   # the rate path and the timestamps have millisecond resolution
MS_PER_S = 1000

DATA_STREAM = 0  # random stream of a data-direction trace
ACK_STREAM = 1   # random stream of the ACK-direction trace drawn from the same seed


@dataclasses.dataclass(frozen=True)
class CellularModel:
    """Shape parameters of the cellular-like model (see the module docstring)."""

    rate_range: float = 12.0                  # r_max / r_min of the log-rate walk
    volatility_per_sqrt_s: float = 0.55       # standard deviation of ln r after 1 s, unreflected
    mean_time_between_outages_s: float = 40.0
    mean_outage_s: float = 0.8                # 0 disables outages

    def __post_init__(self) -> None:
        if not self.rate_range > 1:
            raise ValueError(f"rate_range must be > 1, got {self.rate_range}")
        if not self.volatility_per_sqrt_s >= 0:
            raise ValueError("volatility_per_sqrt_s must be >= 0, "
                             f"got {self.volatility_per_sqrt_s}")
        if not self.mean_time_between_outages_s > 0:
            raise ValueError("mean_time_between_outages_s must be > 0, "
                             f"got {self.mean_time_between_outages_s}")
        if not self.mean_outage_s >= 0:
            raise ValueError(f"mean_outage_s must be >= 0, got {self.mean_outage_s}")

    @property
    def on_fraction(self) -> float:
        """Long-run fraction of time out of outage."""
        on, off = self.mean_time_between_outages_s, self.mean_outage_s
        return on / (on + off)


def model_fields() -> list[str]:
    """Names of the CellularModel parameters (the optional keys of a `synthetic_trace`)."""
    return [f.name for f in dataclasses.fields(CellularModel)]


def _rng(seed: int, stream: int) -> np.random.Generator:
    if not (isinstance(seed, (int, np.integer)) and seed >= 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not (isinstance(stream, (int, np.integer)) and stream >= 0):
        raise ValueError(f"stream must be a non-negative integer, got {stream!r}")
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(stream),)))


def _reflected_log_rate(rng: np.random.Generator, steps: int, lo: float, hi: float,
                        volatility_per_sqrt_s: float) -> np.ndarray:
    """ln r at each step: Brownian motion reflected in [lo, hi], started from its stationary law.

    Folding a free Brownian path into the interval (period 2 * width, mirrored on the second
    half) gives exactly the reflected process, and is vectorized.
    """
    width = hi - lo
    start = rng.uniform(lo, hi)
    step_sd = volatility_per_sqrt_s * np.sqrt(STEP_MS / MS_PER_S)
    free = start + np.cumsum(rng.normal(0.0, step_sd, size=steps))
    folded = np.mod(free - lo, 2 * width)
    return lo + np.where(folded > width, 2 * width - folded, folded)


def _on_mask(rng: np.random.Generator, steps: int, model: CellularModel) -> np.ndarray:
    """True where millisecond k is out of outage; the process starts on."""
    if model.mean_outage_s == 0:
        return np.ones(steps, dtype=bool)
    on_ms = model.mean_time_between_outages_s * MS_PER_S
    off_ms = model.mean_outage_s * MS_PER_S
    boundaries: list[np.ndarray] = []
    covered = 0.0
    # Draw on/off pairs in chunks until they cover the trace; a chunk is sized to cover it
    # about twice, so one chunk nearly always suffices.
    pairs_per_chunk = int(2 * steps * STEP_MS / (on_ms + off_ms)) + 4
    while covered <= steps * STEP_MS:
        durations = np.empty(2 * pairs_per_chunk)
        durations[0::2] = rng.exponential(on_ms, size=pairs_per_chunk)
        durations[1::2] = rng.exponential(off_ms, size=pairs_per_chunk)
        ends = covered + np.cumsum(durations)
        boundaries.append(ends)
        covered = float(ends[-1])
    ends = np.concatenate(boundaries)
    # Each millisecond takes the state at its midpoint: an even number of boundaries passed
    # means on.
    midpoints = (np.arange(steps) + 0.5) * STEP_MS
    return np.searchsorted(ends, midpoints, side="right") % 2 == 0


def _rate_path(rng: np.random.Generator, mean_mbps: float, duration_s: float,
               model: CellularModel) -> np.ndarray:
    if not mean_mbps > 0:
        raise ValueError(f"mean_mbps must be > 0, got {mean_mbps}")
    steps = int(round(duration_s * MS_PER_S / STEP_MS))
    if steps < 1:
        raise ValueError(f"duration_s must be at least {STEP_MS} ms, got {duration_s}")
    # Long-run mean = on_fraction * r_min * (R - 1) / ln R; solve for r_min.
    ratio = model.rate_range
    r_min = mean_mbps / (model.on_fraction * (ratio - 1) / np.log(ratio))
    log_rate = _reflected_log_rate(rng, steps, np.log(r_min), np.log(r_min * ratio),
                                   model.volatility_per_sqrt_s)
    rate = np.exp(log_rate) * _on_mask(rng, steps, model)
    # The process starts on, so the first millisecond has a positive rate and the mean is > 0.
    return rate * (mean_mbps / rate.mean())


def cellular_rate_path(mean_mbps: float, duration_s: float, seed: int, *,
                       model: CellularModel = CellularModel(), stream: int = DATA_STREAM
                       ) -> np.ndarray:
    """The rate in Mbit/s of each millisecond (0 during outages) behind the trace that
    generate_cellular_trace returns for the same arguments; its time-average is mean_mbps."""
    return _rate_path(_rng(seed, stream), mean_mbps, duration_s, model)


def generate_cellular_trace(mean_mbps: float, duration_s: float, seed: int, *,
                            model: CellularModel = CellularModel(),
                            stream: int = DATA_STREAM) -> np.ndarray:
    """A synthetic cellular-like mahimahi trace: uint32 millisecond timestamps, non-decreasing,
    the last equal to the duration. Deterministic in (parameters, seed, stream)."""
    rng = _rng(seed, stream)
    rate = _rate_path(rng, mean_mbps, duration_s, model)
    per_step = rate * (STEP_MS / MS_PER_S) * 1e6 / OPPORTUNITY_BITS
    counts = rng.poisson(per_step)
    steps = len(rate)
    if counts[-1] == 0:
        counts[-1] = 1  # pin the period to the duration (see the module docstring)
    return np.repeat(np.arange(1, steps + 1, dtype=np.uint32) * STEP_MS, counts)


def validate_trace(timestamps: np.ndarray) -> None:
    """Raises ValueError unless timestamps are a valid mahimahi trace."""
    stamps = np.asarray(timestamps)
    if stamps.ndim != 1 or len(stamps) == 0:
        raise ValueError("a trace needs at least one timestamp, in a 1-D array")
    if not np.issubdtype(stamps.dtype, np.integer):
        raise ValueError(f"trace timestamps must be integers (ms), got {stamps.dtype}")
    if stamps[0] < 0:
        raise ValueError(f"trace timestamps must be >= 0, got {stamps[0]}")
    if np.any(np.diff(stamps.astype(np.int64)) < 0):
        first = int(np.argmax(np.diff(stamps.astype(np.int64)) < 0)) + 1
        raise ValueError(f"trace timestamps decrease at index {first}")
    if stamps[-1] <= 0:
        raise ValueError("the last trace timestamp (its period) must be > 0")


def write_trace(path: str | os.PathLike, timestamps: np.ndarray) -> Path:
    """Writes a mahimahi trace atomically: readers see the old file or the whole new one,
    never a partial trace, even with several processes writing the same path."""
    validate_trace(timestamps)
    path = Path(path)
    atomic_write_text(path, "\n".join(map(str, np.asarray(timestamps, dtype=np.int64).tolist()))
                      + "\n")
    return path
