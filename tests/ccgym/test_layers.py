"""The folders are layers (pyproject.toml's [tool.importlinter]): the contract names every folder
and every verb, and `lint-imports` fails on an import that runs upward, also one inside a
function, and on a library module that imports a verb."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LINTER = PYPROJECT["tool"]["importlinter"]
CONTRACTS = {c["id"]: c for c in LINTER["contracts"]}
# "ccgym/emulators" = "emulators", ...: the folders mapped into the ccgym namespace
FOLDERS = {key.split("/", 1)[1]: ROOT / folder
           for key, folder in PYPROJECT["tool"]["scikit-build"]["wheel"]["packages"].items()
           if key != "ccgym"}
COPY = "ccgymcopy"  # the copy's package name, which the editable install of ccgym cannot shadow


def layer_names() -> set[str]:
    return {name.strip() for layer in CONTRACTS["layers"]["layers"]
            for name in re.split(r"[|:]", layer)}


def verb_modules() -> set[str]:
    return {f"ccgym.{name}.{path.stem}" for name, folder in FOLDERS.items()
            for path in folder.glob("cli_*.py")}


def test_every_folder_and_every_basic_module_is_a_layer():
    basics = {path.stem for path in (ROOT / "ccgym").glob("*.py") if path.stem != "__init__"}
    assert layer_names() == set(FOLDERS) | basics


def test_every_verb_is_the_top_layer_and_no_library_module_imports_one():
    ignored = {rule.split("->")[0].strip() for rule in CONTRACTS["layers"]["ignore_imports"]}
    assert ignored == verb_modules()
    assert set(CONTRACTS["verbs"]["forbidden_modules"]) == verb_modules()
    sources = set(CONTRACTS["verbs"]["source_modules"])
    assert {f"ccgym.{name}" for name in FOLDERS if name != "configs"} <= sources


def _renamed(text: str) -> str:
    return re.sub(r"^(\s*(?:from|import) )ccgym\b", rf"\g<1>{COPY}", text, flags=re.MULTILINE)


def _copy_package(dest: Path) -> None:
    """The Python sources laid out as the wheel lays them out, under the name COPY."""
    (dest / COPY).mkdir(parents=True)
    for path in (ROOT / "ccgym").glob("*.py"):
        (dest / COPY / path.name).write_text(_renamed(path.read_text()))
    for name, folder in FOLDERS.items():
        (dest / COPY / name).mkdir()
        for path in folder.glob("*.py"):
            (dest / COPY / name / path.name).write_text(_renamed(path.read_text()))


def _toml(value) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


def _config_for_copy(path: Path) -> None:
    text = json.dumps(LINTER)
    linter = json.loads(re.sub(r'(?<=["\s])ccgym(?=[."])', COPY, text))
    lines = ["[tool.importlinter]", f"root_package = {_toml(linter['root_package'])}"]
    for contract in linter["contracts"]:
        lines.append("[[tool.importlinter.contracts]]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in contract.items())
    path.write_text("\n".join(lines) + "\n")


def _append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n\n" + code)


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    program = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    return subprocess.run([program, "--no-cache", "pyproject.toml"], cwd=cwd, text=True,
                          capture_output=True, env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
                          timeout=300)


def test_lint_imports_refuses_an_upward_import_inside_a_function_and_a_verb_import(tmp_path):
    _copy_package(tmp_path)
    _config_for_copy(tmp_path / "pyproject.toml")
    kept = _lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr  # the copy keeps the contracts
    _append(tmp_path / COPY / "emulators" / "links.py",
            f"def _upward():\n    from {COPY}.analysis import evaluate\n\n    return evaluate\n")
    _append(tmp_path / COPY / "measure" / "metrics.py",
            f"def _verb():\n    from {COPY}.emulators import cli_links\n\n    return cli_links\n")
    broken = _lint_imports(tmp_path)
    out = broken.stdout
    assert broken.returncode == 1, out + broken.stderr
    assert f"{COPY}.emulators.links -> {COPY}.analysis.evaluate" in out
    assert f"{COPY}.measure.metrics -> {COPY}.emulators.cli_links" in out
    assert "0 kept, 2 broken" in out
