"""Link spaces (emulators/link_space.py): the packaged default, links drawn from a space as
link-set tables that load as written, and the link-set writer they are saved with."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import optuna

from ccgym.emulators import _core
from ccgym.emulators.link_facts import bdp_packets
from ccgym.emulators.link_names import spec_fields
from ccgym.emulators.link_space import find_space, load_space
from ccgym.emulators.links import build_links, link_set_text, load_link_set

CELLULAR_OWN_ACK = {"rate_mbps": 12.3, "delay_ms": 25.0, "delivery": "cellular", "ack": "own",
                    "buffer": "finite", "buffer_bdp": 2.0, "loss": 0.01, "competitor": "bbr",
                    "first": "scheme", "interval_s": 1.5,
                    "cellular_rate_range": 10.0, "cellular_volatility_per_sqrt_s": 0.5,
                    "cellular_mean_time_between_outages_s": 20.0, "cellular_mean_outage_s": 0.5}


def test_the_default_space_loads_and_documents_every_key() -> None:
    path = find_space("default")
    space = load_space(path)
    assert set(space.deliveries) == {"constant", "poisson", "cellular"}
    assert space.has_competitors and space.infinite_buffer
    lines = path.read_text().splitlines()
    keys = [i for i, line in enumerate(lines) if line and line[0].isalpha() and "=" in line]
    assert len(keys) >= 10
    # Each top-level key sits under its own comment; inside a [table] a block of keys may
    # share the comment above the table's header.
    in_table = False
    for i, line in enumerate(lines):
        in_table = in_table or line.startswith("[")
        if i in keys:
            above = next(a for a in reversed(lines[:i]) if a.strip())
            assert above.startswith("#") or (in_table and (above[0].isalpha()
                                                           or above.startswith("["))), line


def test_a_drawn_cellular_link_loads_with_its_ack_trace_buffer_and_competitor() -> None:
    space = load_space(find_space("default"))
    table = space.draw(optuna.trial.FixedTrial(CELLULAR_OWN_ACK), "drawn", trace_seed=5)
    assert table["synthetic_trace"]["mean_mbps"] == 12.3
    assert table["ack_synthetic_trace"] == table["synthetic_trace"]
    assert table["queue"] == f"droptail:packets={math.ceil(2 * bdp_packets(12.3, 25.0))}"
    [link] = build_links(space.path, "search", [table])
    fields = spec_fields(link.spec)
    assert fields["trace"] != fields["ack_trace"]  # independent draws of one model
    assert (link.competitors, link.first, link.interval_s) == (("bbr",), "scheme", 1.5)
    assert _core.parse_link_spec(link.spec).loss == 0.01


def test_a_constant_link_with_a_clean_ack_path_and_an_infinite_buffer() -> None:
    space = load_space(find_space("default"))
    choices = {**CELLULAR_OWN_ACK, "delivery": "constant", "ack": "clean", "buffer": "infinite",
               "loss": 0.0, "competitor": "none"}
    table = space.draw(optuna.trial.FixedTrial(choices), "plain", trace_seed=5)
    assert table == {"name": "plain-constant-12.3mbps-25ms-inf-queue", "source": "",
                     "delay_ms": 25.0, "rate_mbps": 12.3, "delivery": "constant",
                     "queue": "infinite"}


def test_a_written_link_set_reads_back_as_the_same_links(tmp_path: Path) -> None:
    tables = [{"name": "a", "source": 'quoted "text"', "delay_ms": 2.5e-05 * 1e6,
               "rate_mbps": 7, "delivery": "poisson", "loss": 1e-05, "competitors": ["cubic"]},
              {"name": "b", "source": "", "delay_ms": 20,
               "synthetic_trace": {"model": "cellular", "mean_mbps": 3.0, "seed": 1,
                                   "duration_s": 5}}]
    text = link_set_text("g", "two links", tables, comment="first line\nsecond")
    assert text.startswith("# first line\n# second\n")
    assert tomllib.loads(text)["link"] == tables
    path = tmp_path / "set.toml"
    path.write_text(text)
    assert load_link_set(path) == build_links(path, "g", tables)


def test_a_drawn_start_beside_a_competitor_is_carried_by_the_link(tmp_path: Path) -> None:
    path = tmp_path / "space.toml"
    path.write_text('rate_mbps = 10\ndelay_ms = 20\nbuffer_bdp = 1\nloss = 0\n'
                    'competitors = ["none", "cubic"]\nfirst = ["competitors", "scheme"]\n'
                    'interval_s = { min = 0, max = 5 }\n')
    space = load_space(path)
    choices = {"delivery": "constant", "ack": "clean", "competitor": "cubic", "first": "scheme",
               "interval_s": 2.5}
    table = space.draw(optuna.trial.FixedTrial(choices), "s", trace_seed=1)
    assert (table["first"], table["interval_s"]) == ("scheme", 2.5)
    assert table["name"].endswith("-beside-cubic-scheme-first-2.5s-apart")
    [link] = build_links(path, "search", [table])
    assert (link.competitors, link.first, link.interval_s) == (("cubic",), "scheme", 2.5)
    alone = space.draw(optuna.trial.FixedTrial({**choices, "competitor": "none"}), "a", 1)
    assert "first" not in alone and "interval_s" not in alone  # nothing starts beside it
