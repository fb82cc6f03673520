"""The ideal congestion window of a link, and the expert action that steers toward it.

Three cases, as Indigo's oracle (Pantheon paper, Sec. 5):

- A constant-rate link with an infinite queue and no loss: the ideal window is the
  bandwidth-delay product, rate x min RTT / 1500 bytes (min RTT = 2 x one-way delay).
- A link whose best window is not the BDP (finite queue, loss, Poisson or burst
  delivery, a shaped ACK direction): the best *fixed* window by search. Windows near
  the BDP are simulated (`fixed:W`, all candidates of one round batched on threads in
  C++) and scored with the contest's metric; the grid is refined around the best.
- A trace link: a time-varying window read off the trace itself: the number of delivery
  opportunities the link makes in one min RTT, times a margin. The RTT counted is
  [t - lookback x min RTT, t + (1 - lookback) x min RTT): a window-limited sender's
  packets in flight are the deliveries of the RTT *behind* it (lookback 1: in a fluid
  model its sending rate is then exactly the link's), while counting the RTT ahead
  (lookback 0) shrinks the window before an outage instead of filling the queue. Beyond 1
  the count lags: a sender hears of a delivery only when its ACK returns, so 1 + (the ACK's
  one-way delay / min RTT), 1.5 on a symmetric path, counts what it can know of by now
  (bench_causal_oracle.py). The lookback is chosen from LOOKBACKS at margin 1, then the
  margin by the same search as the fixed window, simulating the schedule on an external
  flow set every STEP_MS exactly as `ccgym eval --schemes oracle` does. If the best fixed
  window scores higher (a Poisson trace, whose count of any one RTT is mostly noise), that
  wins.

Searches run as long as `ccgym eval` runs a link (a trace once, other links 30 s), so
the score reported by `ccgym oracle` is the oracle's score on the leaderboard. Results
are cached per (spec, seed, duration) in the process and in JSON files under
$CCGYM_CACHE/oracle (default ~/.cache/ccgym/oracle).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ccgym.emulators import _core
from ccgym.emulators.link_facts import (bdp_packets, default_duration_ms, is_plain_constant_link,
                                        mean_rate_mbps, parsed_link)
from ccgym.emulators.stepping import run_stepped
from ccgym.measure.metrics import summarize
from ccgym.oracle.cache import cached_search

# The search's first grid spans these multiples of the BDP (Indigo searched near the BDP).
SEARCH_LOW_FACTOR = 0.5
SEARCH_HIGH_FACTOR = 2.0
COARSE_POINTS = 9   # a ratio of 2^(1/4) between neighbours over 0.5..2 x BDP
REFINE_POINTS = 7   # each refinement spans the best point's two neighbours
SEARCH_ROUNDS = 5   # the first grid plus refinements; a round adding nothing ends it
# When the best candidate is at the edge of those tried, the next round looks this far beyond.
EDGE_FACTOR = 2.0
# Margins are rounded so that cached and printed values are tidy; a finer margin changes
# the window by less than a packet at any realistic BDP.
MARGIN_DECIMALS = 3
MARGIN_BOUNDS = (0.05, 20.0)
# Where the counted RTT sits, as the share of it behind now. Measured over the 8 generated
# and 7 recorded cellular links (each trace run once, the best of margins 0.8-1.5): a mean
# score of -2.47 and -2.37 looking wholly ahead, -2.29 and -2.18 with three quarters behind.
LOOKBACKS = (0.0, 0.25, 0.5, 0.75, 1.0)
# A trace window's count may lag now by up to an RTT (lookback 2), for measurements of
# what a sender can know (bench_causal_oracle.py); the oracle's search keeps to LOOKBACKS.
MAX_LOOKBACK = 2.0
# A fixed window is a whole number of packets (the sender keeps in_flight + 1 <= window).
# The fixed scheme accepts windows up to 20000; the stepped interface clamps to MAX_WINDOW.
FIXED_WINDOW_BOUNDS = (1.0, float(_core.MAX_WINDOW))
# A link with no propagation delay still looks ahead one millisecond, a trace's resolution.
MIN_HORIZON_MS = 1.0


class IdealWindow(Protocol):
    """The oracle's window for one link, as a function of time."""

    def window(self, now_ms: float) -> float: ...


