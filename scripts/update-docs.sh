#!/usr/bin/env bash
# Regenerates the documentation that comes from the .td files (the
# docs-up-to-date test fails until this has been run after a .td change).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" trainc-graph-doc trainc-graph-pass-doc
mkdir -p "$root/docs/dialects" "$root/docs/passes"
cp "$build/dialects/graph/graph.md" "$root/docs/dialects/graph.md"
cp "$build/dialects/graph/Transforms/passes.md" "$root/docs/passes/graph.md"
echo "updated docs/dialects/graph.md and docs/passes/graph.md"
