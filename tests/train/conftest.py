"""Training tests: generated traces and oracle searches stay out of ~/.cache; small configs."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path_factory.getbasetemp() / "ccgym-cache"))
