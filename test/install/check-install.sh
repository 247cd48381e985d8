#!/usr/bin/env bash
# Installs the build into a fresh prefix and uses the installed tools.
# Usage: check-install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; source="$2"
prefix="$build/test-install-prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
test -x "$prefix/bin/trainc"
test -x "$prefix/bin/trainc-opt"
test -f "$prefix/include/trainc/Import.h"
"$prefix/bin/trainc" --version
"$prefix/bin/trainc" import "$source/models/mlp.onnx" | "$prefix/bin/trainc-opt" > /dev/null
echo "installed tools work from $prefix"
