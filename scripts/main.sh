#!/usr/bin/env bash
# The main job: set up, train the embedded default policy (configs/train/quick.toml:
# DAgger on a grid of constant links, about a minute or two on 2 cores, no trace
# files needed), then print its leaderboard beside the classic schemes and the
# oracle on held-out links. Extra arguments go to `ccgym train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/ccgym train "$@"
