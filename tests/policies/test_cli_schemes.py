"""`ccgym schemes` and the catalog everything else derives its scheme lists from."""

from __future__ import annotations

import json
import math
import re

import pytest

from ccgym.analysis.cli_eval import DEFAULT_SCHEMES
from ccgym.cli import main
from ccgym.emulators import _core
from ccgym.policies.schemes import baseline_schemes, scheme_catalog


def test_catalog_defaults_lie_in_their_ranges() -> None:
    catalog = scheme_catalog()
    assert catalog[-1].name == _core.EXTERNAL_SCHEME
    for scheme in catalog:
        for p in scheme.params:
            lo = -math.inf if p.min is None else p.min
            hi = math.inf if p.max is None else p.max
            assert (p.default > lo if p.min_open else p.default >= lo), (scheme.name, p.name)
            assert (p.default < hi if p.max_open else p.default <= hi), (scheme.name, p.name)


def test_eval_scores_every_catalog_scheme_but_the_learned_slot() -> None:
    assert DEFAULT_SCHEMES.split(",") == baseline_schemes()
    assert _core.EXTERNAL_SCHEME not in baseline_schemes()
    assert {"ledbat", "c2tcp", "vivace", "bbr3"} <= set(baseline_schemes())


def test_table_lists_every_scheme_parameter_default_and_range(capsys) -> None:
    assert main(["schemes"]) == 0
    out = capsys.readouterr().out
    for scheme in scheme_catalog():
        assert f"{scheme.name}: {scheme.summary}" in out
        for p in scheme.params:
            line = next(ln for ln in out.splitlines() if ln.split()[:1] == [p.name]
                        and p.help in ln)
            assert f"default {p.default:g}, {p.range}" in line
    assert "the learned flow's slot" in out


def test_json_is_the_catalog(capsys) -> None:
    assert main(["schemes", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in listed] == [s.name for s in scheme_catalog()]
    cubic = next(s for s in listed if s["name"] == "cubic")
    beta = next(p for p in cubic["params"] if p["name"] == "beta")
    assert beta == {"name": "beta", "default": 0.7, "help": beta["help"], "range": "in (0, 1)",
                    "min": 0.0, "max": 1.0, "min_open": True, "max_open": True}


def test_json_takes_an_output_as_every_verb_does(tmp_path, capsys) -> None:
    """--json OUT writes a file; '-' writes standard output and sends the list to standard
    error, as `eval --json -` does with its table."""
    out = tmp_path / "schemes.json"
    assert main(["schemes", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert [s["name"] for s in json.loads(out.read_text())][0] == scheme_catalog()[0].name
    assert "cubic:" in captured.out
    assert main(["schemes", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == json.loads(out.read_text())
    assert "cubic:" in captured.err
    assert main(["schemes", "--json", str(tmp_path / "none" / "s.json")]) == 2
    assert "ccgym schemes: error: argument --json" in capsys.readouterr().err


@pytest.mark.parametrize("spec, message", [
    ("cubic:beta=1.5", "scheme 'cubic': parameter 'beta' must be in (0, 1), got 1.5"),
    ("ledbat:target_ms=0", "scheme 'ledbat': parameter 'target_ms' must be in (0, 10000], got 0"),
    ("vivace:epsilon=0.6", "scheme 'vivace': parameter 'epsilon' must be in (0, 0.5), got 0.6"),
])
def test_a_value_outside_its_range_is_one_line_naming_scheme_key_and_range(
        tmp_path, capsys, spec: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        _core.validate_scheme(spec)
    out = tmp_path / "rows.json"
    assert main(["eval", "--link", "rate_mbps=12,delay_ms=20", "--schemes", spec,
                 "--no-progress", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()
