#!/usr/bin/env bash
# Runs every test: the C++ GoogleTest suite (plain, then under ASan+UBSan), ruff, the import
# layers (lint-imports), mypy, and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

jobs=$(nproc)
build_tests() {  # dir, extra cmake args...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCCGYM_TESTS=ON -DCCGYM_PYTHON=OFF "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}
echo "== C++ tests"
build_tests build/tests -DCMAKE_BUILD_TYPE=Release
ctest --test-dir build/tests --output-on-failure -j "$jobs"
echo "== C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer"
build_tests build/sanitize -DCMAKE_BUILD_TYPE=Debug -DCCGYM_SANITIZE=ON
ctest --test-dir build/sanitize --output-on-failure -j "$jobs"

echo "== fuzzing the parsers and the ONNX runtime (libFuzzer, ASan+UBSan; longer runs: benchmarks/bench_reliability.py)"
scripts/fuzz.sh 10

echo "== ruff (lint and complexity, pyproject.toml's [tool.ruff])"
.venv/bin/ruff check .

echo "== layers: imports run down the folders (pyproject.toml's [tool.importlinter])"
.venv/bin/lint-imports --no-cache

echo "== mypy (pyproject.toml's [tool.mypy]; the compiled core's stub comes from the build)"
.venv/bin/python scripts/typecheck.py

echo "== Python tests"
export CCGYM_BIN_DIR="$PWD/build/tests"
.venv/bin/python -m pytest -q "$@"