@dataclass(frozen=True)
class ConstantIdealWindow:
    """A window that does not change: the BDP, or the best fixed window by search.

    score is the search's score of this window (None when the BDP rule set it).
    """

    value: float
    method: str  # "bdp" or "search"
    score: float | None = None

    def window(self, now_ms: float) -> float:
        return self.value


class TraceIdealWindow:
    """margin x the delivery opportunities in [now - lookback x horizon, ... + horizon),
    in [MIN_WINDOW, MAX_WINDOW]; an RTT that would start before 0 starts at 0.

    opportunities_ms must cover [0, period_ms + period_ms + horizon_ms) of the link as the
    simulator makes them; from period_ms on the trace repeats, so any later time folds
    back into [period_ms, 2 period_ms). A trace that runs once has period_ms = inf.
    """

    def __init__(self, opportunities_ms: np.ndarray, period_ms: float, horizon_ms: float,
                 margin: float = 1.0, score: float | None = None,
                 lookback: float = 0.0) -> None:
        if not 0.0 <= lookback <= MAX_LOOKBACK:
            raise ValueError(f"lookback must be in [0, {MAX_LOOKBACK:g}], got {lookback}")
        self.opportunities_ms = np.sort(np.asarray(opportunities_ms, dtype=np.float64))
        self.period_ms = float(period_ms)
        self.horizon_ms = float(horizon_ms)
        self.margin = float(margin)
        self.lookback = float(lookback)
        self.score = score

    @classmethod
    def for_link(cls, link: str | _core.LinkSpec, margin: float = 1.0, seed: int = 1,
                 score: float | None = None, lookback: float = 0.0) -> TraceIdealWindow:
        """The schedule of a trace link (spec text or parsed), from the simulator's delivery."""
        parsed = parsed_link(link)
        if not parsed.data_trace:
            raise ValueError(f"not a trace link: {parsed.to_string()}")
        period = float(_core.load_trace(parsed.data_trace)[-1])
        horizon = horizon_ms(parsed.delay_ms)
        span = (period if parsed.once else 2 * period) + horizon + 1
        opportunities = _core.opportunities(parsed.to_string(), span, seed)
        return cls(opportunities, math.inf if parsed.once else period, horizon, margin, score,
                   lookback)

    def with_margin(self, margin: float, score: float | None = None) -> TraceIdealWindow:
        return TraceIdealWindow(self.opportunities_ms, self.period_ms, self.horizon_ms,
                                margin, score, self.lookback)

    def with_lookback(self, lookback: float) -> TraceIdealWindow:
        return TraceIdealWindow(self.opportunities_ms, self.period_ms, self.horizon_ms,
                                self.margin, None, lookback)

    def opportunities_counted(self, now_ms: np.ndarray | float) -> np.ndarray:
        """How many opportunities fall in the RTT counted at each time: [t, t + horizon)
        from t = now - lookback x horizon (0 at the earliest)."""
        t = np.maximum(np.asarray(now_ms, dtype=np.float64) - self.lookback * self.horizon_ms,
                       0.0)
        if math.isfinite(self.period_ms):
            t = np.where(t >= self.period_ms,
                         self.period_ms + np.mod(t - self.period_ms, self.period_ms), t)
        o = self.opportunities_ms
        return (np.searchsorted(o, t + self.horizon_ms, side="left")
                - np.searchsorted(o, t, side="left"))

    def windows(self, now_ms: np.ndarray | float) -> np.ndarray:
        counted = self.opportunities_counted(now_ms)
        return np.clip(self.margin * counted, _core.MIN_WINDOW, _core.MAX_WINDOW)

    def window(self, now_ms: float) -> float:
        return float(self.windows(now_ms))

    def __repr__(self) -> str:
        return (f"TraceIdealWindow(margin={self.margin}, lookback={self.lookback}, "
                f"horizon_ms={self.horizon_ms}, period_ms={self.period_ms})")


def horizon_ms(delay_ms: float) -> float:
    """The trace window's look-ahead: the min RTT (twice the one-way delay)."""
    return max(2.0 * delay_ms, MIN_HORIZON_MS)


# ---------------------------------------------------------------- scoring candidates

def _score(sim: Any, duration_ms: float) -> float:
    return summarize(sim.log(), sim.opportunities(), duration_ms).score


def _rank(score: float) -> float:
    """NaN (nothing measurable) ranks below every real score."""
    return -math.inf if math.isnan(score) else score


