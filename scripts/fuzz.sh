#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang (ASan + UBSan) and runs each for
# SECONDS (default 10), starting from its corpus in tests/fuzz/corpus/NAME; the inputs it finds
# go to a temporary folder, not the repository. Prints one line per harness:
#   fuzz: NAME: RUNS runs in SECONDS s, 0 crashes
# and exits 1 on a crash (the input is kept as build/fuzz/crash-NAME-*).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCCGYM_FUZZ=ON -DCCGYM_PYTHON=OFF -DCCGYM_DEPLOY=OFF >/dev/null
cmake --build build/fuzz -j "$(nproc)" >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for corpus in tests/fuzz/corpus/*/; do
  name=$(basename "$corpus")
  mkdir -p "$work/$name"
  if ! "build/fuzz/$name" "$work/$name" "$corpus" -max_total_time="$seconds" \
      -print_final_stats=1 -artifact_prefix="build/fuzz/crash-$name-" 2>"$work/$name.log"; then
    tail -n 40 "$work/$name.log" >&2
    echo "fuzz: $name: crashed (input kept as build/fuzz/crash-$name-*)"
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log")
  echo "fuzz: $name: $runs runs in $seconds s, 0 crashes"
done
