"""`ccgym links sample`: a family of links drawn at random from a link space, written as a link
set that `ccgym eval --links` runs (competitors included); the same seed, the same family."""

from __future__ import annotations

import json
import math
import shlex
import tomllib
from pathlib import Path

import pytest

from ccgym.cli import main
from ccgym.emulators.link_space import find_space, load_space, sample_tables
from ccgym.emulators.links import load_link_set

# Short constant and Poisson links, half of them (by chance) beside a cubic flow: runs of a few
# seconds measure them.
SMALL_SPACE = """
rate_mbps = { min = 2, max = 20, log = true }
delay_ms = { min = 5, max = 20 }
buffer_bdp = { min = 0.5, max = 4 }
loss = { min = 0, max = 0.01 }
delivery = ["constant", "poisson"]
competitors = ["none", "cubic"]
first = "scheme"
interval_s = 0.5
"""


@pytest.fixture(autouse=True)
def trace_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path / "cache"))


def sample(tmp_path: Path, *args: str, name: str = "family") -> tuple[Path, dict]:
    out = tmp_path / f"{name}.toml"
    assert main(["links", "sample", *args, "-o", str(out)]) == 0
    return out, tomllib.loads(out.read_text())


def test_the_same_seed_gives_the_same_family_and_a_larger_count_the_same_first_links(
        tmp_path: Path) -> None:
    _, first = sample(tmp_path, "--count", "12", "--seed", "7", name="a")
    _, again = sample(tmp_path, "--count", "12", "--seed", "7", name="b")
    _, fewer = sample(tmp_path, "--count", "5", "--seed", "7", name="c")
    _, other = sample(tmp_path, "--count", "12", "--seed", "8", name="d")
    assert first["link"] == again["link"]
    assert len(first["link"]) == 12 and len(fewer["link"]) == 5
    strip = [{k: v for k, v in link.items() if k != "source"} for link in first["link"]]
    assert [{k: v for k, v in link.items() if k != "source"} for link in fewer["link"]] \
        == strip[:5]
    assert [link["name"] for link in other["link"]] != [link["name"] for link in first["link"]]


def test_the_default_space_family_holds_every_delivery_competitor_and_buffer(
        tmp_path: Path) -> None:
    path, family = sample(tmp_path, "--count", "40", "--seed", "3")
    links = load_link_set(path)
    assert len(links) == 40 and len({link.name for link in links}) == 40
    tables = family["link"]
    deliveries = {"cellular" if "synthetic_trace" in t else t["delivery"] for t in tables}
    assert deliveries == {"constant", "poisson", "cellular"}
    assert {link.competitors for link in links} == {(), ("cubic",), ("bbr",)}
    assert {t["queue"] == "infinite" for t in tables} == {True, False}
    for table in tables:
        rate = table["synthetic_trace"]["mean_mbps"] if "synthetic_trace" in table \
            else table["rate_mbps"]
        assert 1 <= rate <= 200 and 2 <= table["delay_ms"] <= 150
        assert 0 <= table.get("loss", 0) <= 0.02


def test_a_space_that_fixes_the_start_draws_the_families_it_always_drew(tmp_path: Path) -> None:
    # Drawing a start asks the stream for values only where the space varies it, so a space
    # that fixes it keeps its families: SMALL_SPACE's and the default space as it was before it
    # varied the start (the families of docs/results.md), at the seeds first drawn from them.
    small = tmp_path / "small.toml"
    small.write_text(SMALL_SPACE)
    assert [t["name"] for t in sample_tables(load_space(small), 3, seed=2)] == [
        "r0-constant-3.65mbps-9.48ms-5pkts-loss0.006-beside-cubic-scheme-first-0.5s-apart",
        "r1-poisson-10.7mbps-7.82ms-21pkts-loss0.00657",
        "r2-poisson-7.3mbps-7.25ms-26pkts-loss0.00423"]
    fixed = tmp_path / "fixed-start.toml"
    fixed.write_text(find_space("default").read_text()
                     .replace('first = ["competitors", "scheme"]', 'first = "competitors"')
                     .replace("interval_s = { min = 0, max = 5 }", "interval_s = 0"))
    names = [t["name"] for t in sample_tables(load_space(fixed), 40, seed=1)]
    assert names[:2] == ["r0-constant-15.1mbps-121ms-inf-queue-loss0.00624-beside-bbr",
                         "r1-constant-9.42mbps-71.3ms-inf-queue-loss0.000551-beside-cubic"]
    assert names[39] == "r39-cellular-136mbps-29.4ms-inf-queue-loss0.000642-beside-cubic"


