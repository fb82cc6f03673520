"""The one rule for every folder a command writes (--plots, --logs, shell --log, links generate
--out): ccgym lists what it wrote in the folder's WRITTEN_LIST. A folder that is new, empty,
or holds only what that list names is ccgym's, and is replaced whole (nothing of an earlier
run stays beside the new files). Any other entry is the user's: the folder is refused in one
line, unless --force, which writes ccgym's files into it and keeps every other entry. A
symlink is followed and the folder it names judged. Run folders (`ccgym train`) are always
new (train/run_folder.py), so nothing there is ever replaced.

Flags declare such folders with ccgym.flags.add_written_folder; the CLI judges them before
any work (folder_problem), and the command writes through output_folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ccgym.errors import UserError
from ccgym.files import (FILE_MODE, FOLDER_MODE, STDOUT, TEMP_NAME_RESERVE, name_problem,
                         remove_stale, shortened, umask)

WRITTEN_LIST = ".ccgym-written.json"
FORCE_HINT = ("give a new or empty folder, or --force to write into it anyway (files of the "
              "names ccgym writes are replaced, every other file kept)")


def place_problem(path: str | os.PathLike, replaced: bool, reserve: int = 0) -> str | None:
    """Why a command may not write a folder at `path` (one line), or None; no side effect: an
    empty path, standard output, a name too long (`reserve`: characters its own name must leave
    for a temporary suffix), a file, or a nearest existing folder that cannot take new entries
    (that needs both write and search permission). Where a folder is `replaced` (this module's
    rule) it is made beside its place and renamed in, so its parent is what must take entries;
    otherwise (`ccgym train --out`) new entries go into the folder itself."""
    text = os.fspath(path)
    if not text.strip():
        return "an empty path"
    if text == STDOUT:
        return "standard output cannot take a folder; give a folder"
    problem = name_problem(text, reserve=reserve, inside=True)
    if problem:
        return problem
    target = Path(os.path.realpath(text))
    if target.exists() and not target.is_dir():
        return f"{text} is a file, not a folder"
    existing = target.parent if replaced else target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, so {text} cannot be a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def folder_problem(path: str | os.PathLike, force: bool = False) -> str | None:
    """Why a command may not write the folder `path` by this module's rule (one line), or
    None; no side effect."""
    problem = place_problem(path, replaced=True, reserve=TEMP_NAME_RESERVE)
    if problem:
        return problem
    text = os.fspath(path)
    target = Path(os.path.realpath(text))
    if force or not target.is_dir():
        return None if not target.is_dir() or os.access(target, os.W_OK | os.X_OK) \
            else f"{text} is not writable"
    foreign = foreign_entries(target)
    if foreign:
        return f"{text} holds files ccgym did not write there ({_listed(foreign)}); {FORCE_HINT}"
    if _holds_working_folder(target):
        return f"{text} is the working folder or holds it; give a folder of its own"
    return None


def foreign_entries(folder: Path) -> list[str]:
    """The entries under `folder` (paths relative to it) that its WRITTEN_LIST does not name:
    the user's. A foreign folder is one entry; what is inside it is not listed."""
    written = written_entries(folder)
    foreign = []
    for root, dirs, names in os.walk(folder):
        ours = []
        for name in sorted(dirs + names):
            rel = os.path.relpath(os.path.join(root, name), folder)
            if rel in written:
                ours.append(name)
            elif rel != WRITTEN_LIST:
                foreign.append(rel)
        dirs[:] = [d for d in dirs if d in ours]
    return foreign


def written_entries(folder: Path) -> set[str]:
    """What ccgym wrote in `folder`, as its WRITTEN_LIST says (nothing without one)."""
    listing = folder / WRITTEN_LIST
    if listing.is_symlink() or not listing.is_file():
        return set()
    try:
        entries = json.loads(listing.read_text())["entries"]
    except (OSError, ValueError, KeyError, TypeError):
        return set()
    return {e for e in entries if isinstance(e, str)} if isinstance(entries, list) else set()


def _listed(names: Sequence[str], shown: int = 3) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(shortened(n) for n in names[:shown]) + more


def _holds_working_folder(target: Path) -> bool:
    try:
        cwd = Path.cwd().resolve()
    except OSError:  # the working folder was removed: it is in no folder
        return False
    return target == cwd or target in cwd.parents


@contextlib.contextmanager
def output_folder(path: str | os.PathLike, force: bool = False,
                  keep_on_error: bool = False) -> Iterator[Path]:
    """A new temporary folder beside `path` to fill; when the block ends without an error, its
    content goes into `path` by the rule above (judged again then: the user may have put a
    file there meanwhile). On an error, Ctrl-C included, it is removed and `path` is untouched;
    with keep_on_error (a run's logs, which say why it failed) what was written is put in
    place first."""
    problem = folder_problem(path, force)
    if problem:
        raise UserError(problem)
    target = Path(os.path.realpath(path))
    made = [p for p in target.parents if not p.exists()]  # made here, removed if it fails
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(target.parent, f".{target.name}.")
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}-",
                                suffix=".tmp"))
    try:
        try:
            yield tmp
        except BaseException:
            if keep_on_error and any(tmp.iterdir()):
                with contextlib.suppress(UserError, OSError):
                    _install(tmp, target, force)
            raise
        _install(tmp, target, force)
    finally:
        # Renamed into place, the temporary folder is gone already, and the folders made for
        # the target hold it; otherwise both are removed.
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(made)


def _remove_empty(folders: list[Path]) -> None:
    """The folders made for a target that was never put in place, deepest first, if empty."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _install(new: Path, target: Path, force: bool) -> None:
    problem = folder_problem(target, force)
    if problem:
        raise UserError(problem)
    entries = _entries(new)
    _write_list(new, entries)
    os.chmod(new, FOLDER_MODE & ~umask())
    if not target.exists() or not (foreign_entries(target) or _holds_working_folder(target)):
        _swap_in(new, target)
    else:
        _merge_into(new, target, entries)


def _entries(folder: Path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(root, name), folder)
                  for root, dirs, names in os.walk(folder) for name in dirs + names)


def _write_list(folder: Path, entries: list[str]) -> None:
    with open(folder / WRITTEN_LIST, "w") as f:
        json.dump({"written by": "ccgym", "entries": entries}, f, indent=1)
        f.write("\n")
    os.chmod(folder / WRITTEN_LIST, FILE_MODE & ~umask())


def _merge_into(new: Path, target: Path, entries: list[str]) -> None:
    """--force into a folder holding the user's files: each of ccgym's top-level entries
    replaces the one of its name, what an earlier command of ccgym wrote there and this one
    did not is removed, and everything else stays."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        old = written_entries(target)
        tops = {e.split(os.sep, 1)[0] for e in entries}
        for name in sorted(tops | {WRITTEN_LIST}):
            _remove(target / name)
            os.rename(new / name, target / name)
        for rel in sorted(old, key=lambda e: e.count(os.sep), reverse=True):
            if rel.split(os.sep, 1)[0] in tops:
                continue
            path = target / rel
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only when empty: a file the user put in it stays
                elif path.exists() or path.is_symlink():
                    path.unlink()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _swap_in(new: Path, target: Path) -> None:
    """Renames `new` to `target`, removing an old `target`; signals wait until it is done, so
    that Ctrl-C never leaves neither folder in place."""
    blocked = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    try:
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.rename(target, old)
            os.rename(new, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(new, target)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