def fixed_window_scores(link_spec: str, windows: Sequence[float], seed: int = 1,
                        duration_ms: float | None = None, threads: int = 0) -> list[float]:
    """The contest score of `fixed:W` for each window, the runs batched on threads."""
    duration = default_duration_ms(link_spec) if duration_ms is None else duration_ms
    sims = [_core.Simulator(link_spec, [(f"fixed:{float(w)!r}", 0.0, -1.0)], seed)
            for w in windows]
    _core.run_all_until(sims, duration, threads)
    return [_score(sim, duration) for sim in sims]


def schedule_scores(link_spec: str, schedules: Sequence[Callable[[float], float]],
                    seed: int = 1, duration_ms: float | None = None,
                    threads: int = 1, within_rules: bool = False) -> list[float]:
    """The score of each window schedule on an external flow, set every STEP_MS.

    The stepping is `ccgym eval`'s (emulators.stepping.run_stepped): the window for
    [k STEP_MS, (k+1) STEP_MS) is the schedule's value at k STEP_MS. One thread by
    default: a step is microseconds of work, less than starting threads for it
    (measured 35x faster than one thread per core on a 140 s cellular trace).
    within_rules: the window is not set but moved toward the schedule's value by the action
    the DAgger expert would label (expert_action), within the growth ceiling, as a learned
    policy moves its own: what perfect imitation of that expert would score.
    """
    duration = default_duration_ms(link_spec) if duration_ms is None else duration_ms
    sims = [_core.Simulator(link_spec, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], seed) for _ in schedules]

    def decide(now_ms: float) -> None:
        for sim, schedule in zip(sims, schedules):
            if within_rules:
                sim.take_action(expert_action(sim.window(), schedule(now_ms),
                                              sim.growth_ceiling()))
            else:
                sim.set_window(schedule(now_ms))

    run_stepped(sims, [duration] * len(sims), decide, threads)
    return [_score(sim, duration) for sim in sims]


def _trace_schedule_scores(ideal: TraceIdealWindow, link_spec: str, margins: Sequence[float],
                           seed: int, duration_ms: float) -> list[float]:
    schedules = [stepped_schedule(ideal.with_margin(m), duration_ms) for m in margins]
    return schedule_scores(link_spec, schedules, seed, duration_ms)


def stepped_schedule(ideal: TraceIdealWindow, duration_ms: float) -> Callable[[float], float]:
    """The ideal's window as a schedule for `schedule_scores`, read from a table made once.

    The window at each step is precomputed in numpy: the stepping loop then only reads it.
    """
    steps = math.ceil(duration_ms / _core.STEP_MS)
    table = ideal.windows(np.arange(steps) * _core.STEP_MS)

    def schedule(now_ms: float) -> float:
        return float(table[int(round(now_ms / _core.STEP_MS))])
    return schedule


# ---------------------------------------------------------------- the search

def grid_search(score_many: Callable[[list[float]], list[float]],
                first_grid: Sequence[float] | np.ndarray,
                snap: Callable[[np.ndarray], np.ndarray], bounds: tuple[float, float],
                rounds: int = SEARCH_ROUNDS, exact: Sequence[float] = ()) -> tuple[float, float]:
    """Maximizes a score over a positive parameter: a grid, then finer log grids between
    the best point's neighbours (or beyond it, when it is at an edge), until a round
    adds nothing. Grid points are snapped (e.g. to whole packets); `exact` values are
    scored in the first round as given. Ties go to the smaller value (less queueing).
    """
    tried: dict[float, float] = {}
    grid = np.asarray(first_grid, dtype=np.float64)
    extra = [float(x) for x in exact]
    for _ in range(rounds):
        snapped = np.unique(snap(np.clip(grid, *bounds)))
        new = sorted({float(x) for x in [*snapped, *extra] if float(x) not in tried})
        extra = []
        if not new:
            break
        tried.update(zip(new, score_many(new)))
        grid = _finer_grid(sorted(tried), _best(tried), bounds)
    best = _best(tried)
    return best, tried[best]


def _best(tried: dict[float, float]) -> float:
    return max(sorted(tried), key=lambda x: (_rank(tried[x]), -x))


def _finer_grid(points: list[float], best: float, bounds: tuple[float, float]) -> np.ndarray:
    i = points.index(best)
    low = points[i - 1] if i > 0 else max(bounds[0], best / EDGE_FACTOR)
    high = points[i + 1] if i + 1 < len(points) else min(bounds[1], best * EDGE_FACTOR)
    return np.geomspace(low, high, REFINE_POINTS)


