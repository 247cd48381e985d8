#!/usr/bin/env bash
# Sets up, builds and runs trainc's main job on a shipped model: compile the
# MLP in models/ into a training library and train it on Fashion-MNIST
# (Debian's dataset-fashion-mnist), printing the test accuracy per epoch.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" trainc trainc_rt
"$build/bin/trainc" train "$root/models/mlp.onnx" --data fashion-mnist \
  --epochs 2 --batch-size 64 --optimizer adam --lr 0.001 --seed 1
