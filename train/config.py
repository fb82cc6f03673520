"""Training-run configs: TOML files (configs/train/*.toml), checked once when read.

Every key has a default and a description (train/sections.py; `ccgym train --describe-config`
prints them all); a file sets only what it changes, and `ccgym train --set section.key=value`
changes any key from the command line. An unknown section or key, or a value of the wrong type,
is a UserError that names the file, the section and the key, and lists the valid ones. The
resolved config (defaults filled in, paths made absolute) is written into the run folder as
config.toml, and `--resume` reads it back from there.

A file may start from another: a top-level `extends = "mixed"` (a packaged config's name) or
`extends = "base.toml"` (a path relative to the file) takes every key of that config, resolved
as when it is trained itself, and the file's own keys replace those they name, key by key, so
a variant says only what differs (configs/train/mixed-shared.toml).

Links: a string is a link set (a packaged name such as "indigo-synthetic", or a TOML path
relative to the config file); a list holds link specs ("rate_mbps=12,delay_ms=20") and/or
link sets. Relative trace paths in specs are relative to the config file.
"""

from __future__ import annotations

import dataclasses
import os
import textwrap
import tomllib
import typing
from importlib import resources
from pathlib import Path
from collections.abc import Sequence
from typing import Any

from ccgym.config_fields import broken_rule, is_real
from ccgym.emulators.link_names import needs_shared_data, rebase_entry, resolve_entries
from ccgym.emulators.links import Link, data_dir
from ccgym.emulators.variants import Variation, vary_links
from ccgym.envs.config import EnvConfig
from ccgym.errors import UserError
from ccgym.files import read_toml, toml_value, unknown_key
from ccgym.policies import packaged_policies
from ccgym.policies.policy_path import without_scheme
from ccgym.train.registry import TRAINERS
from ccgym.train.sections import MOVED, MOVED_UNSET, SECTIONS, LinkEntries, TrainConfig


# ---------------------------------------------------------------- reading

def _is_list_of(test: Any) -> Any:
    return lambda value: isinstance(value, list) and all(test(v) for v in value)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


# A field's type -> (its name in errors, the test a TOML value must pass, the conversion).
_TYPES: dict[Any, tuple[str, Any, Any]] = {
    bool: ("true or false", lambda v: isinstance(v, bool), bool),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool), int),
    float: ("a number", is_real, float),
    str: ("a string", _is_str, str),
    list[str]: ("a list of strings", _is_list_of(_is_str), list),
    list[float]: ("a list of numbers", _is_list_of(is_real),
                  lambda v: [float(x) for x in v]),
    LinkEntries: ("a string or a list of strings",
                  lambda v: _is_str(v) or _is_list_of(_is_str)(v),
                  lambda v: v if isinstance(v, str) else list(v)),
}


def _check_type(value: Any, annotation: Any) -> Any:
    """The value converted to the field's type, or raise TypeError (naming the type)."""
    name, test, convert = _TYPES[annotation]
    if not test(value):
        raise TypeError(name)
    return convert(value)


def _section(name: str, table: Any, where: str) -> Any:
    section_type = SECTIONS[name]
    if not isinstance(table, dict):
        raise UserError(f"{where}: must be a table (a [section] of key = value lines)")
    hints = typing.get_type_hints(section_type)
    valid = [f.name for f in dataclasses.fields(section_type)]
    values = {}
    for key, value in table.items():
        dotted = f"{name}.{key}"
        if dotted in MOVED_UNSET and value == MOVED_UNSET[dotted]:
            continue
        if dotted in MOVED:
            section, _, new_key = MOVED[dotted].partition(".")
            raise UserError(f"{where} {key}: every trainer's {key} is now [{section}] {new_key}")
        if key not in hints:
            raise unknown_key(where, key, valid)
        try:
            values[key] = _check_type(value, hints[key])
        except TypeError as e:
            raise UserError(f"{where} {key}: must be {e}, got {value!r}") from None
    return section_type(**values)


def parse_config(doc: dict[str, Any], source: str = "config") -> TrainConfig:
    """A TrainConfig from a parsed TOML document; UserError on any unknown or bad key."""
    sections = {}
    for name, table in doc.items():
        if name not in SECTIONS:
            raise unknown_key(source, name, list(SECTIONS))
        sections[name] = _section(name, table, f"{source}: [{name}]")
    config = TrainConfig(**sections)
    validate(config, source)
    return config


def _read_toml(path: Path) -> dict[str, Any]:
    doc = read_toml(path, "config file")
    if not doc:
        # Training with every default is `ccgym train` with no file; an empty file is a mistake.
        raise UserError(f"{path}: empty config (no sections); give [run], [links], ... as in "
                        "configs/train/quick.toml, or no file for the packaged default")
    return doc


