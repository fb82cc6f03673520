"""Processes as /proc shows them, for tests that check what a command leaves running."""

from __future__ import annotations

from pathlib import Path


def _stat_after_comm(pid: int | str) -> list[str]:
    """/proc/PID/stat's fields after `pid (comm)`: state, ppid, ... (comm may hold spaces)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Running and not a zombie (an exited process its parent has not reaped yet)."""
    try:
        return _stat_after_comm(pid)[0] != "Z"
    except (OSError, IndexError):
        return False


def _parents() -> dict[int, int]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = int(_stat_after_comm(entry.name)[1])
            except (OSError, IndexError, ValueError):
                continue
    return found


def children(pid: int) -> list[int]:
    """The processes whose parent is pid."""
    return [child for child, parent in _parents().items() if parent == pid]


def descendants(pid: int) -> set[int]:
    """pid's children, their children, and so on."""
    children_of: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children_of.setdefault(parent, []).append(child)
    found, todo = set(), [pid]
    while todo:
        for child in children_of.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found
