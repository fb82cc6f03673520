"""Every verb ccgym lists is built and reachable: none is dropped from --help quietly."""

from __future__ import annotations

import importlib

import pytest

from ccgym import cli


@pytest.mark.parametrize("verb", sorted(cli.VERBS))
def test_every_verb_has_its_module(verb, capsys):
    module = importlib.import_module(cli.VERBS[verb][0])
    assert callable(module.add_arguments) and callable(module.run)
    assert cli.main([verb, "--help"]) == 0
    assert f"ccgym {verb}" in capsys.readouterr().out


def test_a_missing_verb_module_is_an_error_not_a_silent_skip(monkeypatch):
    monkeypatch.setitem(cli.VERBS, "calibrate", ("ccgym.emulators.no_such_module", "gone"))
    with pytest.raises(ImportError, match="ccgym calibrate: its module ccgym.emulators.no_such_module"):
        cli.build_parser("calibrate")


def test_version_names_the_installed_distribution(capsys):
    from importlib.metadata import version

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"ccgym {version('ccgym')}\n"


@pytest.mark.parametrize("argv", [["eval", "--link", "rate_mbps=12,delay_ms=20", "--schemes"],
                                  ["run", "--link", "rate_mbps=12,delay_ms=20", "--scheme"]])
def test_an_unknown_scheme_lists_what_a_user_can_name(argv, capsys):
    assert cli.main([*argv, "westwood"]) == 2
    err = capsys.readouterr().err
    assert "unknown scheme 'westwood'" in err and "cubic" in err
    assert "external" not in err  # the window a policy drives from outside: not a choice


def test_the_top_level_help_names_every_trainer(capsys):
    from ccgym.train.registry import TRAINERS

    assert cli.main(["--help"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] == ["train"])
    assert all(name.upper() in line.upper() for name in TRAINERS), line
