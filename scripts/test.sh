#!/usr/bin/env bash
# Sets up, builds and runs every test (ctest: lit, unit, model import,
# PyTorch reference data). This is the command CI runs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
cd "$build"
# A test that hangs fails alone after 10 minutes (tests that need longer
# set their own TIMEOUT), instead of running into CI's limit.
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"
# The fuzz targets (a second build, with clang, ASan and UBSan): every
# regression and seed input, then a short fixed-seed run of each.
"$root/scripts/fuzz.sh"
