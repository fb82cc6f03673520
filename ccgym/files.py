"""Files every part of ccgym writes or reads the same way: atomic writes, TOML, the cache root.

An atomic write goes to a temporary file beside the target and is renamed over it, so a reader
(another worker, a resumed run, a killed one) sees the old file or the whole new one, never a
half-written file; on any error, Ctrl-C included, the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from ccgym.errors import UserError

CACHE_ENV = "CCGYM_CACHE"
# mkstemp makes files private (0600); what ccgym writes is as readable as any other output.
FILE_MODE = 0o644


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside `path` for a writer that wants a file name (onnx.save_model);
    it replaces `path` when the block ends without an error."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, FILE_MODE & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w") -> Iterator[IO[Any]]:
    """open(path, mode) for writing ("w" or "wb"), made atomic; flushed to disk before the
    rename, so that a crash right after it leaves the new file whole."""
    with atomic_path(path) as tmp, open(tmp, mode) as f:
        yield f
        f.flush()
        os.fsync(f.fileno())


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_open(path, "w") as f:
        f.write(text)


def atomic_write_json(path: str | os.PathLike, value: object, indent: int | None = 2) -> None:
    """JSON for people and scripts (indented, a final newline). Python's json writes NaN and
    -Infinity as such, which Python reads back; the caller decides whether that is fine."""
    with atomic_open(path, "w") as f:
        json.dump(value, f, indent=indent)
        f.write("\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_toml(path: str | os.PathLike, what: str = "TOML file") -> dict[str, Any]:
    """A TOML document; every failure a UserError starting with the file name (tomllib's
    syntax message ends with the line and column)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise UserError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a folder, not a {what}") from None
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise UserError(f"{path}: not UTF-8 text: {e.reason}") from None
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: TOML syntax error: {e}") from None


def unknown_key(where: str, key: str, valid: Sequence[str], what: str = "key") -> UserError:
    """The error for a key that is not one of `valid`, with the closest valid one if any."""
    close = difflib.get_close_matches(key, list(valid), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UserError(f"{where}: unknown {what} {key!r}{hint}; valid {what}s: {', '.join(valid)}")


def cache_root() -> Path:
    """$CCGYM_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/ccgym: generated traces, oracle searches."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ccgym"