def _first_grid(center: float) -> np.ndarray:
    return np.geomspace(center * SEARCH_LOW_FACTOR, center * SEARCH_HIGH_FACTOR, COARSE_POINTS)


@dataclass(frozen=True)
class FixedWindowSearch:
    """The best fixed window found for a link, in packets, and its contest score."""

    window: float
    score: float


@dataclass(frozen=True)
class TraceWindowSearch:
    """The best trace window found for a link (see TraceIdealWindow) and its contest score."""

    margin: float
    lookback: float
    score: float


def best_fixed_window(link_spec: str, seed: int = 1, duration_ms: float | None = None,
                      candidates: Sequence[float] | None = None) -> FixedWindowSearch:
    """Indigo's best fixed window.

    Without candidates, whole windows near the BDP are searched, and the BDP itself is
    always among those scored, so the result is never worse than the BDP. With
    candidates, exactly those are scored.
    """
    duration = default_duration_ms(link_spec) if duration_ms is None else duration_ms

    def score_many(windows: list[float]) -> list[float]:
        return fixed_window_scores(link_spec, windows, seed, duration)

    if candidates is not None:
        windows = [float(w) for w in candidates]
        if not windows:
            raise ValueError("candidates is empty")
        scores = dict(zip(windows, score_many(windows)))
        best = _best(scores)
        return FixedWindowSearch(best, scores[best])
    parsed = _core.parse_link_spec(link_spec)
    bdp = float(np.clip(bdp_packets(mean_rate_mbps(link_spec, seed), parsed.delay_ms),
                        *FIXED_WINDOW_BOUNDS))
    return FixedWindowSearch(*grid_search(score_many, _first_grid(bdp), np.round,
                                          FIXED_WINDOW_BOUNDS, exact=[bdp]))


def best_trace_window(link_spec: str, seed: int = 1, duration_ms: float | None = None,
                      lookbacks: Sequence[float] = LOOKBACKS) -> TraceWindowSearch:
    """The trace window with the best score. Each of the lookbacks is scored at margin 1,
    then the margin is searched at the best one."""
    duration = default_duration_ms(link_spec) if duration_ms is None else duration_ms
    ideal = TraceIdealWindow.for_link(link_spec, seed=seed)
    by_lookback = [ideal.with_lookback(lookback) for lookback in lookbacks]
    scores = schedule_scores(link_spec, [stepped_schedule(candidate, duration)
                                         for candidate in by_lookback], seed, duration)
    best = max(range(len(lookbacks)), key=lambda i: (_rank(scores[i]), -i))
    ideal = by_lookback[best]
    known = {1.0: scores[best]}  # margin 1 at this lookback was just scored

    def score_many(margins: list[float]) -> list[float]:
        new = [m for m in margins if m not in known]
        known.update(zip(new, _trace_schedule_scores(ideal, link_spec, new, seed, duration)))
        return [known[m] for m in margins]

    margin, score = grid_search(score_many, _first_grid(1.0),
                                lambda g: np.round(g, MARGIN_DECIMALS), MARGIN_BOUNDS,
                                exact=[1.0])
    return TraceWindowSearch(margin, ideal.lookback, score)


# ---------------------------------------------------------------- choosing and caching

_MEMORY: dict[tuple[str, int, float, tuple[float, ...]], IdealWindow] = {}


def ideal_window(link: str | _core.LinkSpec, seed: int = 1, duration_ms: float | None = None,
                 lookbacks: Sequence[float] = LOOKBACKS) -> IdealWindow:
    """The oracle's window for a link (spec text or parsed): the BDP, the best fixed window or
    a trace's schedule (lookback: the best of `lookbacks`; (1.0,): only the RTT behind now).

    Searches are cached per (spec, seed, duration, lookbacks) in the process and on disk.
    """
    parsed = parsed_link(link)
    canonical = parsed.to_string()
    duration = default_duration_ms(parsed) if duration_ms is None else float(duration_ms)
    key = (canonical, int(seed), duration, tuple(float(b) for b in lookbacks))
    if not key[3] or not all(0.0 <= b <= 1.0 for b in key[3]):
        raise ValueError(f"lookbacks must be values in [0, 1], got {list(lookbacks)}")
    if key not in _MEMORY:
        _MEMORY[key] = _compute_ideal(parsed, *key)
    return _MEMORY[key]


