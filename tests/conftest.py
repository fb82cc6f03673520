"""Every test keeps generated traces, oracle searches and crash reports out of ~/.cache: one
cache per test session (shared by its tests, so a search runs once).

Tests stop programs with SIGINT, as Ctrl-C would. A test run started in the background of a
non-interactive shell (`pytest &` in a script) inherits SIGINT ignored, and passes that on to
every program it starts, so none of them would see Ctrl-C; here SIGINT is handled again, so
the programs under test start as they would from a terminal."""

import signal

import pytest


@pytest.fixture(autouse=True, scope="session")
def sigint_handled() -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CCGYM_CACHE", str(tmp_path_factory.getbasetemp() / "ccgym-cache"))


def _toml_value(value) -> str:
    import json
    import math

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are TOML's basic-string escapes
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no TOML for {value!r}")


@pytest.fixture(scope="session")
def toml_text():
    """doc -> TOML text, for property tests that write generated documents: top-level values,
    then [table]s, then [[array]]s of tables (what configs and link sets use)."""
    import json

    def render(doc: dict) -> str:
        lines = [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in doc.items()
                 if not isinstance(v, dict) and not _is_table_array(v)]
        for key, value in doc.items():
            if isinstance(value, dict):
                lines.append(f"[{json.dumps(key)}]")
                lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()]
            elif _is_table_array(value):
                for table in value:
                    lines.append(f"[[{json.dumps(key)}]]")
                    lines += [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in table.items()]
        return "\n".join(lines) + "\n"

    return render


def _is_table_array(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)
