#!/usr/bin/env bash
# Configures (and with STAGE=build, builds) test/install/bad-argument with
# trainc_add_model(ARGUMENTS...) against PREFIX; expects that stage to fail
# with a message matching MESSAGE (an extended regular expression).
# Usage: check-bad-argument.sh PREFIX PROJECT WORK GENERATOR MAKE_PROGRAM
#                              configure|build MESSAGE ARGUMENTS...
set -euo pipefail
prefix="$1"; project="$2"; work="$3"; generator="$4"; make_program="$5"
stage="$6"; message="$7"; shift 7
arguments=$(IFS=';'; echo "$*")
rm -rf "$work" && mkdir -p "$work"
log="$work/log"

configure() {
  cmake -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
    -DTRAINC_ADD_MODEL_ARGUMENTS="$arguments" -S "$project" -B "$work/build"
}
if [ "$stage" = configure ]; then
  if configure > "$log" 2>&1; then
    cat "$log"; echo "configure succeeded, expected: $message"; exit 1
  fi
else
  configure > "$log" 2>&1 || { cat "$log"; echo "configure failed"; exit 1; }
  if cmake --build "$work/build" > "$log" 2>&1; then
    cat "$log"; echo "build succeeded, expected: $message"; exit 1
  fi
fi
# CMake wraps long messages: compare on one line.
if ! tr -s ' \n' ' ' < "$log" | grep -Eq -- "$message"; then
  cat "$log"; echo "the $stage error does not say: $message"; exit 1
fi
grep -iE -A2 "error" "$log" | head -6
echo "$stage failed as expected: $message"
