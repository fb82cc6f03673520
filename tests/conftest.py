"""Every test keeps generated traces, oracle searches and crash reports out of ~/.cache: one
cache per test session (shared by its tests, so a search runs once)."""

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path_factory.getbasetemp() / "ccgym-cache"))
