#!/usr/bin/env bash
# Builds test/e2e/weight_copies.c against the MLP compiled with --amp fp16
# (persistent f16 weight copies on every CPU) and runs it.
# Usage: weight_copies.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; source="$2"
work="$build/e2e/weight-copies"
rm -rf "$work" && mkdir -p "$work"
"$build/bin/trainc" compile "$source/models/mlp.onnx" --batch 8 --amp fp16 \
  --optimizer sgd --momentum 0.9 --lr 0.05 -o "$work/libmlp.so" 2>/dev/null
cc -std=c99 -Wall -Werror -I "$source/include" \
  "$source/test/e2e/weight_copies.c" -o "$work/weight_copies" \
  -L "$work" -lmlp -Wl,-rpath,"$work"
"$work/weight_copies" "$work"
