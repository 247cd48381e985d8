#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest: lit, unit, model import,
# PyTorch reference data). This is the command CI runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
