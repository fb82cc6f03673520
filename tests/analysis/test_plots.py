"""Plots are written as complete PNGs, atomically; the geometry helpers are right."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from ccgym.analysis import plots
from ccgym.measure import metrics
from ccgym.measure.logs import PacketLog

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DURATION_MS = 3000.0


def two_flow_log() -> PacketLog:
    rng = np.random.default_rng(5)
    n = 2000
    send = np.sort(rng.uniform(0, DURATION_MS, n))
    arrival = send + rng.uniform(20, 80, n)
    dropped = rng.random(n) < 0.02
    arrival[dropped] = np.nan
    return PacketLog.from_columns({
        "flow": rng.integers(0, 2, n), "seq": np.arange(n), "bytes": np.full(n, 1500),
        "send_ms": send, "arrival_ms": arrival, "dropped": dropped.astype(np.uint8),
    })


def assert_only_png(directory, name: str) -> None:
    """The plot exists, is a non-empty PNG, and no temporary file is left beside it."""
    assert [p.name for p in directory.iterdir()] == [name]
    data = (directory / name).read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > len(PNG_SIGNATURE)


def test_plot_throughput(tmp_path):
    opportunities = np.arange(0, DURATION_MS, 0.25)
    plots.plot_throughput(two_flow_log(), opportunities, DURATION_MS, tmp_path / "tput.png")
    assert_only_png(tmp_path, "tput.png")


def test_plot_delay(tmp_path):
    plots.plot_delay(two_flow_log(), DURATION_MS, tmp_path / "delay.png")
    assert_only_png(tmp_path, "delay.png")


def test_plot_tradeoff(tmp_path):
    log = two_flow_log()
    run = metrics.summarize(log, np.arange(0, DURATION_MS, 0.25), DURATION_MS)
    points = {
        "from metrics": [run, run.to_dict()],
        "pairs": [(100.0, 5.0), (150.0, 4.0), (120.0, 4.6)],
        "one run": [(300.0, 6.0)],
    }
    plots.plot_tradeoff(points, (40.0, 7.0), tmp_path / "tradeoff.png")
    assert_only_png(tmp_path, "tradeoff.png")


def test_a_plot_replaces_an_old_one(tmp_path):
    target = tmp_path / "delay.png"
    target.write_bytes(b"old")
    plots.plot_delay(two_flow_log(), DURATION_MS, target)
    assert_only_png(tmp_path, "delay.png")


def test_a_failed_plot_leaves_nothing(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("disk full")
    monkeypatch.setattr(Figure, "savefig", fail)
    with pytest.raises(RuntimeError):
        plots.plot_delay(two_flow_log(), DURATION_MS, tmp_path / "delay.png")
    assert list(tmp_path.iterdir()) == []


def test_convex_hull_drops_inner_points():
    square = [(0, 0), (2, 0), (2, 2), (0, 2)]
    inner = [(1, 1), (0.5, 1.5), (1, 0)]  # (1, 0) lies on an edge: not a vertex
    hull = plots.convex_hull(np.array(square + inner))
    assert sorted(map(tuple, hull.tolist())) == sorted(map(tuple, np.array(square, float).tolist()))


def test_ellipse_of_runs_spans_one_sigma():
    # Two runs at log-delay 0 and 2, same throughput: their sample variance
    # (ddof=1) is 1 + 1 = 2, so one sigma reaches sqrt(2) either side of 1.
    plane = np.array([[0.0, 5.0], [2.0, 5.0]])
    outline = plots._ellipse(plane)
    assert outline[:, 0].min() == pytest.approx(1 - np.sqrt(2))
    assert outline[:, 0].max() == pytest.approx(1 + np.sqrt(2))
    assert np.allclose(outline[:, 1], 5.0)


def _overlaps(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
            if boxes[i].overlaps(boxes[j])]


def test_close_schemes_never_get_overlapping_labels():
    """Ten schemes, two of them almost on one point (vegas and bbr in the report that had
    "vegbbr"): every label is a legend entry, and no two texts on the figure overlap."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    names = ["fixed:20", "aimd", "delay", "ewma", "vegas", "cubic", "bbr", "copa", "verus",
             "sprout"]
    points = {name: [(40.0 + 7 * i, 9.0 - 0.4 * i)] for i, name in enumerate(names)}
    points["bbr"] = [(points["vegas"][0][0] * 1.01, points["vegas"][0][1] * 1.001)]
    fig = plots.tradeoff_figure(points, (20.0, 12.0), "link: every scheme")
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    legend = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert set(names) | {"omniscient bound", plots.HULL_LABEL} <= set(legend)
    assert _overlaps([t.get_window_extent(renderer) for t in texts]) == []


def test_a_figure_follows_its_name(tmp_path):
    plots.plot_tradeoff({"a": [(50.0, 5.0)]}, None, tmp_path / "plane.svg")
    svg = (tmp_path / "plane.svg").read_text()
    assert svg.startswith("<?xml") and "<text" in svg  # text kept as text: small files
    plots.plot_tradeoff({"a": [(50.0, 5.0)]}, None, tmp_path / "plane.png")
    assert (tmp_path / "plane.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_long_scheme_or_link_name_still_makes_a_file_name_that_fits(tmp_path):
    """lstm:<a long path> or a long spec as the link's name: each part of a plot's file name
    is cut (with a hash of the whole, so two long names stay two files) and the file is
    written."""
    long_path = "lstm:" + "/".join(["d" * 60] * 5) + "/policy.pt"
    slugs = {plots.file_slug(long_path), plots.file_slug(long_path.replace("policy", "other"))}
    assert len(slugs) == 2 and all(len(s) <= plots.MAX_SLUG for s in slugs)
    name = f"{plots.file_slug('x' * 300)}__{plots.file_slug(long_path)}__throughput.png"
    assert len(name) <= 255
    (tmp_path / name).write_bytes(b"")  # the file system takes it
