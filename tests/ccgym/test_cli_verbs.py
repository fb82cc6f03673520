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
