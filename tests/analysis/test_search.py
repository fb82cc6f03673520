"""`ccgym search`: the real simulator on small spaces, a weakness whose place is known, the same
search from the same seed, a found set that `ccgym eval` takes and scores as the search did, and
bad space files as one-line errors."""

from __future__ import annotations

import json
import math
import shlex
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ccgym.analysis.search import Search, replay_command
from ccgym.cli import main
from ccgym.emulators.link_space import find_space, load_space

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Constant links at 20 ms one way, 1 BDP of buffer, varying only in rate: a fixed window of 5
# packets (1.5 Mbit/s at a 40 ms RTT) falls further behind the baselines the faster the link,
# so the worst link is the fastest one tried.
RATE_SPACE = """
description = "rates only"
rate_mbps = { min = 2, max = 64, log = true }
delay_ms = 20
buffer_bdp = 1
loss = 0
delivery = ["constant"]
"""


def search(tmp_path: Path, *args: str, name: str = "found") -> tuple[dict, dict, str]:
    """Runs `ccgym search ARGS`; (the --json trials, the found TOML, its text)."""
    found, trials = tmp_path / f"{name}.toml", tmp_path / f"{name}.json"
    assert main(["search", *args, "--no-progress", "-o", str(found), "--json", str(trials)]) == 0
    return json.loads(trials.read_text()), tomllib.loads(found.read_text()), found.read_text()


def test_a_fixed_window_loses_most_on_the_fastest_link(tmp_path: Path, capsys) -> None:
    space = tmp_path / "rates.toml"
    space.write_text(RATE_SPACE)
    plot = tmp_path / "where.png"
    trials, found, _ = search(tmp_path, "--scheme", "fixed:5", "--space", str(space),
                              "--baselines", "cubic,vegas", "--trials", "16", "--seeds", "2",
                              "--duration-s", "4", "--keep", "3", "--plot", str(plot))
    points = trials["trials"]
    assert len(points) == 16 and trials["seeds"] == [1, 2]
    fastest = max(points, key=lambda p: p["table"]["rate_mbps"])
    slowest = min(points, key=lambda p: p["table"]["rate_mbps"])
    assert trials["kept"][0] == fastest["trial"]
    assert fastest["gap"] > slowest["gap"] + 0.5
    # The sampler goes where the gap grows: to the top of the range (a random draw lands in its
    # top tenth 3% of the time, so 16 of them miss it more often than not).
    assert fastest["table"]["rate_mbps"] >= 0.9 * 64
    assert [{**link, "source": ""} for link in found["link"]] == [
        points[n]["table"] for n in trials["kept"]]
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
    printed = capsys.readouterr().out
    assert fastest["link"] in printed.splitlines()[3]  # the table's first row: the worst


# Runs of 6 s: the default space starts a competitor up to 5 s after the first flow.
DEFAULT_ARGS = ("--scheme", "fixed:10", "--baselines", "cubic,bbr", "--trials", "6", "--seeds",
                "2", "--duration-s", "6", "--seed", "7", "--keep", "6")


def _without_times(trials: dict) -> dict:
    return {**trials, "seconds": None,
            "trials": [{**t, "seconds": None} for t in trials["trials"]]}


def test_the_same_seed_gives_the_same_search_and_eval_scores_the_found_links_alike(
        tmp_path: Path) -> None:
    first, _, first_text = search(tmp_path, *DEFAULT_ARGS, name="a")
    second, _, second_text = search(tmp_path, *DEFAULT_ARGS, name="b")
    assert _without_times(first) == _without_times(second)
    assert first_text.replace("a.toml", "b.toml") == second_text  # the replay names its file
    other, _, _ = search(tmp_path, *DEFAULT_ARGS[:-4], "--seed", "8", name="c")
    assert [t["params"] for t in other["trials"]] != [t["params"] for t in first["trials"]]

    # The replay command the search prints scores the found links as the search did.
    found = tmp_path / "a.toml"
    space = load_space(find_space("default"))
    replay = replay_command(Search(space, "fixed:10", ("cubic", "bbr"), 2, 7, 6.0), str(found))
    rows_file = tmp_path / "rows.json"
    assert main([*shlex.split(replay)[1:], "--no-progress", "--json", str(rows_file)]) == 0
    rows = json.loads(rows_file.read_text())
    for trial in first["trials"]:
        mine = {r["scheme"]: r["score"] for r in rows if r["link"] == trial["link"]}
        assert mine["fixed:10"] == pytest.approx(trial["score"], abs=1e-9)
        assert mine["cubic"] == pytest.approx(trial["baseline_scores"]["cubic"], abs=1e-9)
    # The default space draws every delivery process and competitors; six trials meet some.
    assert {t["params"]["delivery"] for t in first["trials"]} != {"constant"}


