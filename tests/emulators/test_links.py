"""Link sets: the packaged TOML files, the loader's errors, the --link/--links flags, statistics.

Tests marked by `core` need the C++ binding (the one spec parser); the others check everything
the loader does before it.
"""

from __future__ import annotations

import csv
import os
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ccgym.emulators import generate, link_facts, link_names, links
from ccgym.emulators.links import Link
from ccgym.errors import UserError

# The shared recorded data, beside the project unless CCGYM_DATA says otherwise.
SHARED_DATA = Path(os.environ.get("CCGYM_DATA")
                   or Path(__file__).resolve().parents[3] / "shared" / "data")
needs_data = pytest.mark.skipif(not (SHARED_DATA / "links.csv").is_file(),
                                reason=f"shared data not found at {SHARED_DATA} (set CCGYM_DATA)")

# Packaged set -> the links.csv groups it holds.
CSV_GROUPS = {
    "pantheon-calibrated": {"pantheon-calibrated"},
    "pantheon-pathological": {"pantheon-pathological"},
    "indigo-synthetic": {"indigo-synthetic"},
    "cellular-real": {"cellular", "poisson"},
}
EXPECTED_COUNTS = {"pantheon-calibrated": 6, "pantheon-pathological": 12, "indigo-synthetic": 24,
                   "cellular-real": 7, "cellular-generated": 8, "held-out-grid": 35,
                   "poisson-generated": 8, "recorded-train": 24, "recorded-unseen": 22,
                   "shared-bottleneck": 4}
SETS_WITHOUT_DATA = ["pantheon-calibrated", "pantheon-pathological", "indigo-synthetic",
                     "cellular-generated", "held-out-grid", "poisson-generated",
                     "shared-bottleneck"]


@pytest.fixture(autouse=True)
def trace_cache(tmp_path, monkeypatch) -> Path:
    """Generated traces go to a per-test cache, never to ~/.cache."""
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "traces"


def core():
    return pytest.importorskip("ccgym.emulators._core")


def packaged(name: str) -> Path:
    return next(p for p in links.packaged_link_sets() if p.stem == name)


