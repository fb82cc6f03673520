"""mypy over ccgym's Python packages, laid out as the wheel lays them out.

mypy finds packages in folders, not through the editable install's import hook, so this lays out
build/typecheck/ccgym/ from pyproject.toml's [tool.scikit-build.wheel.packages] (links to the
sources) with the compiled core's type stub, which the build generates with nanobind's stubgen
(CMakeLists.txt) and installs beside the module. mypy's settings: pyproject.toml's [tool.mypy].

    .venv/bin/python scripts/typecheck.py [MYPY ARGS...]
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "build" / "typecheck"


def core_stub() -> Path:
    spec = importlib.util.find_spec("ccgym.emulators._core")
    stub = Path(spec.origin).parent / "_core.pyi" if spec and spec.origin else None
    if stub is None or not stub.is_file():
        sys.exit("typecheck: the compiled core has no stub beside it: run scripts/setup.sh")
    return stub


def lay_out(tree: Path) -> None:
    """tree/ccgym/... as the wheel holds it: a link per source file."""
    shutil.rmtree(tree / "ccgym", ignore_errors=True)
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["scikit-build"][
        "wheel"]["packages"]
    for target, folder in packages.items():
        dest = tree / target
        dest.mkdir(parents=True, exist_ok=True)
        for source in (ROOT / folder).glob("*.py"):
            (dest / source.name).symlink_to(source)
    (tree / "ccgym" / "emulators" / "_core.pyi").symlink_to(core_stub())


def main() -> int:
    lay_out(TREE)
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               "-p", "ccgym", *sys.argv[1:]]
    return subprocess.run(command, cwd=TREE).returncode


if __name__ == "__main__":
    sys.exit(main())
