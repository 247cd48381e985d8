#!/usr/bin/env bash
# Sets up, builds and runs trainc's main job on a shipped model. For now
# that job is the import: the LeNet-style CNN's graph-dialect IR is printed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" trainc
"$build/bin/trainc" import "$root/models/cnn.onnx" --batch 64 -v
