#!/usr/bin/env bash
# Builds test/e2e/train_resume.c against a generated model library and its
# header, the way a user's C program would, and runs it.
# Usage: c_api.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; source="$2"
work="$build/e2e/c-api"
rm -rf "$work" && mkdir -p "$work"
"$build/bin/trainc" compile "$source/models/mlp.onnx" --batch 8 \
  --optimizer adamw --lr 0.001 -o "$work/libmlp.so"
test -f "$work/mlp.h" && test -f "$work/mlp.json"
# Only the C API is exported (so two models can share a process).
exported=$(nm -D --defined-only "$work/libmlp.so" | awk '$2 != "A" {print $3}' | grep -v '^trainc_' || true)
if [ -n "$exported" ]; then echo "unexpected exports: $exported"; exit 1; fi
cc -std=c99 -Wall -Werror -I "$source/include" -include "$work/mlp.h" \
  "$source/test/e2e/train_resume.c" -o "$work/train_resume" \
  -L "$work" -lmlp -Wl,-rpath,"$work"
"$work/train_resume" "$work/checkpoint.bin"
# Misuse: closed sessions, bad options; then a session whose arena cannot
# be allocated (the MLP at batch 2^20: 3.3 GB of input alone, under a
# 2 GB address-space limit) gives TRAINC_ERROR_OUT_OF_MEMORY.
cc -std=c99 -Wall -Werror -I "$source/include" "$source/test/e2e/c_api_misuse.c" \
  -o "$work/c_api_misuse" -L "$work" -lmlp -Wl,-rpath,"$work"
(cd "$work" && ./c_api_misuse misuse)
test ! -e "$work/never.ckpt"
mkdir -p "$work/big"
"$build/bin/trainc" compile "$source/models/mlp.onnx" --batch 1048576 \
  -o "$work/big/libmlpbig.so"
cc -std=c99 -Wall -Werror -I "$source/include" "$source/test/e2e/c_api_misuse.c" \
  -o "$work/c_api_oom" -L "$work/big" -lmlpbig -Wl,-rpath,"$work/big"
if [ -n "${TRAINC_ASAN_PRELOAD:-}" ]; then
  # A sanitized build (scripts/sanitize.sh): ASan's shadow memory needs more
  # address space than any such limit; its allocator, loaded first so that
  # it serves the runtime's allocations, refuses instead.
  LD_PRELOAD="$TRAINC_ASAN_PRELOAD" \
    ASAN_OPTIONS="${ASAN_OPTIONS:-}:allocator_may_return_null=1:max_allocation_size_mb=2000" \
    "$work/c_api_oom" oom
else
  (ulimit -v 2000000 && "$work/c_api_oom" oom)
fi
# The export is an ONNX inference model with the trained weights of the
# resumed session (the same as the straight run's, which are bit-identical).
/usr/bin/python3 - "$work/checkpoint.bin.onnx" <<'PY'
import sys
import onnx
model = onnx.load(sys.argv[1])
onnx.checker.check_model(model)
names = sorted(i.name for i in model.graph.initializer)
assert len(names) == len(set(names)), names
assert len(names) == 6, names  # 3 Gemm weights + 3 biases
print("exported model passes the ONNX checker:", ", ".join(names))
PY
