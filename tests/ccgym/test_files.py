"""Atomic writes, TOML reading and the cache root: the helpers every writer and reader uses."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from ccgym.errors import UserError
from ccgym.files import atomic_open, atomic_write_json, cache_root, read_toml, unknown_key


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write("half")
            raise RuntimeError("killed mid-write")
    assert json.loads(target.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    # Readable by others, as any output (mkstemp alone would leave it private).
    assert stat.S_IMODE(target.stat().st_mode) & 0o044 == 0o044


def test_read_toml_names_the_file_in_every_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[run]\nseed = \n")
    with pytest.raises(UserError, match=rf"^{bad}: TOML syntax error: .*line 2"):
        read_toml(bad)
    with pytest.raises(UserError, match=rf"^{tmp_path / 'none.toml'}: no such config file"):
        read_toml(tmp_path / "none.toml", "config file")
    with pytest.raises(UserError, match="is a folder"):
        read_toml(tmp_path)
    (tmp_path / "ok.toml").write_text("a = 1\n")
    assert read_toml(tmp_path / "ok.toml") == {"a": 1}


def test_unknown_key_suggests_the_closest_valid_one() -> None:
    message = str(unknown_key("f.toml: [dagger]", "epochz", ["epochs", "patience"]))
    assert message == ("f.toml: [dagger]: unknown key 'epochz' (did you mean 'epochs'?); "
                       "valid keys: epochs, patience")


def test_cache_root_follows_ccgym_cache_then_xdg(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    monkeypatch.delenv("CCGYM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "ccgym"
