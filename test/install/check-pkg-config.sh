#!/usr/bin/env bash
# The non-CMake path: pkg-config finds trainc in PREFIX, the installed
# trainc compiles a model (finding its runtime archive in the prefix), and
# a C program (test/e2e/train_resume.c) builds against the model's header
# and library with the flags pkg-config gives, and runs.
# Usage: check-pkg-config.sh PREFIX SOURCE_DIR WORK C_COMPILER
set -euo pipefail
prefix="$1"; source="$2"; work="$3"; cc="$4"
rm -rf "$work" && mkdir -p "$work"
pc=$(find "$prefix" -name trainc.pc -path '*/pkgconfig/*')
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
echo "trainc $(pkg-config --modversion trainc) from $pc"
cflags=$(pkg-config --cflags trainc)
trainc=$(pkg-config --variable=trainc trainc)
echo "cflags: $cflags; trainc: $trainc"
test -f "$(pkg-config --variable=runtime_library trainc)"

"$trainc" compile "$source/models/mlp.onnx" --batch 8 --optimizer adamw \
  -o "$work/libmlp.so"
# shellcheck disable=SC2086 # cflags is a list of flags
"$cc" -std=c99 -Wall -Werror $cflags -include "$work/mlp.h" \
  "$source/test/e2e/train_resume.c" -o "$work/train_resume" \
  -L "$work" -lmlp -Wl,-rpath,"$work"
readelf -d "$work/libmlp.so" | grep -q 'SONAME.*\[libmlp.so\]' ||
  { echo "libmlp.so has no soname libmlp.so"; exit 1; }
"$work/train_resume" "$work/checkpoint.bin"
