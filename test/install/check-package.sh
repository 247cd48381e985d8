#!/usr/bin/env bash
# Builds docs/examples/train-mlp against an installed trainc (PREFIX only),
# runs it (it fails unless the loss falls), then checks the dependencies of
# the model library: touching the ONNX file or the trainc executable
# recompiles the model and none of the consumer's own sources.
# Usage: check-package.sh PREFIX SOURCE_DIR BUILD_DIR WORK GENERATOR
#                         MAKE_PROGRAM CXX_COMPILER
set -euo pipefail
prefix="$1"; source="$2"; trainc_build="$3"; work="$4"; generator="$5"
make_program="$6"; cxx="$7"
case "$generator" in
  Ninja) ;;
  *) echo "skipped: the rebuild checks read Ninja's output ($generator)"; exit 77 ;;
esac
rm -rf "$work" && mkdir -p "$work"
build="$work/build"
# A copy of the model, to touch without touching the source tree.
cp "$source/models/mlp.onnx" "$work/mlp.onnx"

cmake -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DTRAIN_MLP_MODEL="$work/mlp.onnx" \
  -S "$source/docs/examples/train-mlp" -B "$build"
found=$(sed -n 's/^trainc_DIR:PATH=//p' "$build/CMakeCache.txt")
echo "trainc_DIR=$found"
case "$found" in
  "$prefix"/*) ;;
  *) echo "found the trainc package outside $prefix"; exit 1 ;;
esac
# Nothing of trainc's source or build tree leaks into the consumer's build.
if grep -n -e "$source/include" -e "$trainc_build/bin/" -e "$trainc_build/lib/" \
     "$build/build.ninja"; then
  echo "the consumer's build uses trainc's source or build tree"; exit 1
fi

cmake --build "$build" | tee "$work/build.log"
"$build/train_mlp"
test -f "$build/trainc/mlp/mlp.json"
readelf -d "$build/train_mlp" | grep -q 'NEEDED.*\[libmlp.so\]' ||
  { echo "train_mlp does not need libmlp.so by its soname"; exit 1; }

rebuild() { # WHAT: rebuilds and checks that only the model was compiled
  cmake --build "$build" > "$work/rebuild.log"
  echo "--- after touching $1:"; cat "$work/rebuild.log"
  grep -q "Compiling model mlp" "$work/rebuild.log" ||
    { echo "touching $1 did not recompile the model"; exit 1; }
  if grep -q "Building CXX object" "$work/rebuild.log"; then
    echo "touching $1 recompiled the consumer's sources"; exit 1
  fi
}
cmake --build "$build" | grep -q "no work to do" ||
  { echo "a second build was not up to date"; exit 1; }
sleep 1 # a coarse file system clock must see the touch as newer
touch "$work/mlp.onnx"
rebuild "the ONNX model"
touch "$prefix/bin/trainc"
rebuild "trainc (an upgrade)"
cmake --build "$build" | grep -q "no work to do" ||
  { echo "the build after the rebuild was not up to date"; exit 1; }
"$build/train_mlp" > /dev/null
echo "the package builds, trains and rebuilds only the model"
