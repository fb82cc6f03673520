"""Oracle searches cache their results on disk: keep the tests' out of ~/.cache."""

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path_factory.getbasetemp() / "ccgym-cache"))
