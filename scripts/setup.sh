#!/usr/bin/env bash
# Sets up everything on a fresh Debian machine: system packages, a virtualenv in
# .venv with the Python dependencies, and ccgym itself (editable, C++ core built).
# Idempotent and quick when nothing changed.
#
# The Python packages are the exact versions of requirements.lock, the set the tests last
# passed with (pyproject.toml keeps ranges, for ccgym installed as a library).
# CCGYM_UNLOCKED=1 installs the newest versions within those ranges instead;
# scripts/lock.sh --upgrade does that and writes the lock anew.
set -euo pipefail
cd "$(dirname "$0")/.."

SYSTEM_PACKAGES=(g++ cmake ninja-build libgtest-dev python3-venv chromium clang)
missing=()
for p in "${SYSTEM_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
VPY=.venv/bin/python

# Reinstall only when the build inputs changed (pyproject, the lock, CMake, C++ sources).
LOCK=requirements.lock
CONSTRAINTS=(-c "$LOCK")
if [ "${CCGYM_UNLOCKED:-}" = 1 ]; then
  CONSTRAINTS=()
elif [ ! -f "$LOCK" ]; then
  echo "setup: error: no $LOCK (scripts/lock.sh writes it; CCGYM_UNLOCKED=1 sets up without)" >&2
  exit 2
fi
stamp=$( (echo "unlocked=${CCGYM_UNLOCKED:-}"; cat pyproject.toml "$LOCK" CMakeLists.txt $(git ls-files -co --exclude-standard -- '*.cc' '*.hh' '*CMakeLists.txt' 2>/dev/null | sort) 2>/dev/null || true) | sha1sum | cut -d' ' -f1)
if [ ! -f .venv/.setup-stamp ] || [ "$(cat .venv/.setup-stamp)" != "$stamp" ]; then
  echo "setup: installing Python dependencies and building ccgym (first time: a few minutes)"
  $VPY -m pip install -q ${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"} --upgrade pip
  $VPY -m pip install -q ${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"} "scikit-build-core>=0.10" "nanobind>=2.0"
  $VPY -m pip install -q ${CONSTRAINTS[@]+"${CONSTRAINTS[@]}"} --no-build-isolation -e ".[test]"
  echo "$stamp" > .venv/.setup-stamp
fi
