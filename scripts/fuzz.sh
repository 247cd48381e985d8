#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-22, ASan + UBSan, everything
# instrumented for coverage) in build-fuzz and runs them.
#   scripts/fuzz.sh                 ctest's fuzz tests: every seed and
#                                   regression input, then 20 s per target
#   scripts/fuzz.sh SECONDS [TARGET...]
#                                   fuzz each target (default: all) for
#                                   SECONDS, corpus kept in build-fuzz/
#                                   corpus/TARGET; prints executions and
#                                   what it found
# A crash leaves its input in build-fuzz/corpus/TARGET (crash-*): fix it,
# then commit the input to test/fuzz/regressions/TARGET.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_FUZZ_BUILD_DIR:-$root/build-fuzz}"
"$root/scripts/deps.sh"
targets=(onnx_import tensor_file idx checkpoint)
if [ ! -f "$build/build.ninja" ]; then
  # clang with GNU's OpenMP (the runtime's; LLVM's libomp is not needed).
  gomp="$(gcc -print-file-name=libgomp.so)"
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DTRAINC_FUZZ=ON \
    -DOpenMP_C_FLAGS=-fopenmp=libgomp -DOpenMP_CXX_FLAGS=-fopenmp=libgomp \
    -DOpenMP_C_LIB_NAMES=gomp -DOpenMP_CXX_LIB_NAMES=gomp \
    -DOpenMP_gomp_LIBRARY="$gomp"
fi
ninja -C "$build" fuzz-seeds "${targets[@]/#/fuzz-}"
if [ $# -eq 0 ]; then
  cd "$build" && ctest -L fuzz --output-on-failure
  exit
fi
seconds="$1"; shift
[ $# -gt 0 ] && targets=("$@")
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  echo "== fuzz-$target, $seconds s"
  # libFuzzer stops at once on a corpus directory that does not exist: a
  # target without regression inputs has none.
  inputs=("$corpus" "$build/test/fuzz/seeds/$target")
  [ -d "$root/test/fuzz/regressions/$target" ] &&
    inputs+=("$root/test/fuzz/regressions/$target")
  (cd "$corpus" && "$build/bin/fuzz-$target" -max_total_time="$seconds" \
     -rss_limit_mb=4096 -timeout=30 -max_len=100000 -print_final_stats=1 \
     "${inputs[@]}" 2>&1 |
     grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|SUMMARY|ERROR:|Test unit written' ) || true
done