def _compute_ideal(parsed: _core.LinkSpec, spec: str, seed: int, duration_ms: float,
                   lookbacks: tuple[float, ...]) -> IdealWindow:
    """The window of `parsed`, whose canonical text is `spec` (what the searches run)."""
    if parsed.data_trace:
        return _trace_ideal(parsed, spec, seed, duration_ms, lookbacks)
    if is_plain_constant_link(parsed):
        bdp = bdp_packets(parsed.rate_mbps, parsed.delay_ms)
        # A window outside the sender's range cannot be set: the nearest one can.
        return ConstantIdealWindow(float(np.clip(bdp, _core.MIN_WINDOW, _core.MAX_WINDOW)), "bdp")
    fixed = _cached_fixed(spec, seed, duration_ms)
    return ConstantIdealWindow(fixed.window, "search", fixed.score)


def _trace_ideal(parsed: _core.LinkSpec, spec: str, seed: int, duration_ms: float,
                 lookbacks: tuple[float, ...]) -> IdealWindow:
    """The time-varying window, unless the best fixed window scores higher: following
    the trace pays where its rate moves slowly (cellular), but on a Poisson trace the
    count of any one RTT is mostly noise and a steady window can do better."""
    trace = cached_search("trace", TraceWindowSearch, spec, seed, duration_ms,
                          lambda: best_trace_window(spec, seed, duration_ms, lookbacks),
                          lookbacks=list(lookbacks))
    fixed = _cached_fixed(spec, seed, duration_ms)
    if _rank(fixed.score) > _rank(trace.score):
        return ConstantIdealWindow(fixed.window, "search", fixed.score)
    return TraceIdealWindow.for_link(parsed, trace.margin, seed, trace.score, trace.lookback)


def _cached_fixed(spec: str, seed: int, duration_ms: float) -> FixedWindowSearch:
    return cached_search("fixed", FixedWindowSearch, spec, seed, duration_ms,
                         lambda: best_fixed_window(spec, seed, duration_ms))


def expert_action(window: float, ideal: float, ceiling: float = _core.MAX_WINDOW) -> int:
    """The action whose result, grown at most to the ceiling (the policy's growth ceiling), is
    closest to the ideal window (the C++ definition)."""
    return int(_core.closest_action(window, ideal, ceiling))


# ---------------------------------------------------------------- a link's summary

@dataclass(frozen=True)
class OracleSummary:
    """What `ccgym oracle` reports of a link. ideal_window is None for a trace link (its
    window varies; margin and lookback say how it is counted) and margin and lookback
    None otherwise."""

    link: str
    bdp_packets: float
    ideal_window: float | None
    margin: float | None
    score: float
    bdp_score: float
    lookback: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: NaN and infinite scores become None (strict JSON has neither)."""
        def number(value: float | None) -> float | None:
            return value if value is not None and math.isfinite(value) else None

        return {"link": self.link, "bdp_packets": self.bdp_packets,
                "ideal_window": self.ideal_window, "margin": self.margin,
                "lookback": self.lookback, "score": number(self.score),
                "bdp_score": number(self.bdp_score)}


def summarize_link(name: str, link_spec: str, seed: int = 1,
                   duration_ms: float | None = None) -> OracleSummary:
    """The BDP, the oracle's window and both their scores over one run of the link."""
    duration = default_duration_ms(link_spec) if duration_ms is None else float(duration_ms)
    delay = _core.parse_link_spec(link_spec).delay_ms
    bdp = bdp_packets(mean_rate_mbps(link_spec, seed), delay)
    bdp_window = float(np.clip(bdp, *FIXED_WINDOW_BOUNDS))
    [bdp_score] = fixed_window_scores(link_spec, [bdp_window], seed, duration)
    ideal = ideal_window(link_spec, seed, duration)
    if isinstance(ideal, TraceIdealWindow):
        return OracleSummary(name, bdp, None, ideal.margin, _known(ideal.score), bdp_score,
                             ideal.lookback)
    assert isinstance(ideal, ConstantIdealWindow)
    # The BDP rule's window is the BDP window just measured (both clamped alike).
    score = bdp_score if ideal.method == "bdp" else _known(ideal.score)
    return OracleSummary(name, bdp, ideal.value, None, score, bdp_score)


def _known(score: float | None) -> float:
    return math.nan if score is None else score
