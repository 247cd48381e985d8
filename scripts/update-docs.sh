#!/usr/bin/env bash
# Regenerates the documentation that comes from the .td files (the
# docs-up-to-date test fails until this has been run after a .td change).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" trainc-graph-doc trainc-graph-pass-doc trainc-kernel-doc \
  trainc-kernel-pass-doc trainc-loop-doc trainc-loop-pass-doc trainc-conversion-pass-doc
mkdir -p "$root/docs/dialects" "$root/docs/passes"
cp "$build/dialects/graph/graph.md" "$root/docs/dialects/graph.md"
cp "$build/dialects/graph/Transforms/passes.md" "$root/docs/passes/graph.md"
cp "$build/dialects/kernel/kernel.md" "$root/docs/dialects/kernel.md"
cp "$build/dialects/kernel/Transforms/passes.md" "$root/docs/passes/kernel.md"
cp "$build/dialects/loop/loop.md" "$root/docs/dialects/loop.md"
cp "$build/dialects/loop/Transforms/passes.md" "$root/docs/passes/loop.md"
cp "$build/lib/Conversion/passes.md" "$root/docs/passes/conversion.md"
echo "updated docs/dialects/*.md and docs/passes/*.md"
