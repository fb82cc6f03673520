"""Property tests (Hypothesis) of training configs: any document is a TrainConfig or a
UserError naming the file, section and key, never another exception; an accepted config
written back (config.toml of a run) reads back the same."""

from __future__ import annotations

import dataclasses
import tempfile
import tomllib
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccgym.errors import UserError
from ccgym.train.config import SECTIONS, load_config, parse_config, to_toml

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
VALUES = st.one_of(st.integers(min_value=-5, max_value=10**6), st.floats(allow_nan=True),
                   st.booleans(), st.text(max_size=8),
                   st.sampled_from(["rate_mbps=12,delay_ms=20", "cubic", "dagger", "ppo", ""]),
                   st.lists(st.sampled_from(["rate_mbps=12,delay_ms=20", "vegas", "x"]),
                            max_size=3))
KNOWN = {name: [f.name for f in dataclasses.fields(section)]
         for name, section in SECTIONS.items()}


def section(name: str) -> st.SearchStrategy[dict]:
    keys = st.one_of(st.sampled_from(KNOWN[name]), st.text(max_size=6))
    return st.dictionaries(keys, VALUES, max_size=4)


DOCS = st.dictionaries(st.one_of(st.sampled_from(sorted(KNOWN)), st.text(max_size=6)),
                       st.deferred(lambda: st.one_of(*[section(n) for n in KNOWN], VALUES)),
                       max_size=4)


@SETTINGS
@given(doc=DOCS)
def test_a_config_document_is_a_config_or_a_clear_error(doc: dict) -> None:
    try:
        config = parse_config(doc, "gen.toml")
    except UserError as e:
        assert str(e).startswith("gen.toml")
        return
    assert parse_config(tomllib.loads(to_toml(config)), "back") == config


@SETTINGS
@given(doc=DOCS)
def test_a_config_file_is_a_config_or_a_clear_error(doc: dict, toml_text) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gen.toml"
        path.write_text(toml_text(doc))
        try:
            load_config(path)
        except UserError as e:
            assert str(e).startswith(str(path))


@SETTINGS
@given(data=st.binary(max_size=200))
def test_a_config_of_any_bytes_is_a_clear_error_or_a_config(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "gen.toml"
        path.write_bytes(data)
        try:
            load_config(path)
        except UserError as e:
            assert str(e).startswith(str(path))