def write(tmp_path: Path, text: str, name: str = "set.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def raw(name: str) -> dict:
    with open(packaged(name), "rb") as f:
        return tomllib.load(f)


# ---------------------------------------------------------------- the packaged sets, as TOML

def test_packaged_sets_are_found_through_the_configs_package():
    names = [p.stem for p in links.packaged_link_sets()]
    assert names == sorted(EXPECTED_COUNTS)
    assert all(p.is_file() for p in links.packaged_link_sets())


@pytest.mark.parametrize("name, count", sorted(EXPECTED_COUNTS.items()))
def test_packaged_set_counts(name, count):
    info = links.read_link_set_info(packaged(name))
    assert info.group == name
    assert info.description
    assert len(info.names) == count
    assert len(set(info.names)) == count


@needs_data
@pytest.mark.parametrize("name", sorted(CSV_GROUPS))
def test_packaged_sets_match_links_csv(name):
    with open(SHARED_DATA / "links.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["group"] in CSV_GROUPS[name]]
    assert links.read_link_set_info(packaged(name)).names == [r["name"] for r in rows]
    tables = {t["name"]: t for t in raw(name)["link"]}
    for r in rows:
        t = tables[r["name"]]
        assert t["delay_ms"] == float(r["one_way_delay_ms"])
        assert t.get("queue", "infinite") == r["queue"]
        assert t.get("loss", 0) == float(r["loss_data"])
        assert t.get("ack_loss", 0) == float(r["loss_ack"])
        if r["data_trace"] and name == "cellular-real":
            assert t["trace"] == "${CCGYM_DATA}/traces/" + r["data_trace"]
            assert t["ack_trace"] == "${CCGYM_DATA}/traces/" + r["ack_trace"]
        else:  # generated from the rate, even where links.csv has a Poisson trace
            assert t["rate_mbps"] == float(r["rate_mbps"])
            assert t["delivery"] == r["delivery"]


@pytest.mark.parametrize("name", SETS_WITHOUT_DATA)
def test_sets_other_than_cellular_real_need_no_recorded_data(name):
    text = packaged(name).read_text()
    assert "CCGYM_DATA" not in text
    assert all("trace" not in t and "ack_trace" not in t for t in raw(name)["link"])


def test_ack_aggregation_links():
    tables = {t["name"]: t for t in raw("pantheon-pathological")["link"]}
    every_100ms = tables["ack-aggregation-100ms"]
    assert every_100ms["ack_rate_mbps"] == 0.12 and every_100ms["ack_delivery"] == "constant"
    # One 1500-byte opportunity at 0.12 Mbit/s takes 100 ms.
    assert 1500 * 8 / (every_100ms["ack_rate_mbps"] * 1e3) == pytest.approx(100)
    burst = tables["ack-aggregation-10-per-200ms"]
    assert (burst["ack_delivery"], burst["ack_burst_packets"], burst["ack_burst_period_ms"]) == \
        ("burst", 10, 200)


def test_generated_cellular_set_is_varied():
    tables = raw("cellular-generated")["link"]
    params = [t["synthetic_trace"] for t in tables]
    assert len({p["seed"] for p in params}) == len(params)
    assert len({p["mean_mbps"] for p in params}) > 1
    assert all(t["delay_ms"] == 20 and "ack_synthetic_trace" in t for t in tables)


# ---------------------------------------------------------------- loader errors (no core needed)

def test_toml_syntax_error_names_file_and_line(tmp_path):
    path = write(tmp_path, 'group = "g"\n\n[[link]]\nname = "a"\ndelay_ms = = 3\n')
    with pytest.raises(UserError, match=r"set\.toml: TOML syntax error.*line 5"):
        links.load_link_set(path)


def test_unknown_link_key_names_file_link_key_and_valid_keys(tmp_path):
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "ok"\nrate_mbps = 1\n'
                           '[[link]]\nname = "typo"\nrate_mbs = 12\ndelay_ms = 10\n')
    with pytest.raises(UserError) as e:
        links.load_link_set(path)
    message = str(e.value)
    assert str(path) in message
    assert "link typo (#2)" in message
    assert "'rate_mbs'" in message
    assert "did you mean 'rate_mbps'" in message
    assert "valid keys:" in message and "ack_burst_period_ms" in message


def test_unknown_key_in_unnamed_link_names_its_index(tmp_path):
    path = write(tmp_path, 'group = "g"\n[[link]]\nspeed = 3\n')
    with pytest.raises(UserError, match=r"link #1: unknown key 'speed'"):
        links.load_link_set(path)


def test_unknown_top_level_key(tmp_path):
    path = write(tmp_path, 'group = "g"\n[[links]]\nname = "a"\n')
    with pytest.raises(UserError, match=r"set\.toml: unknown key 'links'.*did you mean 'link'"):
        links.load_link_set(path)


@pytest.mark.parametrize("text, match", [
    ('[[link]]\nname = "a"\nrate_mbps = 1\n', "missing top-level key 'group'"),
    ('group = "g"\n', "no links"),
    ('group = "g"\n[[link]]\nrate_mbps = 1\n', "'name' must be"),
    ('group = "g"\n[[link]]\nname = "a b"\nrate_mbps = 1\n', "'name' must be"),
    ('group = "g"\n[[link]]\nname = "a"\nrate_mbps = "12"\n', "rate_mbps must be int or float"),
    ('group = "g"\n[[link]]\nname = "a"\nburst_packets = true\n', "burst_packets must be int"),
    ('group = "g"\n[[link]]\nname = "a"\nonce = 1\n', "once must be bool"),
    ('group = "g"\n[[link]]\nname = "a"\nqueue = "red:min=1,max=2"\n', "comma"),
    ('group = "g"\n[[link]]\nname = "a"\nrate_mbps = 1\n[[link]]\nname = "a"\nrate_mbps = 2\n',
     "link a \\(#2\\): duplicate name"),
])
def test_malformed_links(tmp_path, text, match):
    with pytest.raises(UserError, match=match):
        links.load_link_set(write(tmp_path, text))


def test_missing_trace_names_file_link_and_path(tmp_path):
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "cell"\ntrace = "traces/none.down"\n')
    with pytest.raises(UserError) as e:
        links.load_link_set(path)
    message = str(e.value)
    assert str(path) in message and "link cell" in message and "trace" in message
    # Relative trace paths are relative to the TOML file, not to the working directory.
    assert str(tmp_path / "traces" / "none.down") in message


def test_missing_ack_trace_is_reported_with_its_key(tmp_path):
    (tmp_path / "d.trace").write_text("1\n")
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "c"\ntrace = "d.trace"\n'
                           'ack_trace = "u.trace"\n')
    with pytest.raises(UserError, match=r"link c \(#1\): ack_trace: trace file not found"):
        links.load_link_set(path)


