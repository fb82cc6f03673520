"""`ccgym calibrate`: measurements in `ccgym run --json` form, fitted with the real simulator.

Most measurements here are simulated runs of a known link written as `ccgym run` rows (fast);
one test measures for real on loopback with `ccgym run --json` and fits that.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ccgym.cli import main
from ccgym.measure import calibrate as cal
from ccgym.measure import measurements as meas

# A known link, and runs short enough to simulate many times per second.
TRUE = cal.LinkParams(rate_mbps=10.0, delay_ms=25.0, queue_packets=40, loss=0.005,
                      delivery="constant")
SCHEMES = ("cubic", "bbr", "fixed:20")
DURATION_S = 6.0
TRIALS = 12  # per delivery process: enough to land near the truth, a few seconds in all


def rows_for(link: str, scheme: str, tput: float, delay: float, **extra) -> list[dict]:
    """What `ccgym run --link ... --json` writes: the bound's row, then the scheme's."""
    bound = {"link": link, "scheme": "omniscient", "runs": 1, "throughput_mbps": 10.0,
             "delay_p95_ms": 25.0}
    row = {"link": link, "group": "command-line", "scheme": scheme, "runs": 1,
           "throughput_mbps": tput, "delay_p95_ms": delay, "mode": "real-time",
           "clock": "synchronized", "duration_s": DURATION_S, "seed": 1, **extra}
    return [bound, row]


@pytest.fixture(scope="module")
def measured_files(tmp_path_factory) -> list[Path]:
    """Each scheme simulated over TRUE, the mean of seeds 1-4 (the fit simulates only 1 and 2,
    so even the true link does not score zero), one file each."""
    from ccgym.measure.metrics import loss_rate
    from ccgym.emulators import _core

    folder = tmp_path_factory.mktemp("measured")
    placeholders = [meas.Measured(s, 1.0, 1.0, DURATION_S, 1) for s in SCHEMES]
    files = []
    for fit in cal.emulate(TRUE, placeholders, sim_runs=4):
        # The loss a run measures, as `ccgym run` reports it (one seed is enough for a bound).
        sim = _core.Simulator(TRUE.spec(), [(fit.scheme, 0.0, -1.0)], 1)
        sim.run_until(DURATION_S * 1000.0)
        path = folder / f"{fit.scheme.replace(':', '_')}.json"
        path.write_text(json.dumps(rows_for(TRUE.spec(), fit.scheme, fit.emulated_throughput_mbps,
                                            fit.emulated_delay_p95_ms, loss=loss_rate(sim.log()))))
        files.append(path)
    return files


def test_fit_recovers_a_known_link(measured_files, tmp_path, capsys):
    out = tmp_path / "fitted.toml"
    fit_json = tmp_path / "fit.json"
    plot = tmp_path / "fit.png"
    assert main(["calibrate", *map(str, measured_files), "--trials", str(TRIALS),
                 "-o", str(out), "--json", str(fit_json), "--plot", str(plot),
                 "--no-progress"]) == 0
    printed = capsys.readouterr().out
    result = json.loads(fit_json.read_text())
    assert result["kind"] == "calibration"
    assert {s["scheme"] for s in result["schemes"]} == set(SCHEMES)
    assert set(result["error_by_delivery"]) == set(cal.DELIVERIES)
    # The fit is much closer than a naive guess: the first candidate of each search.
    measured = meas.read_measurements(measured_files).schemes
    guess = cal.SearchSpace.around(measured).guess
    naive = cal.LinkParams(guess["rate_mbps"], guess["delay_ms"], guess["queue_packets"],
                           guess["loss"], "constant")
    assert result["error"] <= cal.replication_error(cal.emulate(naive, measured))
    assert result["error"] < 0.15, printed
    link = result["link"]
    assert abs(link["rate_mbps"] - TRUE.rate_mbps) / TRUE.rate_mbps < 0.25, printed
    assert abs(link["delay_ms"] - TRUE.delay_ms) / TRUE.delay_ms < 0.25, printed
    # Every scheme's own error is printed and written, and they average to the total.
    for s in result["schemes"]:
        assert s["scheme"] in printed
    assert result["error"] == pytest.approx(sum(s["error"] for s in result["schemes"]) / 3)
    # The link set is one every verb accepts, holding the fitted link.
    doc = tomllib.loads(out.read_text())
    assert len(doc["link"]) == 1 and doc["link"][0]["name"] == "fitted"
    assert doc["link"][0]["delivery"] == link["delivery"]
    assert main(["eval", "--links", str(out), "--schemes", "fixed:20", "--duration-s", "2",
                 "--no-progress"]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_leave_one_out_predicts_each_scheme(measured_files, tmp_path, capsys):
    fit_json = tmp_path / "fit.json"
    assert main(["calibrate", *map(str, measured_files), "--trials", "6", "--leave-one-out",
                 "--json", str(fit_json), "--no-progress"]) == 0
    result = json.loads(fit_json.read_text())
    left = result["leave_one_out"]
    assert [s["scheme"] for s in left["schemes"]] == list(SCHEMES)
    for s in left["schemes"]:
        # Each prediction is the left-out scheme over a link fitted without it.
        assert s["predicted"]["scheme"] == s["scheme"]
        assert s["link"]["delivery"] == result["link"]["delivery"]
    assert left["error"] == pytest.approx(sum(s["error"] for s in left["schemes"]) / 3)
    assert "leave-one-out error" in capsys.readouterr().out


def write(path: Path, rows: list[dict]) -> str:
    path.write_text(json.dumps(rows))
    return str(path)


@pytest.mark.parametrize("case, message", [
    ("mixed paths", "calibrate fits one path at a time"),
    ("single scheme", "at least 2 schemes"),
    ("no bytes", "delivered no bytes"),
    ("unknown scheme", "cannot be simulated"),
    ("learned scheme", "cannot be simulated"),
    ("no duration", "no duration_s"),
    ("not rows", "expected a list of rows"),
    ("not json", "not JSON"),
    ("missing file", "no such file"),
    ("unmeasured --schemes", "--schemes: vegas not measured"),
])
def test_bad_measurements_are_one_clear_error(case, message, tmp_path, capsys):
    link = "rate_mbps=10,delay_ms=25"
    good = [write(tmp_path / "a.json", rows_for(link, "cubic", 5.0, 40.0)),
            write(tmp_path / "b.json", rows_for(link, "bbr", 9.0, 30.0))]
    extra: list[str] = []
    if case == "mixed paths":
        files = good + [write(tmp_path / "c.json", rows_for("rate_mbps=20,delay_ms=5", "copa",
                                                             9.0, 30.0))]
    elif case == "single scheme":
        files = good[:1] + [write(tmp_path / "c.json", rows_for(link, "cubic", 6.0, 41.0))]
    elif case == "no bytes":
        files = good + [write(tmp_path / "c.json", rows_for(link, "vegas", 0.0, 30.0))]
    elif case == "unknown scheme":
        files = good + [write(tmp_path / "c.json", rows_for(link, "cubc", 5.0, 30.0))]
    elif case == "learned scheme":
        files = good + [write(tmp_path / "c.json", rows_for(link, "lstm:runs/x", 5.0, 30.0))]
    elif case == "no duration":
        rows = rows_for(link, "vegas", 5.0, 30.0)
        del rows[1]["duration_s"]
        files = good + [write(tmp_path / "c.json", rows)]
    elif case == "not rows":
        files = good + [write(tmp_path / "c.json", {"rows": []})]  # type: ignore[arg-type]
    elif case == "not json":
        (tmp_path / "c.json").write_text("{")
        files = good + [str(tmp_path / "c.json")]
    elif case == "missing file":
        files = good + [str(tmp_path / "absent.json")]
    else:
        files, extra = good, ["--schemes", "cubic,vegas"]
    out = tmp_path / "link.toml"
    assert main(["calibrate", *files, *extra, "--trials", "2", "-o", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ccgym calibrate: error:")
    assert message in err[0]
    assert not out.exists()  # nothing half-written


def test_fits_a_real_loopback_measurement(tmp_path, capsys):
    """`ccgym run --json` over the real-time relay, two schemes, then `ccgym calibrate`."""
    from ccgym.deploy.harness import find_program
    from ccgym.errors import UserError

    try:
        find_program("ccgym-link")
    except UserError as e:
        pytest.skip(str(e))
    link = "rate_mbps=8,delay_ms=15,queue=droptail:packets=30"
    files = []
    for scheme in ("cubic", "fixed:10"):
        path = tmp_path / f"{scheme.replace(':', '_')}.json"
        assert main(["run", "--link", link, "--scheme", scheme, "--duration-s", "3",
                     "--json", str(path), "--no-progress"]) == 0
        files.append(str(path))
    fit_json = tmp_path / "fit.json"
    assert main(["calibrate", *files, "--trials", "6", "--json", str(fit_json),
                 "--no-progress"]) == 0
    result = json.loads(fit_json.read_text())
    assert result["path"] == json.loads(Path(files[0]).read_text())[-1]["link"]
    measured = {m["scheme"]: m for m in result["measured"]}
    assert set(measured) == {"cubic", "fixed:10"}
    assert all(m["duration_s"] == pytest.approx(3.0) for m in measured.values())
    # The search space is built around what was measured: the rate is at least ~the best
    # throughput seen and the delay at most ~the least delay seen.
    top = max(m["throughput_mbps"] for m in measured.values())
    assert result["link"]["rate_mbps"] >= cal.RATE_RANGE[0] * top
    assert result["link"]["delay_ms"] <= cal.DELAY_RANGE[1] * min(
        m["delay_p95_ms"] for m in measured.values())
