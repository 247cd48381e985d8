#!/usr/bin/env bash
# Builds trainc with AddressSanitizer and UndefinedBehaviorSanitizer in
# build-asan (every target, the runtime archive linked into model
# libraries included) and runs the test suite there (arguments go to
# ctest, e.g. -R unit). The tests' Python (TRAINC_PYTHON) is a wrapper
# that preloads the ASan runtime, since Python-driven tests load model
# libraries into /usr/bin/python3; lit and ctest themselves run without it
# (lit's worker processes spin under a preloaded ASan). Model libraries
# link the sanitizer runtimes (TRAINC_RUNTIME_SANITIZE). Leaks are not
# reported (Python's own allocations would drown them).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${TRAINC_ASAN_BUILD_DIR:-$root/build-asan}"
"$root/scripts/deps.sh"
mkdir -p "$build"
python="$build/python-asan"
# The preload is for Python alone: its sitecustomize drops LD_PRELOAD, so
# that the programs it starts (free, c++, trainc) do not inherit it (an
# uninstrumented `free -h` under a preloaded ASan hung bench-smoke).
mkdir -p "$build/python-asan-site"
printf 'import os\nos.environ.pop("LD_PRELOAD", None)\n' \
  > "$build/python-asan-site/sitecustomize.py"
cat > "$python" <<WRAPPER
#!/bin/sh
# /usr/bin/python3 with the ASan and UBSan runtimes preloaded (scripts/sanitize.sh).
PYTHONPATH="$build/python-asan-site\${PYTHONPATH:+:\$PYTHONPATH}" \\
LD_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)" exec /usr/bin/python3 "\$@"
WRAPPER
chmod +x "$python"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
  -DTRAINC_SANITIZE=address,undefined -DTRAINC_PYTHON="$python" > /dev/null
ninja -C "$build"
cd "$build"
# allow_user_poisoning=0: LLVM's allocators poison their slabs in the
# sanitized inline code of our objects but not in Debian's libLLVM, whose
# allocations would then read as use-after-poison.
# verify_asan_link_order=0: the tests' C and C++ programs that link a
# model library get the ASan runtime through it, not first.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allow_user_poisoning=0:verify_asan_link_order=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# For tests that must load the runtimes first (test/e2e/c_api.sh).
export TRAINC_ASAN_PRELOAD="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
ctest --output-on-failure -j "$(nproc)" --timeout 1800 "$@"
