#!/usr/bin/env bash
# Long runs of the random-graph differential tester (test/difftest):
#   scripts/difftest.sh FIRST:END [OUT]
# builds trainc, then checks seeds FIRST..END-1 on every core, with the
# default and the *=generated dispatch; reduced findings go to OUT
# (default build/difftest-FIRST-END). Exits 1 if any seed fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"
seeds="${1:?usage: scripts/difftest.sh FIRST:END [OUT]}"
out="${2:-$build/difftest-${seeds/:/-}}"

"$root/scripts/build.sh" trainc
exec /usr/bin/python3 "$root/test/difftest/difftest.py" \
  --trainc "$build/bin/trainc" --seeds "$seeds" --out "$out" --jobs "$(nproc)"