def load_config(path: str | os.PathLike) -> TrainConfig:
    """Reads, checks and resolves a config file (link paths made absolute), starting from the
    config it extends, if any."""
    return _load(Path(path), ())


def _load(path: Path, extended_by: tuple[Path, ...]) -> TrainConfig:
    doc = _read_toml(path)
    if "extends" in doc:
        base = _load_base(doc.pop("extends"), path, extended_by)
        doc = _overlay(base.to_dict(), doc)
    config = parse_config(doc, str(path))
    return resolve_paths(config, path.resolve().parent)


def _overlay(base: dict[str, dict[str, Any]], doc: dict[str, Any]) -> dict[str, Any]:
    """The base's sections with the file's keys in place of theirs; anything else in the file
    (an unknown section, a section that is not a table) is left for parse_config to name."""
    merged: dict[str, Any] = {name: dict(table) for name, table in base.items()}
    for name, table in doc.items():
        if isinstance(table, dict) and isinstance(merged.get(name), dict):
            merged[name].update(table)
        else:
            merged[name] = table
    return merged


def _load_base(extends: Any, path: Path, extended_by: tuple[Path, ...]) -> TrainConfig:
    where = f"{path}: extends"
    if not isinstance(extends, str) or not extends.strip():
        raise UserError(f"{where}: must be a packaged config's name ({', '.join(packaged_names())})"
                        f" or a TOML path relative to the file, got {extends!r}")
    base_path = config_path(extends, path.resolve().parent, f"{where} = {extends!r}")
    if not base_path.is_file():
        raise UserError(f"{where}: no such file {base_path}")
    chain = (*extended_by, path.resolve())
    if base_path in chain:
        loop = " -> ".join(str(p) for p in (*chain, base_path))
        raise UserError(f"{where}: a config cannot extend itself: {loop}")
    return _load(base_path, chain)


def config_path(name: str, folder: Path, where: str) -> Path:
    """The file a config's name means, the same for `ccgym train NAME` and `extends = NAME`: a
    TOML path (one that is a file, ends in .toml or names a folder) taken from `folder`, or else
    a packaged config's name. `where` starts the error for neither."""
    path = Path(name).expanduser()
    if (folder / path).is_file() or path.suffix == ".toml" or len(path.parts) > 1:
        return (folder / path).resolve()
    if name not in packaged_names():
        raise UserError(f"{where}: no such config file or packaged training config; "
                        f"packaged: {', '.join(packaged_names())}")
    return _packaged_path(name)


def _packaged_path(name: str) -> Path:
    # The packaged configs are plain files of the installed package (a source checkout or a
    # wheel unpacked on disk), so that a relative link path in them resolves.
    return Path(str(resources.files("ccgym.configs") / "train" / f"{name}.toml")).resolve()


def packaged_names() -> list[str]:
    """The names of the configs shipped in ccgym/configs/train."""
    folder = resources.files("ccgym.configs") / "train"
    return sorted(e.name.removesuffix(".toml") for e in folder.iterdir() if e.name.endswith(".toml"))


def load_packaged_config(name: str) -> TrainConfig:
    """A config shipped in ccgym/configs/train (e.g. "quick")."""
    if name not in packaged_names():
        raise UserError(f"no packaged training config {name!r}")
    return load_config(_packaged_path(name))


# ---------------------------------------------------------------- checks

def validate(config: TrainConfig, source: str) -> None:
    """Value checks (types were checked when reading) of the sections the run uses: each
    field's rule, then each section's check of what relates fields, then the links."""
    def bad(key: str, message: str) -> UserError:
        section, name = key.split(".")
        return UserError(f"{source}: [{section}] {name}: {message}")

    for name in config.used_sections():
        section = getattr(config, name)
        broken = broken_rule(section)
        if broken:
            raise bad(f"{name}.{broken[0]}", broken[1])
    for name in config.used_sections():
        check = getattr(getattr(config, name), "check", None)
        broken = check(config) if check is not None else None
        if broken:
            raise bad(*broken)
    links = config.links
    for key in ("train", "validation"):
        value = getattr(links, key)
        if not value or (isinstance(value, list) and not all(v.strip() for v in value)):
            raise bad(f"links.{key}", "must name a link set or list link specs")
    if any(not s.strip() for s in config.eval.baselines):
        raise bad("eval.baselines", "has an empty scheme name")
    try:
        Variation(tuple(links.vary_delay_ms), tuple(links.vary_queue_bdp), tuple(links.vary_ack))
    except ValueError as e:
        key, _, message = str(e).partition(": ")
        raise bad(f"links.vary_{key}", message) from None


