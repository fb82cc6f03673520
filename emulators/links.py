"""Link sets: TOML files of named link specs, each link checked and made canonical.

A link set (configs/links/*.toml) is

    group = "indigo-synthetic"
    description = "..."

    [[link]]
    name = "synthetic-5mbps-10ms"
    source = "where the link comes from"
    delay_ms = 10
    rate_mbps = 5
    delivery = "constant"
    competitors = ["cubic"]   # optional: classic flows sharing the bottleneck (`ccgym eval`)
    first = "competitors"     # optional, with competitors: which starts first ("scheme": the
    interval_s = 5            #   evaluated flow), and how many seconds apart the flows start

with the keys of a link spec string (emulators/cpp/spec.hh) as TOML values. A trace path may
start with ${CCGYM_DATA} (the shared recorded data) or be relative to the TOML file. A table
`synthetic_trace = { model = "cellular", mean_mbps = 8.0, seed = 3, duration_s = 60 }` (or
`ack_synthetic_trace`) stands for a generated trace (ccgym.emulators.generate), written once
into a cache folder under a name that hashes its parameters.

Every link ends as a canonical spec string checked by the one C++ parser; errors become
UserError naming the file, the link and the key. What the `--link` / `--links` flags and the
[links] entries of configs name is resolved in ccgym.emulators.link_names.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

from ccgym.emulators import _core
from ccgym.errors import UserError
from ccgym.files import cache_root, read_toml, toml_value, unknown_key
from ccgym.flags import MAX_DURATION_S

LINK_SET_SUFFIX = ".toml"
PACKAGED_LINKS_FOLDER = "links"  # inside the ccgym.configs package
DATA_ENV = "CCGYM_DATA"
TRACE_CACHE_FOLDER = "traces"

# The keys of a spec are the C++ parser's (spec_keys()). This table only says which TOML type
# a value must have (an ACK key as its data key), so that a TOML typo is reported with its file
# and link before anything is built; a key it lacks takes any scalar and the parser checks it.
_TOML_TYPES: dict[str, tuple[type, ...]] = {
    "trace": (str,), "rate_mbps": (int, float), "delivery": (str,), "burst_packets": (int,),
    "burst_period_ms": (int, float), "queue": (str,), "loss": (int, float),
    "jitter_ms": (int, float), "delay_ms": (int, float), "once": (bool,),
}
_ANY_SCALAR = (str, int, float, bool)
LINK_META_KEYS = ("name", "source")
# Not part of the link itself: the classic flows that share it when `ccgym eval` runs a scheme.
COMPETITORS_KEY = "competitors"
# Beside competitors, which flow starts first (the others follow an interval apart): a link's
# own (these keys of its table) where it has one, else the command's (`ccgym eval --first
# --interval-s`), else the competitors first, all at once.
FIRST_KEY, INTERVAL_KEY = "first", "interval_s"
FIRST_CHOICES = ("competitors", "scheme")
SYNTHETIC_KEYS = {"synthetic_trace": "trace", "ack_synthetic_trace": "ack_trace"}
TRACE_KEYS = ("trace", "ack_trace")
TOP_LEVEL_KEYS = ("group", "description", "link")

SYNTHETIC_MODELS = ("cellular",)
SYNTHETIC_REQUIRED = ("mean_mbps", "seed")
SYNTHETIC_DEFAULT_DURATION_S = 60

# A link name goes into spec strings, file names and leaderboards: keep it to a safe alphabet,
# and short enough that a plot's file name (NAME__SCHEME__throughput.png) fits a file system's
# 255 bytes with room for the scheme.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")
MAX_LINK_NAME = 100
_DATA_VAR_RE = re.compile(r"\$\{([^}]*)\}")


@dataclasses.dataclass(frozen=True)
class Link:
    name: str
    group: str
    spec: str    # canonical spec string (parses back to the same link)
    source: str  # where the link comes from (paper, measurement, generator)
    # Classic schemes of the flows that share the bottleneck with the evaluated one (a shared-
    # bottleneck case of a link set); empty: the evaluated scheme has the link to itself.
    competitors: tuple[str, ...] = ()
    first: str | None = None         # beside competitors: its own start, None: the command's
    interval_s: float | None = None


@dataclasses.dataclass(frozen=True)
class LinkSetInfo:
    """What `ccgym links` lists about a set, read without building its links."""
    path: Path
    group: str
    description: str
    names: list[str]


# ---------------------------------------------------------------- places

def repo_root() -> Path:
    """The source tree holding this file (emulators/links.py), symlinks resolved."""
    return Path(__file__).resolve().parents[1]


def data_dir() -> Path | None:
    """The shared recorded data: $CCGYM_DATA if set, else the first existing of the
    conventional places beside the project; None when there is none."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser()
    for candidate in (repo_root().parent / "shared" / "data",
                      Path.cwd().parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate.resolve()
    return None


def cache_dir() -> Path:
    """Where generated traces are kept: $CCGYM_CACHE/traces, else
    ${XDG_CACHE_HOME:-~/.cache}/ccgym/traces."""
    return cache_root() / TRACE_CACHE_FOLDER


def _packaged_links_dir() -> Path:
    return Path(str(resources.files("ccgym.configs") / PACKAGED_LINKS_FOLDER))


def packaged_link_sets() -> list[Path]:
    """The link sets shipped in ccgym/configs/links, sorted by name."""
    folder = _packaged_links_dir()
    return sorted(p for p in folder.iterdir() if p.suffix == LINK_SET_SUFFIX)


# ---------------------------------------------------------------- reading TOML

def _read_toml(path: Path) -> dict[str, Any]:
    return read_toml(path, "link set")


def _link_tables(path: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    for key in doc:
        if key not in TOP_LEVEL_KEYS:
            raise unknown_key(str(path), key, TOP_LEVEL_KEYS)
    for key in ("group", "description"):
        if key in doc and not isinstance(doc[key], str):
            raise UserError(f"{path}: {key!r} must be a string")
    if "group" not in doc:
        raise UserError(f"{path}: missing top-level key 'group'")
    tables = doc.get("link", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise UserError(f"{path}: 'link' must be an array of tables: write each link as [[link]]")
    if not tables:
        raise UserError(f"{path}: no links: add [[link]] tables")
    return tables


def _link_label(path: Path, index: int, table: dict[str, Any]) -> str:
    name = table.get("name")
    who = f"link {name} (#{index + 1})" if isinstance(name, str) else f"link #{index + 1}"
    return f"{path}: {who}"


def read_link_set_info(path: str | os.PathLike) -> LinkSetInfo:
    """Group, description and link names of a set, without building its links (no traces are
    read or generated, the C++ core is not needed)."""
    path = Path(path)
    doc = _read_toml(path)
    tables = _link_tables(path, doc)
    names = [str(t.get("name", f"#{i + 1}")) for i, t in enumerate(tables)]
    return LinkSetInfo(path=path, group=doc["group"], description=doc.get("description", ""),
                       names=names)


# ---------------------------------------------------------------- one link

def _format_value(value: bool | int | float | str) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)  # shortest exact round-trip form
    return str(value)


def expand_data(text: str, where: str) -> str:
    """Replaces ${CCGYM_DATA}; any other ${...} is an error."""
    def substitute(match: re.Match[str]) -> str:
        if match.group(1) != DATA_ENV:
            raise UserError(f"{where}: unknown variable ${{{match.group(1)}}} in {text!r}; "
                            f"only ${{{DATA_ENV}}} is expanded")
        found = data_dir()
        if found is None:
            raise UserError(f"{where}: {text!r} needs the shared data, which was not found: "
                            f"set {DATA_ENV} to the folder holding traces/")
        return str(found)
    return _DATA_VAR_RE.sub(substitute, text)


def _resolve_trace(value: str, base: Path, where: str, key: str) -> str:
    expanded = expand_data(value, where)
    path = Path(expanded).expanduser()
    if not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise UserError(f"{where}: {key}: trace file not found: {path}")
    return str(path)


def synthetic_trace_path(params: dict[str, Any], stream: int) -> Path:
    """Generates (once) the trace a `synthetic_trace` table describes; returns its cached path.

    The file name hashes every parameter after defaults are filled in, with the generator's
    version, so a changed model never reuses a stale file. Writes are atomic, so concurrent
    workers loading the same set are safe.
    """
    from ccgym.emulators import generate  # numpy: only when a set asks for a generated trace

    model_name = params.get("model", SYNTHETIC_MODELS[0])
    if model_name not in SYNTHETIC_MODELS:
        raise ValueError(f"unknown model {model_name!r}; "
                         f"valid models: {', '.join(SYNTHETIC_MODELS)}")
    model_keys = set(generate.model_fields())
    # Floats throughout, so that 60 and 60.0 hash to the same file.
    model = generate.CellularModel(**{k: float(v) for k, v in params.items() if k in model_keys})
    mean_mbps = float(params["mean_mbps"])
    seed = int(params["seed"])
    duration_s = float(params.get("duration_s", SYNTHETIC_DEFAULT_DURATION_S))
    key = {"generator_version": generate.GENERATOR_VERSION, "model": model_name,
           "mean_mbps": mean_mbps, "seed": seed, "duration_s": duration_s, "stream": stream,
           **dataclasses.asdict(model)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    stream_tag = f"-stream{stream}" if stream else ""
    path = cache_dir() / f"{model_name}-{mean_mbps:g}mbps-seed{seed}{stream_tag}-{digest}.trace"
    if not path.is_file():
        stamps = generate.generate_cellular_trace(mean_mbps, duration_s, seed, model=model,
                                                  stream=stream)
        generate.write_trace(path, stamps)
    return path


def _synthetic(table_key: str, params: Any, where: str) -> str:
    from ccgym.emulators import generate

    label = f"{where}: {table_key}"
    if not isinstance(params, dict):
        raise UserError(f"{label}: must be a table, e.g. "
                        "{ model = \"cellular\", mean_mbps = 8.0, seed = 3, duration_s = 60 }")
    valid = ("model", *SYNTHETIC_REQUIRED, "duration_s", *generate.model_fields())
    for key in params:
        if key not in valid:
            raise unknown_key(label, key, valid)
    for key in SYNTHETIC_REQUIRED:
        if key not in params:
            raise UserError(f"{label}: missing key {key!r}")
    for key, value in params.items():
        if key == "model":
            ok = isinstance(value, str)
        elif key == "seed":
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok:
            raise UserError(f"{label}: {key} has the wrong type ({type(value).__name__})")
    stream = generate.ACK_STREAM if table_key.startswith("ack_") else generate.DATA_STREAM
    try:
        return str(synthetic_trace_path(params, stream))
    except (ValueError, TypeError) as e:
        raise UserError(f"{label}: {e}") from None
    except OSError as e:
        raise UserError(f"{label}: cannot write the generated trace into {cache_dir()}: "
                        f"{e}") from None


def spec_keys() -> tuple[str, ...]:
    """The keys of a link spec string, as the C++ parser (emulators/cpp/spec.hh) lists them."""
    return tuple(_core.link_spec_keys())


def _competitors(table: dict[str, Any], where: str) -> tuple[str, ...]:
    """A [[link]] table's `competitors`: a list of classic scheme names (check_competitor)."""
    value = table.get(COMPETITORS_KEY, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise UserError(f"{where}: {COMPETITORS_KEY} must be a list of scheme names, "
                        f'e.g. ["cubic"], got {value!r}')
    for scheme in value:
        check_competitor(scheme, f"{where}: {COMPETITORS_KEY}")
    return tuple(value)


def _start(table: dict[str, Any], where: str,
           competitors: tuple[str, ...]) -> tuple[str | None, float | None]:
    """A [[link]] table's own start beside its competitors (FIRST_KEY, INTERVAL_KEY), each None
    where it has none."""
    first, interval = table.get(FIRST_KEY), table.get(INTERVAL_KEY)
    if (first is not None or interval is not None) and not competitors:
        raise UserError(f"{where}: {FIRST_KEY} and {INTERVAL_KEY} say when the flows beside "
                        f"competitors start, and this link has no {COMPETITORS_KEY}")
    if first is not None and first not in FIRST_CHOICES:
        raise UserError(f"{where}: {FIRST_KEY} must be one of {', '.join(FIRST_CHOICES)}, "
                        f"got {first!r}")
    if interval is not None and (not isinstance(interval, (int, float))
                                 or isinstance(interval, bool)
                                 or not 0 <= interval <= MAX_DURATION_S):
        raise UserError(f"{where}: {INTERVAL_KEY} must be a number of seconds in "
                        f"[0, {MAX_DURATION_S:g}], got {interval!r}")
    return first, None if interval is None else float(interval)


def check_competitor(scheme: str, where: str) -> None:
    """UserError unless `scheme` can compete beside a link's evaluated flow: a classic scheme,
    which the C++ factory builds (learned schemes and the oracle decide in Python)."""
    try:
        _core.validate_classic_scheme(scheme)
    except ValueError as e:
        raise UserError(f"{where}: {e} (a competitor is a classic scheme: `ccgym eval --help` "
                        "lists them)") from None


def check_link_name(name: str, where: str) -> None:
    """A UserError for a name too long to name a link (see MAX_LINK_NAME)."""
    if len(name) > MAX_LINK_NAME:
        raise UserError(f"{where}: the link's name is {len(name)} characters; at most "
                        f"{MAX_LINK_NAME} (it names plot files and leaderboard rows)")


def _spec_text(path: Path, index: int, table: dict[str, Any]) -> tuple[str, str, str]:
    """(name, source, spec text) of one [[link]] table; every check short of the C++ parser."""
    where = _link_label(path, index, table)
    keys = [key for key in spec_keys() if key not in LINK_META_KEYS]
    valid = (*LINK_META_KEYS, *keys, *SYNTHETIC_KEYS, COMPETITORS_KEY, FIRST_KEY, INTERVAL_KEY)
    for key in table:
        if key not in valid:
            raise unknown_key(where, key, valid)
    name = table.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise UserError(f"{where}: 'name' must be a string of letters, digits and . _ + -, "
                        f"got {name!r}")
    check_link_name(name, where)
    source = table.get("source", "")
    if not isinstance(source, str):
        raise UserError(f"{where}: 'source' must be a string")

    values = {key: _spec_value(key, table[key], path.parent, where)
              for key in keys if key in table}
    for table_key, trace_key in SYNTHETIC_KEYS.items():
        if table_key in table:
            if trace_key in table:
                raise UserError(f"{where}: give {trace_key} or {table_key}, not both")
            values[trace_key] = _synthetic(table_key, table[table_key], where)
    spec = ",".join([f"name={name}", *(f"{k}={v}" for k, v in values.items())])
    return name, source, spec


def _spec_value(key: str, value: Any, base: Path, where: str) -> str:
    """One TOML value of a link as spec text (a trace path made absolute)."""
    types = _TOML_TYPES.get(key.removeprefix("ack_"), _ANY_SCALAR)
    # bool is an int in Python: accept it only where a bool is meant.
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        expected = " or ".join(t.__name__ for t in types)
        raise UserError(f"{where}: {key} must be {expected}, got {value!r}")
    if key in TRACE_KEYS:
        value = _resolve_trace(str(value), base, where, key)
    text = _format_value(value)
    if "," in text:
        raise UserError(f"{where}: {key}: a comma cannot appear in a spec value: {text!r}")
    return text


def _canonical(spec_text: str, where: str) -> str:
    try:
        return _core.parse_link_spec(spec_text).to_string()
    except ValueError as e:
        raise UserError(f"{where}: {e}") from None


def load_link_set(path: str | os.PathLike) -> list[Link]:
    """The links of a TOML link set, each with its canonical spec; UserError on any problem.

    The whole file is checked first (keys, types, trace files, generated traces), then each
    spec by the C++ parser, so a typo is reported before anything is built.
    """
    path = Path(path)
    doc = _read_toml(path)
    tables = _link_tables(path, doc)  # checks the top-level keys, `group` among them
    return build_links(path, doc["group"], tables)


def build_links(path: Path, group: str, tables: list[dict[str, Any]]) -> list[Link]:
    """The links of [[link]] tables as a link set at `path` holds them (errors name the path;
    relative traces are taken from its folder): load_link_set's work after reading the file,
    for tables built in Python (ccgym search draws them) that must mean what the file would."""
    drafts = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables):
        name, source, spec = _spec_text(path, index, table)
        if name in seen:
            raise UserError(f"{_link_label(path, index, table)}: duplicate name, "
                            f"already used by link #{seen[name] + 1}")
        seen[name] = index
        where = _link_label(path, index, table)
        competitors = _competitors(table, where)
        drafts.append((name, source, spec, competitors, _start(table, where, competitors)))
    return [Link(name=name, group=group, spec=_canonical(spec, f"{path}: link {name}"),
                 source=source, competitors=competitors, first=first, interval_s=interval)
            for name, source, spec, competitors, (first, interval) in drafts]


# ---------------------------------------------------------------- writing TOML

def link_set_text(group: str, description: str, tables: list[dict[str, Any]],
                  comment: str = "") -> str:
    """A link set file holding `tables` ([[link]] tables as build_links takes them): what
    load_link_set reads back to the same tables. `comment` opens the file as # lines."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    lines += [*([""] if lines else []), f"group = {toml_value(group)}",
              f"description = {toml_value(description)}"]
    for table in tables:
        lines += ["", "[[link]]", *(f"{key} = {toml_value(value)}" for key, value in table.items())]
    return "\n".join(lines) + "\n"
