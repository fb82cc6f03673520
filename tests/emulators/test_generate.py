"""The synthetic cellular trace generator: deterministic, on target, bursty, valid mahimahi."""

from __future__ import annotations

import numpy as np
import pytest

from ccgym.emulators import generate
from ccgym.emulators.generate import CellularModel, generate_cellular_trace, write_trace

WINDOW_MS = 500
MBIT_PER_OPPORTUNITY = 1500 * 8 / 1e6
MEAN_TOLERANCE = 0.10   # the brief: within 10% of the target over 300 s
LONG_S = 300


def window_mbps(stamps: np.ndarray) -> np.ndarray:
    """Throughput of each whole 500 ms window of a trace, Mbit/s."""
    n = int(stamps[-1]) // WINDOW_MS
    counts = np.bincount(stamps[stamps < n * WINDOW_MS] // WINDOW_MS, minlength=n)
    return counts * MBIT_PER_OPPORTUNITY / (WINDOW_MS / 1000)


def mean_mbps(stamps: np.ndarray) -> float:
    return len(stamps) * MBIT_PER_OPPORTUNITY / (int(stamps[-1]) / 1000)


def test_same_seed_same_trace():
    a = generate_cellular_trace(8.0, 30, seed=7)
    b = generate_cellular_trace(8.0, 30, seed=7)
    np.testing.assert_array_equal(a, b)


def test_different_seed_or_stream_differs():
    a = generate_cellular_trace(8.0, 30, seed=7)
    b = generate_cellular_trace(8.0, 30, seed=8)
    c = generate_cellular_trace(8.0, 30, seed=7, stream=generate.ACK_STREAM)
    assert not np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("target, seed", [(2.0, 0), (8.0, 1), (8.0, 2), (30.0, 3)])
def test_mean_rate_near_target(target, seed):
    stamps = generate_cellular_trace(target, LONG_S, seed)
    assert abs(mean_mbps(stamps) - target) <= MEAN_TOLERANCE * target


def test_rate_path_average_is_the_target_and_zero_in_outages():
    rate = generate.cellular_rate_path(8.0, LONG_S, seed=4)
    assert len(rate) == LONG_S * 1000
    assert rate.mean() == pytest.approx(8.0, rel=1e-9)
    assert np.all(rate >= 0)
    assert np.any(rate == 0), "default model has outages"


def test_outages_present_by_default_and_absent_when_disabled():
    with_outages = window_mbps(generate_cellular_trace(8.0, LONG_S, seed=1))
    assert np.mean(with_outages == 0) > 0
    no_outages = CellularModel(mean_outage_s=0)
    without = window_mbps(generate_cellular_trace(8.0, LONG_S, seed=1, model=no_outages))
    # At the walk's lowest rate a 500 ms window still expects tens of opportunities.
    assert np.all(without > 0)


def test_rate_varies_like_a_cellular_link():
    windows = window_mbps(generate_cellular_trace(8.0, LONG_S, seed=2))
    p5, p95 = np.percentile(windows, [5, 95])
    assert p95 > 3 * p5, "a cellular-like trace is far from constant-rate"
    # Consecutive windows are correlated (a random walk), unlike a Poisson trace.
    assert np.corrcoef(windows[:-1], windows[1:])[0, 1] > 0.5


def test_output_is_valid_mahimahi():
    duration_s = 20
    stamps = generate_cellular_trace(5.0, duration_s, seed=3)
    assert stamps.dtype == np.uint32
    assert stamps.ndim == 1 and len(stamps) > 0
    assert np.all(np.diff(stamps.astype(np.int64)) >= 0)
    assert stamps[0] >= 1
    # The period (the last timestamp) is exactly the requested duration.
    assert stamps[-1] == duration_s * 1000
    generate.validate_trace(stamps)


def test_period_pinned_even_when_the_end_is_an_outage():
    # Outages nearly all the time: the last millisecond almost surely draws nothing.
    model = CellularModel(mean_time_between_outages_s=0.05, mean_outage_s=5.0)
    stamps = generate_cellular_trace(1.0, 10, seed=0, model=model)
    assert stamps[-1] == 10_000


@pytest.mark.parametrize("kwargs", [
    dict(mean_mbps=0.0, duration_s=10, seed=0),
    dict(mean_mbps=-1.0, duration_s=10, seed=0),
    dict(mean_mbps=5.0, duration_s=0, seed=0),
    dict(mean_mbps=5.0, duration_s=10, seed=-1),
])
def test_bad_parameters_raise(kwargs):
    with pytest.raises(ValueError):
        generate_cellular_trace(**kwargs)


@pytest.mark.parametrize("field, value", [("rate_range", 1.0), ("volatility_per_sqrt_s", -0.1),
                                          ("mean_time_between_outages_s", 0.0),
                                          ("mean_outage_s", -1.0)])
def test_bad_model_raises_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CellularModel(**{field: value})


def test_write_trace_round_trip(tmp_path):
    stamps = generate_cellular_trace(4.0, 5, seed=1)
    path = write_trace(tmp_path / "sub" / "x.down", stamps)
    lines = path.read_text().splitlines()
    assert [int(v) for v in lines] == stamps.tolist()
    assert sorted(p.name for p in path.parent.iterdir()) == ["x.down"], "no temp file left"


@pytest.mark.parametrize("bad", [[], [3, 2, 5], [0, 0], [1.5, 2.0]])
def test_write_trace_rejects_invalid_and_writes_nothing(tmp_path, bad):
    target = tmp_path / "bad.trace"
    with pytest.raises(ValueError):
        write_trace(target, np.array(bad))
    assert list(tmp_path.iterdir()) == []


def test_write_trace_replaces_atomically(tmp_path):
    target = tmp_path / "t.trace"
    write_trace(target, np.array([1, 2, 3], dtype=np.uint32))
    write_trace(target, np.array([5, 10], dtype=np.uint32))
    assert target.read_text() == "5\n10\n"
    assert [p.name for p in tmp_path.iterdir()] == ["t.trace"]