# ---------------------------------------------------------------- links

def _absolute_entries(entries: LinkEntries, base: Path) -> LinkEntries:
    if isinstance(entries, str):
        return rebase_entry(entries, base) if entries else entries
    return [rebase_entry(e, base) for e in entries]


def resolve_paths(config: TrainConfig, base: Path) -> TrainConfig:
    links = config.links
    config.links = dataclasses.replace(
        links, train=_absolute_entries(links.train, base),
        train_fallback=_absolute_entries(links.train_fallback, base),
        validation=_absolute_entries(links.validation, base),
        validation_fallback=_absolute_entries(links.validation_fallback, base))
    config.eval = dataclasses.replace(config.eval,
                                      share_links=_absolute_entries(config.eval.share_links, base))
    # A space file, as a link set file, is found beside the config; a name is a packaged space.
    config.curriculum.space = rebase_entry(config.curriculum.space, base)
    config.model.init_from = _policy_path(config.model.init_from)
    config.dagger.teacher = _policy_path(config.dagger.teacher)
    return config


def _policy_path(value: str) -> str:
    """A policy argument (train/teacher.py) with a path made absolute: run folders live under
    the working directory (runs/), not beside the config file. A packaged policy's name stays
    a name, unless a file or folder of that name is here (resolve_policy_path's order)."""
    argument = without_scheme(value)
    if not argument or (packaged_policies.is_name(argument) and not Path(argument).exists()):
        return value
    return str(Path(argument).expanduser().resolve())


def resolve_link_entries(entries: LinkEntries, what: str, section: str = "links") -> list[Any]:
    """The Link objects (ccgym.emulators.links.Link) a [section] entry names. Links given as
    spec strings form a group named after the entry (e.g. "validation"); a link set's links
    keep the set's group."""
    try:
        links = resolve_entries(entries, group=what)
    except UserError as e:
        raise UserError(f"[{section}] {what}: {e}") from None
    if not links:
        raise UserError(f"[{section}] {what}: no links")
    return links


def _with_fallback(entries: LinkEntries, fallback: LinkEntries,
                   what: str) -> tuple[list[Any], str | None]:
    """The links of `entries`, or of `fallback` (with a note saying so) when `entries` need
    the shared recorded data and it is absent."""
    data = data_dir()
    data_missing = data is None or not data.is_dir()
    if fallback and data_missing and needs_shared_data(entries):
        note = (f"[links] {what} needs the shared data, which was not found "
                f"(set CCGYM_DATA); using {what}_fallback {fallback!r}")
        return resolve_link_entries(fallback, f"{what}_fallback"), note
    return resolve_link_entries(entries, what), None


def resolve_validation_links(config: TrainConfig) -> tuple[list[Any], str | None]:
    """The validation links, and a note when the fallback replaced them (data absent)."""
    return _with_fallback(config.links.validation, config.links.validation_fallback, "validation")


def resolve_share_links(config: TrainConfig) -> list[Any]:
    """The links of the share validation; none when [eval] share_against is empty."""
    if not config.eval.share_against:
        return []
    return resolve_link_entries(config.eval.share_links, "share_links", "eval")


def resolve_train_links(config: TrainConfig) -> tuple[list[Any], str | None]:
    """The training links, each crossed with the [links] vary_* values, and a note when the
    fallback replaced them (data absent)."""
    links, note = _with_fallback(config.links.train, config.links.train_fallback, "train")
    variation = Variation(tuple(config.links.vary_delay_ms), tuple(config.links.vary_queue_bdp),
                          tuple(config.links.vary_ack))
    return vary_links(links, variation), note


@dataclasses.dataclass(frozen=True)
class RunLinks:
    """A run's links, resolved once (resolve_run_links): training (crossed with the vary_*
    values), validation and share validation, and a note for each fallback used."""

    train: list[Link]
    validation: list[Any]
    share: list[Any]
    notes: list[str]


def resolve_run_links(config: TrainConfig) -> RunLinks:
    """Every link a run trains and validates on, each resolved once."""
    train, train_note = resolve_train_links(config)
    validation, validation_note = resolve_validation_links(config)
    return RunLinks(train, validation, resolve_share_links(config),
                    [note for note in (train_note, validation_note) if note])


# The [links] keys that are the environment's own fields (envs/config.py declares them).
COMPETITION_FIELDS = ("competitors", "competitor_starts", "competitor_stagger_ms",
                      "competitor_stop")
