#!/usr/bin/env bash
# The main job: set up, train the embedded default policy (configs/train/quick.toml,
# a few minutes on 2 cores, no trace files needed), then evaluate it beside the
# classic schemes. Extra arguments go to `ccgym train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
source .venv/bin/activate

if ccgym --help | grep -q " train "; then
  ccgym train "$@"   # prints the leaderboard of the trained policy at the end
else
  ccgym eval --links indigo-synthetic --schemes fixed:20,aimd,vegas,cubic,bbr,copa --duration-s 10
fi
