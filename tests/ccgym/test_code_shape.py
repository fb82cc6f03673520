"""The library's code stays small enough to read: every module of the packaged folders at most
450 lines, every function (methods and nested functions included) at most 60 lines. Tests and
benchmarks are not the library and are not measured."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# The folders the wheel packages (ccgym, emulators, ..., configs): what the library is.
FOLDERS = [ROOT / folder for folder in PYPROJECT["tool"]["scikit-build"]["wheel"]["packages"].values()]
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 60

# Modules still over a limit, each waiting for its split; take one off once it is split, so the
# test guards it from then on. Paths relative to the repository root.
KNOWN_EXCEPTIONS: set[str] = set()


def library_modules() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in folder.rglob("*.py"))


def shape_offenders(path: Path, root: Path = ROOT) -> list[str]:
    """What in one module is over a limit, one line each: `file: N lines` and
    `file:LINE function NAME: N lines`, the file relative to root."""
    text = path.read_text()
    where = path.relative_to(root).as_posix()
    out = []
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        out.append(f"{where}: {lines} lines (at most {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(text, filename=where)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{where}:{node.lineno} function {node.name}: {length} lines "
                           f"(at most {MAX_FUNCTION_LINES})")
    return out


def test_the_library_folders_hold_python_modules():
    # Guards the measure below against a renamed folder or a changed pyproject that would
    # leave it measuring nothing.
    assert all(folder.is_dir() for folder in FOLDERS)
    assert {"ccgym", "emulators", "oracle", "analysis"} <= {folder.name for folder in FOLDERS}
    assert len(library_modules()) > 50


def test_modules_and_functions_are_short():
    offenders = [line for path in library_modules()
                 if path.relative_to(ROOT).as_posix() not in KNOWN_EXCEPTIONS
                 for line in shape_offenders(path)]
    assert not offenders, "over the limits (split them):\n" + "\n".join(offenders)


def test_known_exceptions_are_still_exceptions():
    # An exception that now keeps the limits is taken off the list, so that it stays guarded.
    fixed = [where for where in sorted(KNOWN_EXCEPTIONS)
             if not (ROOT / where).is_file() or not shape_offenders(ROOT / where)]
    assert not fixed, f"now within the limits: take off KNOWN_EXCEPTIONS: {', '.join(fixed)}"


def test_the_measure_finds_a_long_function_and_a_long_module(tmp_path):
    # The check itself can fail: a module of 451 lines holding a 61-line function is reported
    # twice, with its line numbers.
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    module = tmp_path / "long.py"
    module.write_text("def long_one():\n" + body + "\n" + "\n".join(["pass"] * 390) + "\n")
    found = shape_offenders(module, tmp_path)
    assert found == ["long.py: 451 lines (at most 450)",
                     "long.py:1 function long_one: 61 lines (at most 60)"]
    module.write_text("def short_one():\n" + "\n".join(body.splitlines()[:59]) + "\n")
    assert shape_offenders(module, tmp_path) == []
