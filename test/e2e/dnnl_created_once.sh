#!/usr/bin/env bash
# oneDNN primitives are created when a session opens, never during a step:
# with ONEDNN_VERBOSE=2 (which logs every primitive creation and execution),
# every `create` line comes before the first `exec` line, and 3 steps create
# as many primitives as 1 step.
# Usage: dnnl_created_once.sh TRAINC SOURCE_DIR WORK_DIR REFERENCE_DIR
set -euo pipefail
trainc="$1"; source="$2"; work="$3"; reference="$4"
rm -rf "$work" && mkdir -p "$work"
cnn="$reference/cnn.ref/fp32"
"$trainc" compile "$source/models/cnn.onnx" --batch 64 -o "$work/libcnn.so"
for steps in 1 3; do
  ONEDNN_VERBOSE=2 "$trainc" train "$work/libcnn.so" --steps "$steps" \
    --feed "image=$cnn/inputs/image.npy" --labels "$cnn/labels.npy" \
    > "$work/steps-$steps.log" 2>&1
done
creates() { grep -c '^onednn_verbose,create' "$1"; }
one=$(creates "$work/steps-1.log"); three=$(creates "$work/steps-3.log")
first_exec=$(grep -n -m1 '^onednn_verbose,exec' "$work/steps-3.log" | cut -d: -f1)
last_create=$(grep -n '^onednn_verbose,create' "$work/steps-3.log" | tail -1 | cut -d: -f1)
echo "primitives created: $one for 1 step, $three for 3 steps;" \
     "last creation at log line $last_create, first execution at $first_exec"
test "$one" -gt 0 && test "$one" -eq "$three" && test "$last_create" -lt "$first_exec"
