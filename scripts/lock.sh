#!/usr/bin/env bash
# Writes requirements.lock: the exact version of every Python package in .venv (ccgym itself
# left out), which scripts/setup.sh installs as constraints, so that every setup and CI runs
# the versions the tests passed with.
#
#   scripts/lock.sh             the lock of .venv as it is
#   scripts/lock.sh --upgrade   first the newest versions within pyproject.toml's ranges
#                               (CCGYM_UNLOCKED=1 scripts/setup.sh, upgrading), then the lock
#
# After --upgrade, run the tests (scripts/test.sh) before committing the new lock.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") ;;
  --upgrade)
    scripts/setup.sh
    .venv/bin/python -m pip install -q --upgrade pip "scikit-build-core>=0.10" "nanobind>=2.0"
    .venv/bin/python -m pip install -q --upgrade --upgrade-strategy eager --no-build-isolation \
      -e ".[test]"
    ;;
  *) echo "lock.sh: error: unknown argument $1 (give nothing or --upgrade)" >&2; exit 2 ;;
esac
[ -x .venv/bin/python ] || { echo "lock.sh: error: no .venv: run scripts/setup.sh" >&2; exit 2; }
frozen=$(.venv/bin/python -m pip freeze --all --exclude-editable | grep -viE '^ccgym[ =@]' | sort -f)
{
  echo "# The exact versions scripts/setup.sh installs (pip constraints), the set the tests passed"
  echo "# with on $(.venv/bin/python -c 'import platform; print(platform.python_version(), platform.machine())')."
  echo "# Written by scripts/lock.sh; refresh with scripts/lock.sh --upgrade, then run the tests."
  echo "$frozen"
} > requirements.lock.new
mv requirements.lock.new requirements.lock
echo "wrote requirements.lock: $(echo "$frozen" | wc -l) packages"
