"""Link entries: what the `--link` / `--links` flags of every verb and the [links] items of
configs name, resolved to Links.

An entry is a link spec string (`key=value,...`, with trace paths relative to the working
folder or to $CCGYM_DATA), the name of a packaged link, or a link set (a TOML file or a
packaged set's name, read by ccgym.emulators.links).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ccgym.emulators import _core
from ccgym.emulators.links import (LINK_SET_SUFFIX, TRACE_KEYS, Link, check_link_name,
                                   data_dir, expand_data, load_link_set, packaged_link_sets,
                                   read_link_set_info)
from ccgym.errors import UserError
from ccgym.files import find_packaged_file


def is_spec(entry: str) -> bool:
    """The one rule for a link entry (a --link value, a [links] item, an env's links): a
    string with `=` is a spec, anything else names a link set."""
    return "=" in entry


def _map_traces(spec_text: str, change: Callable[[str], str]) -> str:
    """The spec with each trace path replaced by change(path); the rest as written."""
    parts = []
    for key, sep, value in _spec_items(spec_text):
        if sep and key.strip() in TRACE_KEYS and value.strip():
            value = change(value.strip())
        parts.append(f"{key}{sep}{value}")
    return ",".join(parts)


def _spec_items(spec_text: str) -> list[tuple[str, str, str]]:
    """A spec's comma-separated items as (key, "=", value), unstripped; ("text", "", "") for
    an item without `=` (the C++ parser reports it)."""
    return [item.partition("=") for item in spec_text.split(",")]


def _absolute_traces(spec_text: str, where: str) -> str:
    """Expands ${CCGYM_DATA} and makes trace paths absolute, so that a spec given on the
    command line still names the same files in workers started elsewhere."""
    return _map_traces(spec_text, lambda value: _command_line_trace(value, where))


def _command_line_trace(value: str, where: str) -> str:
    """A trace path typed on the command line: absolute, else relative to the working folder,
    else (when nothing is there) relative to the shared data, $CCGYM_DATA."""
    path = Path(expand_data(value, where)).expanduser()
    if not path.is_absolute() and not path.exists():
        data = data_dir()
        if data is not None and (data / path).exists():
            return str((data / path).absolute())
    return str(path.absolute())


def rebase_entry(entry: str, base: Path) -> str:
    """A link entry written in a file in folder `base`, made to mean the same from anywhere:
    relative trace paths of a spec and a relative link set path are taken from base;
    ${CCGYM_DATA} is left for the machine that resolves the entry."""
    if is_spec(entry):
        def rebase(value: str) -> str:
            if value.startswith("${") or Path(value).expanduser().is_absolute():
                return value
            return str((base / value).resolve())
        return _map_traces(entry, rebase)
    candidate = Path(entry).expanduser()
    if not candidate.is_absolute() and (base / candidate).is_file():
        return str((base / candidate).resolve())
    return entry  # a packaged set name, or an absolute path


def resolve_entries(entries: str | Sequence[str], group: str | None = None,
                    where: str = "--link") -> list[Link]:
    """The links that link entries name: each spec one link, each set its links. Links given
    as specs take `group` when given (e.g. "validation"); a set's links keep the set's."""
    links: list[Link] = []
    for entry in [entries] if isinstance(entries, str) else entries:
        if is_spec(entry):
            link = link_from_spec(entry, where)
            links.append(dataclasses.replace(link, group=group) if group else link)
        else:
            links.extend(_set_or_packaged_link(entry))
    return links


def _set_or_packaged_link(name: str) -> list[Link]:
    """The links of the set `name` names, else the packaged link of that name."""
    try:
        return load_link_set(find_link_set(name))
    except UserError as not_a_set:
        try:
            return [packaged_link(name)]
        except UserError:
            raise not_a_set from None


def packaged_link(name: str, where: str = "--link") -> Link:
    """A link of the packaged sets by name (`ccgym links list SET` shows them); only the set
    holding it is built."""
    for path in packaged_link_sets():
        if name in read_link_set_info(path).names:
            return next(link for link in load_link_set(path) if link.name == name)
    raise UserError(f"{where} {name!r} is neither a link spec (key=value,...) nor the name of a "
                    "link in the packaged sets (`ccgym links list SET` shows their names)")


def resolve_link(text: str, where: str = "--link") -> Link:
    """One link as every --link flag takes it: a spec string, or a packaged link's name."""
    return link_from_spec(text, where) if is_spec(text) else packaged_link(text, where)


def needs_shared_data(entries: str | Sequence[str]) -> bool:
    """Whether link entries refer to the shared recorded data (${CCGYM_DATA})."""
    for entry in [entries] if isinstance(entries, str) else entries:
        if "${" in entry:
            return True
        if not is_spec(entry):
            try:
                if "${" in find_link_set(entry).read_text():
                    return True
            except (UserError, OSError):
                continue
    return False


def link_from_spec(spec_text: str, where: str = "--link") -> Link:
    """A Link from a spec string given on the command line (`where` names it in errors). Its
    name is the spec's name=, else the trace's file name, else the canonical spec itself."""
    try:
        parsed = _core.parse_link_spec(_absolute_traces(spec_text, where))
    except ValueError as e:
        raise UserError(f"{where}: {e}") from None
    canonical = parsed.to_string()
    if parsed.name:
        check_link_name(parsed.name, where)
    name = parsed.name or _trace_name(canonical) or canonical
    return Link(name=name, group="command-line", spec=canonical, source="--link")


def _trace_name(spec_text: str) -> str | None:
    trace = spec_fields(spec_text).get("trace")
    return Path(trace).name if trace else None


def spec_fields(spec_text: str) -> dict[str, str]:
    """The key=value pairs of a (canonical) spec string, as text; no checks. For reading back
    what the C++ parser printed, e.g. the trace path; never for validating user input."""
    return {key.strip(): value.strip() for key, sep, value in _spec_items(spec_text) if sep}


def input_files(links: Sequence[Link], links_flag: str | None = None) -> list[str]:
    """The files a verb reads for its links (a --links set file, their traces): an output
    must not be one of them (ccgym.files.check_not_input)."""
    files = [str(find_link_set(links_flag))] if links_flag is not None else []
    for link in links:
        fields = spec_fields(link.spec)
        files += [fields[key] for key in TRACE_KEYS if fields.get(key)]
    return files


def find_link_set(name_or_path: str) -> Path:
    """A link set file from a path, or from the name of a packaged set ("indigo-synthetic")."""
    return find_packaged_file(name_or_path, packaged_link_sets(), LINK_SET_SUFFIX, "--links",
                              "link set", "sets")


def add_link_arguments(parser: Any, example: str) -> None:
    """A verb's --link SPEC | --links SET flags (one of them required), read by resolve_links."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--link", metavar="SPEC|NAME",
                       help=f"one link: a spec, e.g. '{example}' (trace paths relative to "
                            "here or to $CCGYM_DATA), or a packaged link's name")
    where.add_argument("--links", metavar="SET",
                       help="a link set: a TOML file or a packaged set name (see `ccgym links`)")


def resolve_links(link: str | None, links: str | None) -> list[Link]:
    """The links named by a verb's --link SPEC or --links FILE-or-NAME flag (exactly one)."""
    if link is not None and links is not None:
        raise UserError("give --link SPEC or --links SET, not both")
    if link is not None:
        return [resolve_link(link)]
    if links is not None:
        return load_link_set(find_link_set(links))
    raise UserError("no link given: use --link SPEC or --links SET "
                    "(`ccgym links` lists the packaged sets)")
