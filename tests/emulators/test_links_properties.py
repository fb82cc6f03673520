"""Property tests (Hypothesis) of the link entry points: any spec string or link-set file is
a Link list or a UserError naming where it is wrong, never another exception; what is
accepted round-trips through its canonical spec."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccgym.emulators import _core
from ccgym.emulators.link_names import link_from_spec
from ccgym.emulators.links import LINK_META_KEYS, SYNTHETIC_KEYS, load_link_set
from ccgym.errors import UserError

LINK_KEYS = [*LINK_META_KEYS, *_core.link_spec_keys(), *SYNTHETIC_KEYS]
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

# Values a user might type: numbers at and past the bounds, units, queue specs, junk.
VALUES = st.one_of(
    st.sampled_from(["12", "0", "-1", "1e9", "0.0001", "nan", "inf", "20", "1000", "1001",
                     "0.5", "1", "poisson", "constant", "burst", "trace", "true",
                     "droptail:packets=100", "droptail:bytes=100", "red:min=5:max=15:max_p=0.1",
                     "codel", "infinite", "fifo", "", " "]),
    st.text(max_size=12),
    st.floats(allow_nan=True).map(repr),
)
KEYS = st.one_of(st.sampled_from([k for k in _core.link_spec_keys() if "trace" not in k]),
                 st.text(max_size=8))
SPECS = st.lists(st.tuples(KEYS, VALUES), min_size=1, max_size=6).map(
    lambda items: ",".join(f"{k}={v}" for k, v in items))


@SETTINGS
@given(text=st.one_of(SPECS, st.text(max_size=60)))
def test_a_spec_is_a_link_or_a_clear_error(text: str) -> None:
    try:
        link = link_from_spec(text)
    except UserError as e:
        assert str(e).startswith("--link")
        assert "\0" not in str(e)
        return
    assert link_from_spec(link.spec).spec == link.spec  # canonical: parses to itself


TOML_VALUES = st.one_of(st.integers(min_value=-10, max_value=10**12),
                        st.floats(allow_nan=True, allow_infinity=True), st.booleans(),
                        st.sampled_from(["constant", "poisson", "droptail:packets=50", "x,y",
                                         "${CCGYM_DATA}/nope", "a b"]),
                        st.text(max_size=10), st.lists(st.integers(), max_size=2))
LINK_TABLES = st.dictionaries(st.one_of(st.sampled_from(LINK_KEYS), st.text(max_size=6)),
                              TOML_VALUES, max_size=6)
LINK_SETS = st.fixed_dictionaries(
    {"group": st.one_of(st.text(max_size=8), st.integers())},
    optional={"description": st.text(max_size=8),
              "link": st.lists(LINK_TABLES, max_size=4),
              "extra": TOML_VALUES})


@SETTINGS
@given(doc=LINK_SETS)
def test_a_link_set_is_links_or_a_clear_error(doc: dict, toml_text) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "set.toml"
        path.write_text(toml_text(doc))
        try:
            links = load_link_set(path)
        except UserError as e:
            assert str(e).startswith(str(path))
            return
    assert links
    assert all(link_from_spec(link.spec).spec == link.spec for link in links)


@SETTINGS
@given(data=st.binary(max_size=200))
def test_a_link_set_of_any_bytes_is_a_clear_error_or_links(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "set.toml"
        path.write_bytes(data)
        try:
            load_link_set(path)
        except UserError as e:
            assert str(e).startswith(str(path))