def test_data_variable_expands_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path / "nowhere"))
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "c"\ntrace = "${CCGYM_DATA}/x.down"\n')
    with pytest.raises(UserError, match=str(tmp_path / "nowhere" / "x.down")):
        links.load_link_set(path)


def test_data_variable_without_data_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(links, "data_dir", lambda: None)
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "c"\ntrace = "${CCGYM_DATA}/x.down"\n')
    with pytest.raises(UserError, match="link c.*set CCGYM_DATA"):
        links.load_link_set(path)


def test_other_variables_are_errors(tmp_path):
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "c"\ntrace = "${HOME}/x.down"\n')
    with pytest.raises(UserError, match=r"unknown variable \$\{HOME\}"):
        links.load_link_set(path)


@pytest.mark.parametrize("table, match", [
    ('{ mean_mbps = 8.0, seed = 1, speed = 2 }', "synthetic_trace: unknown key 'speed'"),
    ('{ mean_mbps = 8.0 }', "synthetic_trace: missing key 'seed'"),
    ('{ mean_mbps = 8.0, seed = 1.5 }', "seed has the wrong type"),
    ('{ model = "wifi", mean_mbps = 8.0, seed = 1 }', "unknown model 'wifi'"),
    ('{ mean_mbps = -8.0, seed = 1 }', "mean_mbps must be > 0"),
    ('{ mean_mbps = 8.0, seed = 1, rate_range = 0.5 }', "rate_range must be > 1"),
    ('3', "must be a table"),
])
def test_bad_synthetic_trace(tmp_path, table, match):
    path = write(tmp_path, f'group = "g"\n[[link]]\nname = "s"\nsynthetic_trace = {table}\n')
    with pytest.raises(UserError, match=match):
        links.load_link_set(path)


def test_trace_and_synthetic_trace_conflict(tmp_path):
    (tmp_path / "d.trace").write_text("1\n")
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "s"\ntrace = "d.trace"\n'
                           'synthetic_trace = { mean_mbps = 8.0, seed = 1 }\n')
    with pytest.raises(UserError, match="trace or synthetic_trace, not both"):
        links.load_link_set(path)


# ---------------------------------------------------------------- places and the trace cache

def test_data_dir_prefers_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CCGYM_DATA", str(tmp_path))
    assert links.data_dir() == tmp_path


def test_cache_dir_from_the_environment(tmp_path, trace_cache):
    assert links.cache_dir() == trace_cache


def test_synthetic_trace_is_generated_once_and_keyed_by_its_parameters(trace_cache):
    params = {"model": "cellular", "mean_mbps": 6.0, "seed": 2, "duration_s": 10}
    path = links.synthetic_trace_path(params, stream=0)
    assert path.parent == trace_cache
    stamps = np.loadtxt(path, dtype=np.int64)
    np.testing.assert_array_equal(stamps, generate.generate_cellular_trace(6.0, 10, 2))
    mtime = path.stat().st_mtime_ns
    # Equal parameters (int or float spelling) reuse the file; any change makes another.
    assert links.synthetic_trace_path({**params, "duration_s": 10.0}, stream=0) == path
    assert path.stat().st_mtime_ns == mtime
    others = {links.synthetic_trace_path({**params, "seed": 3}, stream=0),
              links.synthetic_trace_path({**params, "mean_mbps": 7.0}, stream=0),
              links.synthetic_trace_path({**params, "mean_outage_s": 0.0}, stream=0),
              links.synthetic_trace_path(params, stream=1)}
    assert path not in others and len(others) == 4


# ---------------------------------------------------------------- the CLI flags

def test_resolve_links_needs_exactly_one_flag():
    with pytest.raises(UserError, match="no link given"):
        link_names.resolve_links(None, None)
    with pytest.raises(UserError, match="not both"):
        link_names.resolve_links("rate_mbps=1", "indigo-synthetic")


def test_unknown_set_name_lists_the_packaged_sets():
    with pytest.raises(UserError, match="packaged sets: cellular-generated, cellular-real"):
        link_names.resolve_links(None, "no-such-set")


