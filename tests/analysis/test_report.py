"""`ccgym report`: one self-contained page from an eval JSON, a calibration and training runs,
checked as HTML and rendered in headless Chromium (Debian's `chromium`).

The run folders are real ones in layout and format: the packaged quick config resolved and
written by RunFolder, TensorBoard events written by the trainer's own writer.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ccgym.cli import main

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CCGYM_TEST_ARTIFACTS") or REPO / "build" / "test-artifacts")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As the machine notes say: no background traffic, no first-run work, a fresh profile.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
ITERATIONS = 6
SEARCH_SPACE = ('rate_mbps = { min = 2, max = 40 }\ndelay_ms = { min = 10, max = 40 }\n'
                'buffer_bdp = 1\nloss = 0\ndelivery = ["constant"]\n')


def make_run_folder(out: Path, seed: int, lr: float) -> Path:
    """A training run folder as `ccgym train` leaves it, with ITERATIONS logged iterations."""
    from ccgym.train.config import load_config
    from ccgym.train.run_folder import RunFolder

    config = load_config(REPO / "configs" / "train" / "quick.toml")
    config.run.seed = seed
    config.optimizer.lr = lr
    folder = RunFolder.create(out, "quick", seed)
    folder.write_config(config)
    writer = folder.events_writer(purge_step=0)
    for k in range(1, ITERATIONS + 1):
        writer.add_scalar("losses/loss", 1.0 / k, k)
        writer.add_scalar("dagger/expert_agreement", 0.6 + 0.05 * k, k)
        writer.add_scalar("eval/score", -2.0 + 0.2 * k * lr * 100, k)
        writer.add_scalar("eval/validation/score", -2.0 + 0.2 * k * lr * 100, k)
        writer.add_scalar("eval/train/score", -1.8 + 0.25 * k, k)
        writer.add_scalar("eval/oracle_score", -0.5, k)
        writer.add_scalar("eval/best_baseline_score", -1.2, k)
    writer.close()
    folder.leaderboard.write_text("link: a\nscheme  score\nlstm  -1.00\n")
    return folder.path


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """eval JSON + its plots, a calibration JSON, two run folders -> report.html."""
    tmp = tmp_path_factory.mktemp("report")
    eval_json, plots = tmp / "eval.json", tmp / "plots"
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20,queue=droptail:packets=60",
                 "--schemes", "cubic,vegas", "--duration-s", "3", "--json", str(eval_json),
                 "--plots", str(plots), "--no-progress"]) == 0
    calibration = tmp / "calibration.json"
    calibration.write_text(json.dumps({
        "kind": "calibration", "path": "far.example:9000", "error": 0.05, "trials": 20,
        "wall_time_s": 3.0, "link": {"spec": "rate_mbps=10,delay_ms=20", "rate_mbps": 10.0},
        "schemes": [{"scheme": s, "measured_throughput_mbps": t, "emulated_throughput_mbps": t * 1.04,
                     "measured_delay_p95_ms": d, "emulated_delay_p95_ms": d * 0.97, "error": 0.035}
                    for s, t, d in (("cubic", 9.0, 60.0), ("bbr", 9.6, 35.0))],
        "leave_one_out": {"error": 0.08, "schemes": [{"scheme": "cubic", "error": 0.07},
                                                     {"scheme": "bbr", "error": 0.09}]}}))
    oracle = tmp / "oracle.json"
    assert main(["oracle", "--link", "rate_mbps=12,delay_ms=20", "--json", str(oracle),
                 "--no-progress"]) == 0
    space, search = tmp / "space.toml", tmp / "search.json"
    space.write_text(SEARCH_SPACE)
    assert main(["search", "--scheme", "fixed:5", "--space", str(space), "--baselines", "cubic",
                 "--trials", "3", "--seeds", "1", "--duration-s", "2", "--keep", "2",
                 "-o", str(tmp / "found.toml"), "--json", str(search), "--no-progress"]) == 0
    runs = [make_run_folder(tmp / "runs", 1, 0.005), make_run_folder(tmp / "runs", 2, 0.002)]
    out = tmp / "report.html"
    assert main(["report", str(eval_json), str(plots), str(calibration), str(oracle),
                 str(search), *map(str, runs), "-o", str(out)]) == 0
    return out


class Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.tables = 0
        self.links: list[str] = []
        self.headings: list[str] = []
        self.sections: list[str | None] = []
        self._in_heading = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src") or "")
        elif tag == "table":
            self.tables += 1
        elif tag in ("link", "script", "a") and (attrs.get("href") or attrs.get("src")):
            self.links.append(attrs.get("href") or attrs.get("src"))
        self._in_heading = tag in ("h2", "h3")
        if tag == "section":
            self.sections.append(attrs.get("id"))

    def handle_data(self, data):
        if self._in_heading:
            self.headings.append(data)
            self._in_heading = False


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text())
    return page


def test_the_page_is_self_contained_and_has_every_section(report):
    page = parse(report)
    text = report.read_text()
    # Every figure is inside the file (the report's own as SVG); links only within the page.
    assert page.images and all(src.startswith(("data:image/svg+xml;base64,",
                                               "data:image/png;base64,")) for src in page.images)
    assert any(src.startswith("data:image/svg+xml") for src in page.images)
    assert page.links and all(href.startswith("#") for href in page.links)
    assert not re.search(r"(src|href)=\"https?:", text)
    # Contents first, then the summary, then every section the contents list.
    assert page.headings[:2] == ["Contents", "Summary"]
    assert page.sections[0] == "summary"
    assert sorted(page.links) == sorted(f"#{s}" for s in page.sections)
    headings = " | ".join(page.headings)
    folder = report.parent.name  # headings name an input with its folder
    for expected in (f"Leaderboards: {folder}/eval.json", f"Calibration: {folder}/calibration.json",
                     f"Oracle: {folder}/oracle.json",
                     "Comparison of 2 training runs", "Training run: quick__1__",
                     "Training run: quick__2__", "Hyperparameters", "Train versus validation",
                     f"Plots: {folder}/plots", f"Search: {folder}/search.json"):
        assert expected in headings
    # Series carry names for people, never TensorBoard tags; tables are tables.
    figures = " ".join(base64.b64decode(src.split(",", 1)[1]).decode()
                       for src in page.images if src.startswith("data:image/svg+xml"))
    assert "held-out steps" in figures and "train links" in figures
    assert "omniscient bound" in figures and "hull of every run" in figures
    # The search's plot and its worst link, the largest gap, in the summary and the table.
    assert "Where fixed:5 loses" in figures and "gap to the best baseline" in figures
    search = json.loads((report.parent / "search.json").read_text())
    worst = next(t for t in search["trials"] if t["trial"] == search["kept"][0])
    assert text.count(worst["link"]) >= 2 and f"{worst['gap']:.3f}" in text
    for tag in ("dagger/", "eval/", "losses/"):
        assert tag not in figures and tag not in text
    assert "<pre>" not in text
    # The leaderboard has the bound on top and both schemes; the calibration its errors.
    assert "omniscient (1 run)" in text and "cubic (1 run)" in text and "vegas (1 run)" in text
    assert "5.0%" in text and "8.0%" in text
    # The comparison names the hyperparameter that differs between the runs.
    assert "optimizer.lr" in text and "run.seed" in text


def test_plots_folder_has_an_index(report):
    index = report.parent / "plots" / "index.html"
    page = parse(index)
    pngs = sorted(p.name for p in index.parent.glob("*.png"))
    assert sorted(page.images) == pngs and len(pngs) == 5  # the plane + 2 plots per scheme


def test_bad_inputs_are_one_clear_error(tmp_path, capsys):
    (tmp_path / "rows.json").write_text('{"not": "rows"}')
    (tmp_path / "empty").mkdir()
    (tmp_path / "search.json").write_text('{"kind": "search", "scheme": "x", "trials": []}')
    for bad, message in ((tmp_path / "rows.json", "neither leaderboard rows"),
                         (tmp_path / "search.json", "not a whole search document"),
                         (tmp_path / "empty", "neither a training run folder"),
                         (tmp_path / "absent.json", "no such file")):
        out = tmp_path / "r.html"
        assert main(["report", str(bad), "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]
        assert not out.exists()


@pytest.mark.parametrize(("row", "message"), [
    ({"runs": ""}, "row 1 ('s' on 'l'): runs must be a count of runs, got ''"),
    ({"score": "x"}, "score must be a number, got 'x'"),
    ({"throughput_mbps": [1]}, "throughput_mbps must be a number"),
    ({"flows": [{"flow": 1, "share": "half"}]}, "flow 1: share must be a number"),
    ({"flows": "two"}, "flows must be a list of rows"),
])
def test_rows_with_unprintable_values_are_one_clear_error(tmp_path, capsys, row, message):
    # Hypothesis found {"runs": ""} reaching int() in the leaderboard as an internal error.
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"link": "l", "scheme": "s", "score": -1.0} | row]))
    out = tmp_path / "r.html"
    assert main(["report", str(rows), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and str(rows) in err[0]
    assert not out.exists()


def test_rows_with_infinite_or_missing_scores_are_reported(tmp_path):
    # Zero throughput scores -inf and a link that offered nothing NaN (measure/metrics.py).
    rows = tmp_path / "rows.json"
    rows.write_text('[{"link": "l", "scheme": "a", "runs": 1, "score": -Infinity},'
                    ' {"link": "l", "scheme": "b", "runs": 1, "score": NaN}]')
    out = tmp_path / "r.html"
    assert main(["report", str(rows), "-o", str(out)]) == 0
    assert out.exists()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                             "(scripts/setup.sh installs it)")
def test_renders_in_chromium_with_no_console_errors(report):
    from playwright.sync_api import sync_playwright

    expected = parse(report)
    problems: list[str] = []
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    screenshot = ARTIFACTS / "report.png"
    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1000})
        try:
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(report.as_uri(), wait_until="load")
            shown = page.evaluate("() => [...document.images].filter("
                                  "i => i.complete && i.naturalWidth > 0).length")
            tables = page.evaluate("() => document.querySelectorAll('table').length")
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert shown == len(expected.images) > 0  # every figure decoded and drawn
    assert tables == expected.tables > 0
    assert screenshot.stat().st_size > 0


def test_a_large_plots_folder_embeds_its_planes_and_links_the_rest(tmp_path):
    from PIL import Image

    from ccgym.analysis.html_report import MAX_EMBEDDED_PLOTS

    plots = tmp_path / "plots"
    plots.mkdir()
    names = [f"l{i}__tradeoff.png" for i in range(3)] + [
        f"l{i % 3}__s{i}__throughput.png" for i in range(MAX_EMBEDDED_PLOTS)]
    for name in names:
        Image.new("P", (8, 4)).save(plots / name)
    (plots / "index.html").write_text("<!DOCTYPE html><title>plots</title>")
    out = tmp_path / "pages" / "r.html"
    out.parent.mkdir()
    assert main(["report", str(plots), "-o", str(out)]) == 0
    page = parse(out)
    assert len(page.images) == 3  # the planes
    assert "../plots/index.html" in page.links
    assert f"{MAX_EMBEDDED_PLOTS} more figures, too many to embed, are not in this page" \
        in out.read_text()


def test_each_figure_once_when_rows_and_their_plots_folder_are_reported(tmp_path):
    """eval --json ROWS --plots DIR, then report ROWS DIR: the leaderboard section draws each
    link's plane, so the plots folder's copy of it is not embedded a second time."""
    set_file = tmp_path / "set.toml"
    set_file.write_text('group = "g"\ndescription = "two"\n' + "".join(
        f'[[link]]\nname = "l{r}"\nrate_mbps = {r}\ndelay_ms = 20\n' for r in (6, 12)))
    rows, plots, out = tmp_path / "rows.json", tmp_path / "plots", tmp_path / "r.html"
    assert main(["eval", "--links", str(set_file), "--schemes", "fixed:20", "--duration-s", "1",
                 "--no-progress", "--json", str(rows), "--plots", str(plots)]) == 0
    assert main(["report", str(rows), str(plots), "-o", str(out)]) == 0
    images = parse(out).images
    # Two planes drawn by the report, and the folder's throughput and delay figures.
    planes = sorted(plots.glob("*__tradeoff.png"))
    others = [p for p in plots.glob("*.png") if p not in planes]
    assert len(images) == len(planes) + len(others) == 2 + 4
    assert len(set(images)) == len(images)  # and no figure twice
