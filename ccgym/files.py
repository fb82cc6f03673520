"""Files every part of ccgym writes or reads the same way: outputs, TOML, the cache root.

An output path is written by what it names:
- `-`: standard output (text and JSON outputs);
- a FIFO, a character device, /dev/stdout, /dev/fd/N (process substitution) or anything else
  that is not a regular file: opened and written in place, never replaced;
- a symlink: followed, and the file it names replaced (the link stays a link);
- a regular file, or nothing yet: replaced atomically. The new content goes to a temporary
  file beside the target, renamed over it, so a reader (another worker, a resumed run, a killed
  one) sees the old file or the whole new one, never half of one; on any error, Ctrl-C
  included, the temporary file is removed.
Whether a path can be written is checked before the work starts (check_output: a name too
long for the file system included), and a command's output that is one of its inputs is
refused (check_not_input). Folders a command writes follow ccgym.folders' rule.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import tomllib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, TextIO

from ccgym.errors import UserError

CACHE_ENV = "CCGYM_CACHE"
# mkstemp makes files private (0600); what ccgym writes is as readable as any other output.
FILE_MODE = 0o644
FOLDER_MODE = 0o755
STDOUT = "-"
TEMP_PREFIX = "ccgym-"  # this process's temporary files: ccgym-KIND-PID-...
# Paths whose regular files are other processes' open files (/dev/stdout, /proc/self/fd/1
# redirected to a file): appended to in place, never replaced behind their owner's back.
IN_PLACE_ROOTS = ("/dev/", "/proc/")
# What a temporary name beside a target adds to its name (.NAME.PID-XXXXXXXX.tmp, .NAME.old-PID):
# a name that fits the file system but not with this is refused as too long.
TEMP_NAME_RESERVE = 24
# Where the file system does not say (os.pathconf): Linux's limits.
NAME_MAX = 255
PATH_MAX = 4096


def is_stdout(path: str | os.PathLike | None) -> bool:
    return path is not None and os.fspath(path) == STDOUT


def writes_in_place(path: str | os.PathLike) -> bool:
    """Whether `path` names a node to write into rather than a file to replace."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    return not stat.S_ISREG(mode) or os.path.abspath(path).startswith(IN_PLACE_ROOTS)


def name_problem(path: str | os.PathLike, reserve: int = 0, inside: bool = False) -> str | None:
    """Why `path` is too long a name for the file system (one of its names over NAME_MAX, its
    last over NAME_MAX - reserve, the whole over PATH_MAX, less a name's room when `inside`:
    a folder to write files in), or None. Judged before any work, so that a long name never
    costs a finished run."""
    text = os.path.abspath(os.fspath(path))
    existing = Path(text)
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    name_max = _pathconf(existing, "PC_NAME_MAX", NAME_MAX)
    path_max = _pathconf(existing, "PC_PATH_MAX", PATH_MAX) - (name_max + 1 if inside else 0)
    names = [n for n in text.split(os.sep) if n]
    for i, name in enumerate(names):
        limit = name_max - (reserve if i == len(names) - 1 else 0)
        if len(name.encode(errors="surrogateescape")) > limit:
            return (f"{shortened(os.fspath(path))}: the name {shortened(name)} is too long "
                    f"({len(name)} characters; at most {limit} here)")
    if len(text.encode(errors="surrogateescape")) > path_max:
        return (f"{shortened(os.fspath(path))}: the path is too long ({len(text)} characters; "
                f"at most {path_max} here)")
    return None


def _pathconf(path: Path, name: str, default: int) -> int:
    try:
        return os.pathconf(path, name)
    except (OSError, ValueError):
        return default


def shortened(text: str, limit: int = 60) -> str:
    """A long name shown so that the line stays one line a person reads."""
    return text if len(text) <= limit else f"{text[:30]}...{text[-25:]}"


def check_output(path: str | os.PathLike, stdout: bool = True) -> str | None:
    """Why `path` cannot take an output, or None if it can; no side effect (a FIFO is not
    opened: that would wait for its reader)."""
    text = os.fspath(path)
    if not text.strip():
        return "an empty path"
    if text == STDOUT:
        return None if stdout else "this output is not text: give a file name, not '-'"
    problem = name_problem(text, reserve=TEMP_NAME_RESERVE)
    if problem:
        return problem
    if os.path.isdir(text):
        return f"{text} is a folder; give a file name"
    if writes_in_place(text):
        return None if os.access(text, os.W_OK) else f"{text} is not writable"
    target = Path(os.path.realpath(text))
    if not target.parent.is_dir():
        return f"folder {target.parent} does not exist"
    if not os.access(target.parent, os.W_OK | os.X_OK):
        return f"folder {target.parent} is not writable"
    if target.exists() and not os.access(target, os.W_OK):
        return f"{text} is not writable (read-only)"
    return None


