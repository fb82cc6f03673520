"""`lstm:POLICY:compete=SCHEME`: the learned flow's competitive mode (policy_action.hh), asked
for in a scheme spec and run in the real simulator with the packaged generalist."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.stepping import Slot
from ccgym.envs.scoring import run_flows_stepped
from ccgym.errors import UserError
from ccgym.policies.lstm_scheme import LstmScheme
from ccgym.policies import packaged_policies
from ccgym.policies.policy_path import split_policy_options, with_policy_options

# A buffer of 4 pipes (80 datagrams) that fixed:200 keeps full; alone, a constant link.
DEEP = "rate_mbps=24,delay_ms=20,queue=droptail:packets=320"


def test_options_split_off_the_policy() -> None:
    assert split_policy_options("generalist:compete=bbr") == ("generalist", {"compete": "bbr"})
    assert split_policy_options("a.pt:compete=bbr:restart=1") == (
        "a.pt", {"compete": "bbr", "restart": "1"})
    assert split_policy_options("a.pt:compete=bbr:first=cubic") == (
        "a.pt", {"compete": "bbr", "first": "cubic"})
    assert split_policy_options("runs/quick") == ("runs/quick", {})
    assert split_policy_options("C:/x.pt") == ("C:/x.pt", {})  # no '=': part of the path
    assert with_policy_options("lstm:a.onnx", {"compete": "cubic"}) == "lstm:a.onnx:compete=cubic"


def test_a_path_that_exists_is_taken_whole(tmp_path) -> None:
    odd = tmp_path / "p:compete=bbr"
    odd.mkdir()
    assert split_policy_options(str(odd)) == (str(odd), {})


def test_the_packaged_generalist_runs_in_its_mode_unless_told_otherwise(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = packaged_policies.find("generalist").options
    assert default == "compete=bbr:first=cubic:restart=1"
    assert split_policy_options("generalist") == (
        "generalist", {"compete": "bbr", "first": "cubic", "restart": "1"})
    # Options given replace the catalog's; compete=none runs the policy alone.
    assert split_policy_options("generalist:compete=cubic") == ("generalist", {"compete": "cubic"})
    assert split_policy_options("generalist:compete=none") == ("generalist", {})
    assert split_policy_options("cellular") == ("cellular", {})  # its entry gives none
    # A folder named generalist is that folder, not the packaged policy: no options.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "generalist").mkdir()
    assert split_policy_options("generalist") == ("generalist", {})


@pytest.mark.parametrize(("argument", "problem"), [
    ("generalist:speed=2", "unknown option 'speed' (valid: compete, first, restart)"),
    ("generalist:compete=nosuch", "unknown scheme 'nosuch'"),
    ("generalist:compete=external", "not a classic scheme"),
    ("generalist:compete=", "needs a value"),
    ("generalist:compete=bbr:compete=cubic", "given twice"),
    ("generalist:compete=bbr:restart=2", "'restart' must be 0 or 1"),
    ("generalist:restart=1", "'restart' needs compete=SCHEME"),
    ("generalist:first=cubic", "'first' needs compete=SCHEME"),
    ("generalist:compete=bbr:first=nosuch", "first=nosuch: unknown scheme 'nosuch'"),
    ("generalist:compete=none:restart=1", "compete=none takes no restart="),
    ("generalist:first=cubic:compete=none", "compete=none takes no first="),
])
def test_a_bad_option_is_refused(argument: str, problem: str) -> None:
    with pytest.raises(UserError, match=re.escape(problem)):
        split_policy_options(argument)


def test_eval_refuses_a_bad_option_in_one_line() -> None:
    done = subprocess.run([sys.executable, "-m", "ccgym.cli", "eval", "--link", DEEP,
                           "--schemes", "lstm:generalist:compete=nosuch", "--duration-s", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "compete=nosuch" in done.stderr


def competing_fraction(scheme: str, others: list[str], duration_ms: float) -> float:
    """The generalist's flow (started 2 s after `others`, or alone) run to duration_ms; the
    fraction of its decisions in competitive mode."""
    start = 2000.0 if others else 0.0
    flows = [(_core.EXTERNAL_SCHEME, start, -1.0), *[(o, 0.0, -1.0) for o in others]]
    sim = _core.Simulator(DEEP, flows, 1)
    link = link_from_spec(DEEP)
    run_flows_stepped([sim], [link], [1], lambda: LstmScheme(scheme), {0: (start, duration_ms)},
                      duration_ms, threads=1)
    mode = sim.competitive_mode(0)
    return mode["competing_decisions"] / mode["decisions"]


def test_the_mode_switches_on_beside_a_buffer_filler_and_not_alone() -> None:
    # Beside bbr the generalist keeps a tenth of the link: the mode is on for 0.4 of its
    # decisions (cubic there holds most of the 4-BDP link at times, leaves on its share, and
    # enters again once starved). Beside a fixed window of 200 it holds half the link itself,
    # and stays out.
    assert competing_fraction("generalist:compete=cubic", ["bbr"], 30000) > 0.3
    assert competing_fraction("generalist:compete=cubic", ["fixed:200"], 15000) == 0
    assert competing_fraction("generalist:compete=cubic", [], 15000) == 0


@pytest.mark.parametrize("scheme", ["generalist:compete=none", "cellular"])
def test_without_the_option_the_flow_has_no_mode(scheme: str) -> None:
    sim = _core.Simulator(DEEP, [(_core.EXTERNAL_SCHEME, 0.0, -1.0)], 1)
    slot = Slot(sim, 0, link_from_spec(DEEP), 1)
    LstmScheme(scheme).reset([slot])
    sim.take_action(_core.HOLD_ACTION, 0)
    mode = sim.competitive_mode(0)
    assert (mode["competing"], mode["decisions"], mode["competing_decisions"]) == (False, 0, 0)


# shared-bottleneck's 24 Mbit/s, 20 ms link with a buffer of one BDP.
ONE_BDP = "rate_mbps=24,delay_ms=20,queue=droptail:packets=80"


def beside(competitor: str) -> tuple[dict, float]:
    """The generalist with bbr underneath and cubic first, 5 s after `competitor`, 30 s on
    ONE_BDP: its mode at the end, and its share of the bytes delivered from 15 s on."""
    sim = _core.Simulator(ONE_BDP, [(competitor, 0.0, -1.0), (_core.EXTERNAL_SCHEME, 5000.0, -1.0)],
                          1)
    run_flows_stepped([sim], [link_from_spec(ONE_BDP)], [1],
                      lambda: LstmScheme("generalist:compete=bbr:first=cubic:restart=1"),
                      {1: (5000.0, 30000.0)}, 30000.0, threads=1)
    log = sim.log()
    late = (log["arrival_ms"] >= 15000) & (log["dropped"] == 0)
    mine = log["bytes"][late & (log["flow"] == 1)].sum()
    return sim.competitive_mode(1), float(mine / log["bytes"][late].sum())


def test_the_mode_meets_bbr_with_bbr_and_cubic_with_cubic() -> None:
    # The generalist alone keeps 0.05 of this link beside bbr, and cubic in its place 0.06.
    mode, share = beside("bbr")
    assert not mode["first_classic"]
    assert share > 0.3
    assert 23 < mode["capacity_mbps"] < 25  # the link's 24 Mbit/s, from packet pairs
    mode, share = beside("cubic")
    assert mode["first_classic"]
    assert 0.3 < share < 0.7
