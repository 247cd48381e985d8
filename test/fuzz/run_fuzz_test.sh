#!/usr/bin/env bash
# ctest's run of one fuzz target: every input of the corpora once, then
# RUNS mutations from them with a fixed seed (the same inputs on every
# machine, so a pass here is a pass in CI). A crash, leak, timeout or
# sanitizer report fails the test and leaves the input in WORK.
# Usage: run_fuzz_test.sh TARGET RUNS WORK CORPUS...
set -euo pipefail
target="$1"; runs="$2"; work="$3"; shift 3
corpora=()
for dir in "$@"; do [ -d "$dir" ] && corpora+=("$dir"); done
rm -rf "$work" && mkdir -p "$work"
cd "$work"
"$target" -runs=0 -rss_limit_mb=4096 -timeout=30 "${corpora[@]}"
"$target" -seed=1 -runs="$runs" -rss_limit_mb=4096 -timeout=30 \
  -max_len=100000 -print_final_stats=1 "$work" "${corpora[@]}"