def check_not_input(output: str | os.PathLike | None, inputs: Iterable[str | os.PathLike],
                    flag: str) -> None:
    """A UserError if `output` is one of the command's input files: writing it would destroy
    what the command reads."""
    if output is None or is_stdout(output) or not os.path.exists(output):
        return
    for item in inputs:
        with contextlib.suppress(OSError):
            if os.path.isfile(item) and os.path.samefile(output, item):
                raise UserError(f"{flag} {output} is also an input ({item}): writing it would "
                                "destroy it; give another output file")


def human_stream(*outputs: str | os.PathLike | None) -> TextIO:
    """Where a command prints its table and messages: standard error when one of its outputs
    goes to standard output (`--json -`), so that output stays clean for a pipe."""
    return sys.stderr if any(is_stdout(o) for o in outputs) else sys.stdout


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path for a writer that wants a file name (onnx.save_model); when the block
    ends without an error its content goes to `path` as the module's docstring says."""
    if is_stdout(path) or writes_in_place(path):
        # Whole or nothing here too: the content is complete before anything reaches the pipe.
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix("output"), suffix=Path(path).suffix)
        os.close(fd)
        try:
            yield Path(tmp)
            _copy_into(path, Path(tmp))
        finally:
            Path(tmp).unlink(missing_ok=True)
        return
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target.parent, f".{target.name}.")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}-",
                               suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, FILE_MODE & ~umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _copy_into(path: str | os.PathLike, source: Path) -> None:
    """source's bytes written into standard output or an existing node (appended: a regular
    file behind /dev/stdout keeps what its owner wrote before)."""
    try:
        with open(source, "rb") as src:
            if is_stdout(path):
                sys.stdout.flush()
                shutil.copyfileobj(src, sys.stdout.buffer)
                sys.stdout.buffer.flush()
                return
            with open(path, "ab") as out:
                shutil.copyfileobj(src, out)
    except BrokenPipeError:
        # The reader has gone (`| head -1`): what it did not read it did not want, and the
        # command goes on to its other outputs (see ccgym/cli.py).
        return
    except OSError as e:  # /dev/full, a device that refuses: the user's node, the user's error
        raise UserError(f"{os.fspath(path)}: cannot write: {e.strerror}") from None


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


def temporary_folder(kind: str) -> tempfile.TemporaryDirectory:
    """tempfile.TemporaryDirectory named for this process (ccgym-KIND-PID-...), removed when the
    block ends; one that a killed process (SIGKILL) leaves is removed by the next ccgym command
    (remove_stale_temporaries)."""
    return tempfile.TemporaryDirectory(prefix=_temp_prefix(kind))


def remove_stale_temporaries() -> None:
    """Removes the temporary files and folders (temporary_folder, outputs on their way into a
    pipe) of ccgym processes that are gone."""
    remove_stale(Path(tempfile.gettempdir()), TEMP_PREFIX, kinds=True)


def _temp_prefix(kind: str) -> str:
    return f"{TEMP_PREFIX}{kind}-{os.getpid()}-"


def remove_stale(folder: Path, prefix: str, kinds: bool = False) -> None:
    """Removes the entries of `folder` named PREFIX[KIND-]PID-... whose process is gone and
    whose owner is this user: what a killed writer left behind. A process that is alive, or
    another user's, keeps its own."""
    pattern = re.compile(re.escape(prefix) + (r"[a-z]+-" if kinds else "") + r"(\d+)-")
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        match = pattern.match(entry.name)
        if not match or _alive(int(match.group(1))):
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def umask() -> int:
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


def toml_value(value: Any) -> str:
    """A value as TOML text that tomllib reads back equal: booleans, integers, finite floats,
    strings, lists and tables (written inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write {value} to TOML here")
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


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


def find_packaged_file(name_or_path: str, packaged: Sequence[Path], suffix: str, flag: str,
                       what: str, plural: str) -> Path:
    """A file from a path, or from the name (stem, `suffix` optional) of one of `packaged`
    files, e.g. "default" for configs/spaces/default.toml; else a UserError naming `flag`
    and the packaged names. A path that exists comes first."""
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    by_name = {p.stem: p for p in packaged}
    stem = name_or_path.removesuffix(suffix)
    if stem in by_name and "/" not in name_or_path and os.sep not in name_or_path:
        return by_name[stem]
    raise UserError(f"{flag} {name_or_path!r}: no such file and no packaged {what} of that "
                    f"name; packaged {plural}: {', '.join(sorted(by_name))}")
