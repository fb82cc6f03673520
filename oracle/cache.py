"""The oracle's disk cache: a search's result keyed by what it was asked and by the code that
computes it, so that a run from a full cache labels what one from an empty cache would.

Searches are slow (seconds to minutes per link) and every training run asks the same ones;
the key holds the link spec, seed, duration and choices, the traces' identity, and a digest
of every ccgym module the search reaches (and numpy's version).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ccgym.emulators import _core
from ccgym.files import atomic_write_json, cache_root

CACHE_FOLDER = "oracle"
# Bump when a cached result's meaning changes in a way the code digest below cannot see.
CACHE_VERSION = 2
# Where the searches live: the digest follows the code from there.
SEARCH_MODULE = "ccgym.oracle.ideal"


def oracle_cache_dir() -> Path:
    """$CCGYM_CACHE/oracle, else ${XDG_CACHE_HOME:-~/.cache}/ccgym/oracle."""
    return cache_root() / CACHE_FOLDER


def _trace_identity(path: str) -> list[Any]:
    """A trace's path, size and modification time: an edited trace misses the cache."""
    if not path:
        return []
    stat = os.stat(path)
    return [path, stat.st_size, stat.st_mtime_ns]


def code_files() -> list[Path]:
    """What a search's result depends on: the searches' module and every ccgym module it
    reaches through module-level names, transitively (this cache, the stepping loop, the
    metrics that score a window and the packet logs they read, the link facts, the compiled
    core). Followed, not listed, so that a module added or moved is never left out."""
    seen: dict[str, Path] = {}
    todo = [sys.modules[SEARCH_MODULE]]
    while todo:
        module = todo.pop()
        # A package's names include whichever submodules happen to be imported: skipped, so
        # that the digest never depends on what else the process imported.
        if module.__name__ in seen or hasattr(module, "__path__"):
            continue
        seen[module.__name__] = Path(str(module.__file__))
        for value in vars(module).values():
            name = value.__name__ if isinstance(value, ModuleType) else getattr(
                value, "__module__", None)
            if isinstance(name, str) and name.startswith("ccgym.") and name in sys.modules:
                todo.append(sys.modules[name])
    return [seen[name] for name in sorted(seen)]


@functools.cache
def code_digest() -> str:
    """A digest of the code that computes the oracle and of numpy's version (the metrics'
    percentiles and sums are numpy's): a change to any of it (an edit, a rebuilt core, an
    upgraded numpy) misses the cache instead of reusing windows the old code chose."""
    digest = hashlib.sha256(np.__version__.encode())
    for path in code_files():
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_path(kind: str, spec: str, seed: int, duration_ms: float,
                choices: dict[str, Any]) -> Path:
    """choices: what else the search was asked (a trace search's lookbacks)."""
    parsed = _core.parse_link_spec(spec)
    key = {"version": CACHE_VERSION, "code": code_digest(), "kind": kind, "spec": spec,
           "seed": seed, **choices,
           "duration_ms": duration_ms, "data_trace": _trace_identity(parsed.data_trace),
           "ack_trace": _trace_identity(parsed.ack_trace)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:24]
    return oracle_cache_dir() / f"{kind}-{digest}.json"


if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Search = TypeVar("Search", bound="DataclassInstance")


def cached_search(kind: str, result_type: type[Search], spec: str, seed: int, duration_ms: float,
                  compute: Callable[[], Search], **choices: Any) -> Search:
    """A search's result (a dataclass of floats) from the disk cache, else computed and
    stored (best effort)."""
    path = _cache_path(kind, spec, seed, duration_ms, choices)
    try:
        stored = json.loads(path.read_text())
        return result_type(**{name: float(value) for name, value in stored["result"].items()})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    result = compute()
    # Python's json writes and reads back -Infinity and NaN: this file is only ours to read.
    _store(path, {"result": asdict(result), "spec": spec, "seed": seed,
                  "duration_ms": duration_ms, **choices})
    return result


def _store(path: Path, record: dict[str, Any]) -> None:
    # Atomic (write then rename), so concurrent workers never read half a file; a read-only
    # cache only costs a recomputation.
    try:
        atomic_write_json(path, record, indent=None)
    except OSError:
        pass