def test_find_link_set_by_name_or_path(tmp_path):
    assert link_names.find_link_set("indigo-synthetic") == packaged("indigo-synthetic")
    assert link_names.find_link_set("indigo-synthetic.toml") == packaged("indigo-synthetic")
    mine = write(tmp_path, 'group = "g"\n')
    assert link_names.find_link_set(str(mine)) == mine


# ---------------------------------------------------------------- statistics

def test_statistics_of_one_packet_per_ms():
    times = np.arange(10_000, dtype=np.float64)  # 12 Mbit/s for 10 s
    s = link_facts.delivery_statistics(times, 10_000, delay_ms=10)
    assert s["mean_mbps"] == pytest.approx(12.0)
    assert s["window_mbps_percentiles"] == pytest.approx({"p5": 12.0, "p50": 12.0, "p95": 12.0})
    assert s["outage_fraction"] == 0
    assert s["min_rtt_ms"] == 20
    assert s["bdp_packets"] == pytest.approx(20.0)  # 12 Mbit/s x 20 ms / 1500 bytes


def test_statistics_count_outage_windows():
    times = np.arange(10_000, dtype=np.float64)
    times = times[(times < 1000) | (times >= 2000)]  # two empty 500 ms windows of 20
    s = link_facts.delivery_statistics(times, 10_000, delay_ms=0)
    assert s["outage_fraction"] == pytest.approx(2 / 20)
    assert s["window_mbps_percentiles"]["p5"] == 0


def test_trace_statistics_follow_mahimahi_periods():
    # mahimahi's README: a trace holding just "1" is one packet per ms, 12 Mbit/s.
    assert link_facts.trace_statistics(np.array([1]), delay_ms=5)["mean_mbps"] == pytest.approx(12.0)
    # Opportunities at 0 and at the period are one per repetition each: 4 per 1000 ms.
    s = link_facts.trace_statistics(np.array([0, 250, 750, 1000]), delay_ms=5)
    assert s["mean_mbps"] == pytest.approx(4 * 0.012)
    assert s["outage_fraction"] == 0


@needs_data
def test_trace_statistics_match_the_data_readme():
    stamps = np.loadtxt(SHARED_DATA / "traces/cellular/Verizon-LTE-short.down", dtype=np.int64)
    s = link_facts.trace_statistics(stamps, delay_ms=20)
    assert s["mean_mbps"] == pytest.approx(5.03, abs=0.005)
    assert s["outage_fraction"] == pytest.approx(0.007, abs=0.0005)


# ---------------------------------------------------------------- with the C++ parser

@pytest.mark.parametrize("name", SETS_WITHOUT_DATA)
def test_packaged_sets_load(name):
    _core = core()
    loaded = links.load_link_set(packaged(name))
    assert len(loaded) == EXPECTED_COUNTS[name]
    for link in loaded:
        assert isinstance(link, Link) and link.group == name and link.source
        # The spec is canonical: it parses back to itself, with the link's name.
        parsed = _core.parse_link_spec(link.spec)
        assert parsed.to_string() == link.spec
        assert parsed.name == link.name


@needs_data
def test_cellular_real_loads_with_the_shared_data(monkeypatch):
    _core = core()
    monkeypatch.setenv("CCGYM_DATA", str(SHARED_DATA))
    loaded = links.load_link_set(packaged("cellular-real"))
    assert len(loaded) == EXPECTED_COUNTS["cellular-real"]
    training = {link_names.spec_fields(link.spec)["trace"]
                for link in links.load_link_set(packaged("recorded-train"))}
    assert len(training) == EXPECTED_COUNTS["recorded-train"]
    # recorded-train is for training: none of the held-out recordings are in it.
    assert not training & {link_names.spec_fields(link.spec)["trace"] for link in loaded}
    unseen = links.load_link_set(packaged("recorded-unseen"))
    assert len(unseen) == EXPECTED_COUNTS["recorded-unseen"]
    assert not training & {link_names.spec_fields(link.spec)["trace"] for link in unseen}
    verizon = next(link for link in loaded if link.name == "verizon-lte-short")
    trace = link_names.spec_fields(verizon.spec)["trace"]
    assert Path(trace) == SHARED_DATA / "traces/cellular/Verizon-LTE-short.down"
    assert _core.parse_link_spec(verizon.spec).delay_ms == 20