def test_the_default_space_draws_which_flow_starts_first_and_how_much_later(
        tmp_path: Path) -> None:
    path, family = sample(tmp_path, "--count", "40", "--seed", "3")
    beside = [t for t in family["link"] if "competitors" in t]
    assert {t["first"] for t in beside} == {"competitors", "scheme"}
    starts = [t["interval_s"] for t in beside]
    assert all(0 <= start <= 5 for start in starts) and min(starts) < 1 and max(starts) > 4
    links = {link.name: link for link in load_link_set(path)}
    for table in beside:
        link = links[table["name"]]
        assert (link.first, link.interval_s) == (table["first"], table["interval_s"])


def test_a_start_after_the_end_of_a_links_run_is_refused_when_drawn(tmp_path: Path,
                                                                    capsys) -> None:
    # A generated trace runs once: 4 s, shorter than the 6 s start; a constant link runs 30 s.
    space = tmp_path / "space.toml"
    space.write_text('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n'
                     'delivery = ["cellular"]\ncompetitors = ["cubic"]\ninterval_s = 6\n'
                     '[cellular]\ntrace_s = 4\n')
    out = tmp_path / "family.toml"
    assert main(["links", "sample", "--space", str(space), "--count", "2", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{space}: interval_s 6: on link r0-cellular" in err
    assert "the last flow would start after the run's end (4 s)" in err and not out.exists()
    space.write_text(space.read_text().replace('"cellular"]', '"constant"]'))
    assert main(["links", "sample", "--space", str(space), "--count", "2", "-o", str(out)]) == 0


def test_a_log_range_is_drawn_uniformly_in_its_logarithm() -> None:
    space = load_space(find_space("default"))
    tables = sample_tables(space, 400, seed=1)
    rates = [t["synthetic_trace"]["mean_mbps"] if "synthetic_trace" in t else t["rate_mbps"]
             for t in tables]
    # 1-200 Mbit/s on a log scale: sqrt(200) = 14.1 Mbit/s splits it in halves (on a linear
    # scale 7% of the draws would fall below it).
    below = sum(rate < math.sqrt(200) for rate in rates) / len(rates)
    assert 0.42 < below < 0.58


def test_eval_runs_a_family_with_its_competitors_started_as_each_link_says(
        tmp_path: Path, capsys) -> None:
    space = tmp_path / "small.toml"
    space.write_text(SMALL_SPACE)
    path, family = sample(tmp_path, "--space", str(space), "--count", "6", "--seed", "2")
    printed = capsys.readouterr().out
    command = printed.rpartition("score schemes on them with: ")[2].strip()
    assert command in path.read_text()  # the file's comment says it too
    argv = shlex.split(command.replace("SCHEMES", "vegas,cubic"))[1:]
    rows_file = tmp_path / "rows.json"
    assert main([*argv, "--duration-s", "3", "--runs", "1", "--no-progress",
                 "--json", str(rows_file)]) == 0
    rows = [r for r in json.loads(rows_file.read_text()) if r["scheme"] == "vegas"]
    assert [r["link"] for r in rows] == [t["name"] for t in family["link"]]
    tables = {t["name"]: t for t in family["link"]}
    assert {tuple(t.get("competitors", [])) for t in tables.values()} == {(), ("cubic",)}
    for row in rows:
        table = tables[row["link"]]
        assert row.get("against", []) == table.get("competitors", [])
        if "competitors" in table:
            # The space's start, carried by the link: the evaluated flow first, 0.5 s ahead.
            assert (table["first"], table["interval_s"]) == ("scheme", 0.5)
            assert row["evaluated_flow"] == 0 and row["interval_s"] == 0.5
        else:
            assert "first" not in table and "interval_s" not in table


@pytest.mark.parametrize("args, message", [
    (["--count", "0"], "argument --count: must be an integer in 1..2000, got 0"),
    (["--count", "many"], "argument --count: must be an integer, got 'many'"),
    (["--seed", "-1"], "argument --seed: a seed is an integer"),
    (["--space", "no-such-space"], "no such file and no packaged space"),
    (["--space", "{space}", "-o", "{space}"], "is also an input"),
    (["-o", "{d}/family.json"], "name it .toml"),
    (["--space", "{bad}"], "rate_mbps: min 64 is above max 2"),
])
def test_bad_input_is_one_line_and_writes_nothing(args: list[str], message: str,
                                                  tmp_path: Path, capsys) -> None:
    space, bad = tmp_path / "space.toml", tmp_path / "bad.toml"
    space.write_text(SMALL_SPACE)
    bad.write_text(SMALL_SPACE.replace("min = 2, max = 20", "min = 64, max = 2"))
    before = sorted(tmp_path.iterdir())
    values = {"d": tmp_path, "space": space, "bad": bad}
    argv = ["links", "sample", "--count", "3", "-o", str(tmp_path / "family.toml")]
    argv += [a.format(**values) for a in args]  # a flag given twice: argparse takes the last
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert sorted(tmp_path.iterdir()) == before
    assert space.read_text() == SMALL_SPACE