def test_the_largest_gaps_are_confirmed_at_fresh_seeds_and_kept_by_the_lesser_gap(
        tmp_path: Path, capsys) -> None:
    found, trials_file = tmp_path / "found.toml", tmp_path / "trials.json"
    # DEFAULT_ARGS keeping 2 of its 6 trials: the 4 of the largest trial gaps are confirmed at
    # seeds 9-10, the two after the trials' 7-8. With the progress bar, which says so.
    assert main(["search", *DEFAULT_ARGS[:-2], "--keep", "2", "-o", str(found), "--json",
                 str(trials_file)]) == 0
    assert "confirm at seeds 9-10" in capsys.readouterr().err
    trials = json.loads(trials_file.read_text())
    assert trials["seeds"] == [7, 8] and trials["confirm_seeds"] == [9, 10]
    by_trial_gap = sorted(trials["trials"], key=lambda t: (-t["gap"], t["trial"]))
    confirmed = [t for t in trials["trials"] if t["confirmed_gap"] is not None]
    assert [t["trial"] for t in confirmed] == sorted(t["trial"] for t in by_trial_gap[:4])
    for trial in confirmed:
        assert trial["kept_gap"] == min(trial["gap"], trial["confirmed_gap"])
    assert trials["kept"] == [t["trial"] for t in sorted(
        confirmed, key=lambda t: (-t["kept_gap"], t["trial"]))][:2]
    # The seeds are fresh: the default space's noisy links score otherwise at them.
    assert any(t["confirmed_score"] != t["score"] for t in confirmed)

    # `ccgym eval` at the confirmation's seeds replays the confirmed scores of the kept links.
    rows_file = tmp_path / "rows.json"
    assert main(["eval", "--links", str(found), "--schemes", "fixed:10,cubic,bbr", "--seed", "9",
                 "--runs", "2", "--duration-s", "6", "--no-progress", "--json",
                 str(rows_file)]) == 0
    rows = json.loads(rows_file.read_text())
    for number in trials["kept"]:
        trial = trials["trials"][number]
        mine = {r["scheme"]: r["score"] for r in rows if r["link"] == trial["link"]}
        assert mine["fixed:10"] == pytest.approx(trial["confirmed_score"], abs=1e-9)
        assert mine["bbr"] == pytest.approx(trial["confirmed_baseline_scores"]["bbr"], abs=1e-9)