def test_cellular_generated_writes_its_traces_into_the_cache(trace_cache):
    core()
    loaded = links.load_link_set(packaged("cellular-generated"))
    traces = {link_names.spec_fields(link.spec)[key] for link in loaded
              for key in ("trace", "ack_trace")}
    assert len(traces) == 2 * EXPECTED_COUNTS["cellular-generated"]
    assert all(Path(t).parent == trace_cache and Path(t).is_file() for t in traces)


def test_calibrated_links_use_the_generated_poisson_process():
    core()
    loaded = {link.name: link for link in links.load_link_set(packaged("pantheon-calibrated"))}
    fields = link_names.spec_fields(loaded["nepal-aws-india"].spec)
    assert fields["delivery"] == "poisson" and float(fields["rate_mbps"]) == 0.57
    assert "trace" not in fields


def test_bad_value_reported_by_the_core_names_file_and_link(tmp_path):
    core()
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "lossy"\nrate_mbps = 5\nloss = 1.5\n')
    with pytest.raises(UserError, match=rf"^{path}: link lossy: .*loss"):
        links.load_link_set(path)


def test_relative_trace_resolved_against_the_toml_file(tmp_path, monkeypatch):
    core()
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.down").write_text("1\n2\n")
    path = write(tmp_path, 'group = "g"\n[[link]]\nname = "t"\ntrace = "traces/t.down"\n'
                           'delay_ms = 5\n')
    monkeypatch.chdir("/")
    (link,) = links.load_link_set(path)
    assert link_names.spec_fields(link.spec)["trace"] == str(tmp_path / "traces" / "t.down")


def test_resolve_links_from_a_spec_or_a_set(tmp_path, monkeypatch):
    core()
    (link,) = link_names.resolve_links("name=mine,rate_mbps=12,delay_ms=10", None)
    assert link.name == "mine" and "rate_mbps=12" in link.spec
    assert len(link_names.resolve_links(None, "indigo-synthetic")) == 24
    # A trace given on the command line becomes absolute and is named after its file.
    (tmp_path / "x.down").write_text("1\n")
    monkeypatch.chdir(tmp_path)
    (link,) = link_names.resolve_links("trace=x.down,delay_ms=20", None)
    assert link.name == "x.down"
    assert link_names.spec_fields(link.spec)["trace"] == str(tmp_path / "x.down")


def test_resolve_links_bad_spec_is_a_user_error():
    core()
    with pytest.raises(UserError, match="--link: .*rate_mbs"):
        link_names.resolve_links("rate_mbs=12", None)


def test_a_command_line_trace_is_found_here_then_in_the_shared_data(tmp_path, monkeypatch):
    data, here = tmp_path / "data", tmp_path / "here"
    (data / "traces").mkdir(parents=True)
    here.mkdir()
    (data / "traces" / "cell.down").write_text("1\n2\n3\n")
    monkeypatch.setenv(links.DATA_ENV, str(data))
    monkeypatch.chdir(here)
    [link] = link_names.resolve_links("trace=traces/cell.down,delay_ms=20", None)
    assert link_names.spec_fields(link.spec)["trace"] == str(data / "traces" / "cell.down")
    (here / "traces").mkdir()
    (here / "traces" / "cell.down").write_text("1\n2\n")
    [link] = link_names.resolve_links("trace=traces/cell.down,delay_ms=20", None)
    assert link_names.spec_fields(link.spec)["trace"] == str(here / "traces" / "cell.down")
    with pytest.raises(UserError, match="nothing.down"):
        link_names.resolve_links("trace=traces/nothing.down,delay_ms=20", None)


def test_a_packaged_link_name_is_accepted_wherever_a_link_is():
    name = "synthetic-5mbps-10ms"
    [by_flag] = link_names.resolve_links(name, None)
    [by_entry] = link_names.resolve_entries([name])
    assert by_flag == by_entry and by_flag.name == name
    assert link_names.spec_fields(by_flag.spec)["delay_ms"] == "10"
    with pytest.raises(UserError, match="neither a link spec .* nor the name of a link"):
        link_names.resolve_links("no-such-link", None)
    with pytest.raises(UserError, match="no packaged link set of that name"):
        link_names.resolve_entries(["no-such-link"])