MS_PER_S = 1000.0


def env_config(config: TrainConfig, links: Sequence[Link]) -> EnvConfig:
    """The environment of every trainer's rollouts, derived from the training config, with
    `links` resolved now into LinkProfiles (the driver's once for the run: its workers parse
    no link). The reward is scaled as PPO learns from it ([ppo] reward_scale; DAgger reads no
    reward); the expert's oracle and the random starts are [dagger]'s (PPO reads neither, and
    their defaults are the environment's)."""
    d, scale = config.dagger, config.ppo.reward_scale
    env = EnvConfig(episode_ms=config.run.episode_ms, throughput_weight=scale,
                    delay_weight=scale, oracle_duration_ms=d.oracle_duration_s * MS_PER_S or None,
                    oracle_lookbacks=list(d.oracle_lookbacks), random_start=d.random_start,
                    observation_version=config.model.observation_version,
                    **{name: getattr(config.links, name) for name in COMPETITION_FIELDS})
    # A teacher labels DAgger's rollouts: the oracle is never asked, so it never runs.
    return env.resolved(links, expert=not config.dagger.teacher)


# ---------------------------------------------------------------- writing

def to_toml(config: TrainConfig, header: str = "") -> str:
    """The config as TOML that parse_config reads back to an equal config."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    for section, values in config.to_dict().items():
        if lines:
            lines.append("")
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {toml_value(value)}" for key, value in values.items())
    return "\n".join(lines) + "\n"


def with_overrides(config: TrainConfig, source: str = "command line",
                   **changes: Any) -> TrainConfig:
    """A copy with `section.key` changes (e.g. {"run.iterations": 3}), re-validated."""
    doc = config.to_dict()
    for dotted, value in changes.items():
        section, key = dotted.split(".")
        doc[section][key] = value
    return parse_config(doc, source)



# ---------------------------------------------------------------- command line

def parse_assignment(text: str) -> tuple[str, Any]:
    """`--set section.key=value` -> ("section.key", the value typed as the field is). The value
    is written as in a TOML file (3, 0.5, true, ["a", "b"]); a string needs no quotes."""
    where = f"--set {text}"
    dotted, equals, raw = text.partition("=")
    section, dot, key = dotted.strip().partition(".")
    if not equals or not dot:
        raise UserError(f"{where}: give SECTION.KEY=VALUE, e.g. run.iterations=5")
    if section not in SECTIONS:
        raise unknown_key(where, section, list(SECTIONS), "section")
    if f"{section}.{key}" in MOVED:
        raise UserError(f"{where}: every trainer's {key} is now {MOVED[f'{section}.{key}']}")
    hints = typing.get_type_hints(SECTIONS[section])
    if key not in hints:
        raise unknown_key(where, key, list(hints))
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = None
    annotation = hints[key]
    if annotation is str and not isinstance(value, str):
        return dotted.strip(), raw
    if annotation == LinkEntries and not isinstance(value, (str, list)):
        return dotted.strip(), raw
    if value is None:
        raise UserError(f"{where}: [{section}] {key} must be {_TYPES[annotation][0]}, "
                        f"got {raw!r}")
    return dotted.strip(), value


def _wrapped(text: str, indent: str) -> list[str]:
    return textwrap.wrap(" ".join(text.split()), width=96, initial_indent=indent,
                         subsequent_indent=indent, break_on_hyphens=False)


def describe_config() -> str:
    """Every section and key with its type, default and description: the config reference
    (`ccgym train --describe-config`)."""
    owners = {s: name for name, r in TRAINERS.items() for s in r.sections}
    defaults = TrainConfig().to_dict()
    lines = ["", 'extends = ""    (a string; a top-level key, above the sections)']
    lines += _wrapped("The config this file starts from: a packaged config's name "
                      f"({', '.join(packaged_names())}) or a TOML path relative to the file. "
                      "Each key the file sets replaces that key; the others keep the base's "
                      "values.", "      ")
    for name, section_type in SECTIONS.items():
        only = f' (used when [algorithm] name = "{owners[name]}")' if name in owners else ""
        lines += ["", f"[{name}]{only}"]
        lines += _wrapped(section_type.__doc__ or "", "  ")
        hints = typing.get_type_hints(section_type)
        for f in dataclasses.fields(section_type):
            lines.append(f"  {f.name} = {toml_value(defaults[name][f.name])}"
                         f"    ({_TYPES[hints[f.name]][0]})")
            lines += _wrapped(f.metadata.get("doc", ""), "      ")
    return "\n".join(lines[1:]) + "\n"