@pytest.mark.parametrize("text, message", [
    ('rate_mbps = { min = 2, max = 64 }\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n'
     'delivery = ["constant"]\nspeed = 3\n', "unknown key 'speed'"),
    ('rate_mbps = { min = 64, max = 2 }\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n',
     "rate_mbps: min 64 is above max 2"),
    ('rate_mbps = { min = 0, max = 2 }\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n',
     "rate_mbps: min must be a number in [0.1, 10000], got 0"),
    ('rate_mbps = 10\ndelay_ms = { min = 0.0, max = 20, log = true }\nbuffer_bdp = 1\nloss = 0\n',
     "delay_ms: min must be a number in (0, 1000]"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = { min = 0, max = 0.1, log = true }\n',
     "loss: a log range needs min > 0"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\ndelivery = ["wifi"]\n',
     "delivery: unknown 'wifi'; valid: constant, poisson, cellular"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\ncompetitors = ["westwood"]\n',
     "competitors: unknown scheme 'westwood'"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\n', "missing key 'loss'"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n[cellular]\ntrace_s = 0.1\n',
     "cellular.trace_s must be a number in [1, 3600]"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n[cellular]\nrate_range = 1\n',
     "cellular.rate_range: min must be a number in (1, 1000]"),
    ('rate_mbps = 10\ndelay_ms = 900\nbuffer_bdp = 1\nloss = 0\n', "shorter than 2 minimum RTTs"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\ncompetitors = ["none", "cubic"]'
     '\ninterval_s = 40\n', "interval_s 40: the second flow would start after the run's end"),
    ('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\nfirst = "me"\n',
     "first: unknown 'me'; valid: competitors, scheme"),
    ('rate_mbps = 10 delay_ms = 20\n', "TOML syntax error"),
])
def test_a_bad_space_is_one_line_naming_the_file_and_key(text: str, message: str,
                                                          tmp_path: Path, capsys) -> None:
    space = tmp_path / "space.toml"
    space.write_text(text)
    found = tmp_path / "found.toml"
    assert main(["search", "--scheme", "fixed:5", "--space", str(space), "--trials", "1",
                 "--duration-s", "1", "--no-progress", "-o", str(found)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"ccgym search: error: {space}")
    assert message in err
    assert not found.exists()


def test_a_trace_too_short_for_the_longest_delay_is_refused_at_the_default_length(
        tmp_path: Path, capsys) -> None:
    # Constant links run 30 s, but a generated trace runs once: 2 s at 600 ms one way (a
    # 1.2 s RTT) is too short to measure; at 500 ms it is long enough.
    space = tmp_path / "space.toml"
    found = tmp_path / "found.toml"
    text = ('rate_mbps = 10\ndelay_ms = {}\nbuffer_bdp = 1\nloss = 0\n'
            'delivery = ["constant", "cellular"]\n[cellular]\ntrace_s = 2\n')
    space.write_text(text.format(600))
    assert main(["search", "--scheme", "fixed:5", "--space", str(space), "--trials", "1",
                 "--no-progress", "-o", str(found)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{space}: link longest-delay-cellular-10mbps-600ms" in err
    assert "a run of 2 s is shorter than 2 minimum RTTs (2.4 s)" in err and not found.exists()
    space.write_text(text.format(500))
    assert main(["search", "--scheme", "fixed:5", "--space", str(space), "--trials", "1",
                 "--baselines", "cubic", "--seeds", "1", "--no-progress", "-o", str(found)]) == 0


@pytest.mark.parametrize("args, message", [
    (["--space", "no-such-space"], "no such file and no packaged space"),
    (["--baselines", "cubic,,bbr"], "--baselines 'cubic,,bbr': an empty item"),
    (["--scheme", "oracle", "--space", "default"],
     "oracle: its ideal window assumes the link is its own"),
    (["--baselines", "cubic,kernel:cubic"], "kernel:cubic: kernel TCP runs in real time"),
    (["--baselines", "cubic,fixed:5"], "fixed:5 is the scheme searched"),
    (["-o", "{d}/found.json"], "name it .toml"),
    (["-o", "{space}"], "is also an input"),
])
def test_bad_flags_are_one_line(args: list[str], message: str, tmp_path: Path, capsys) -> None:
    space = tmp_path / "space.toml"
    space.write_text(RATE_SPACE)
    before = space.read_text()
    values = {"d": tmp_path, "space": space}
    argv = ["search", "--scheme", "fixed:5", "--space", str(space), "--trials", "1",
            "--duration-s", "1", "--no-progress", "-o", str(tmp_path / "found.toml")]
    argv += [a.format(**values) for a in args]  # a flag given twice: argparse takes the last
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert space.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]


def test_a_learned_policy_is_searched_alike_twice(tmp_path: Path) -> None:
    from ccgym.policies.lstm import LstmPolicy

    policy = tmp_path / "policy.pt"
    LstmPolicy(hidden_size=8).save(policy)
    args = ("--scheme", f"lstm:{policy}", "--baselines", "vegas", "--trials", "3", "--seeds", "2",
            "--duration-s", "6", "--seed", "3")
    first, _, first_text = search(tmp_path, *args, name="a")
    second, _, second_text = search(tmp_path, *args, name="b")
    assert _without_times(first) == _without_times(second)
    assert first_text.replace("a.toml", "b.toml") == second_text  # the replay names its file
    assert all(math.isfinite(t["score"]) for t in first["trials"])  # its runs delivered


def test_ctrl_c_mid_search_writes_nothing(tmp_path: Path) -> None:
    space = tmp_path / "space.toml"
    space.write_text(RATE_SPACE)
    argv = [sys.executable, "-m", "ccgym.cli", "search", "--scheme", "fixed:5", "--space",
            str(space), "--trials", "2000", "--duration-s", "20", "-o", str(tmp_path / "f.toml"),
            "--json", str(tmp_path / "t.json")]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    seen = ""
    while "search:" not in seen:  # the progress bar: the search has begun
        char = process.stderr.read(1)
        assert char, "ended before its progress bar"
        seen += char
    process.send_signal(signal.SIGINT)
    err = seen + process.stderr.read()
    assert process.wait(timeout=600) == 130, err
    assert err.rstrip().endswith("ccgym search: interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["space.toml"]


def test_a_default_baseline_searched_is_not_its_own_baseline(tmp_path: Path) -> None:
    space = tmp_path / "space.toml"
    space.write_text(RATE_SPACE)
    trials, _, text = search(tmp_path, "--scheme", "copa", "--space", str(space), "--trials",
                             "1", "--seeds", "1", "--duration-s", "2")
    assert trials["baselines"] == ["cubic", "bbr", "vegas"]
    assert "--schemes copa,cubic,bbr,vegas " in text  # the replay command eval accepts
