#!/usr/bin/env bash
# `trainc train` determinism, at the level a user sees it:
#  1. 2 epochs straight == 1 epoch, checkpoint, --resume, 1 more epoch
#     (the checkpoints, which hold every parameter, optimizer state, the
#     step and the data order, are byte-identical);
#  2. the same run twice on the same thread count gives byte-identical
#     results (the contract: same .so, thread count, seed and CPU);
#  3. with the reference and OpenBLAS kernels, 1 and 2 threads give
#     byte-identical results too (oneDNN's kernels may split reductions by
#     thread count, see docs/RUNTIME.md).
# Usage: resume_and_threads.sh TRAINC SOURCE_DIR WORK_DIR REFERENCE_DIR
set -euo pipefail
trainc="$1"; source="$2"; work="$3"; reference="$4"
rm -rf "$work" && mkdir -p "$work"
"$trainc" compile "$source/models/mlp.onnx" --batch 64 --optimizer adam --lr 0.001 \
  -o "$work/libmlp.so"
run() { "$trainc" train "$work/libmlp.so" --data fashion-mnist --seed 3 "$@"; }

run --epochs 2 --threads 2 --checkpoint "$work/straight.ckpt" > "$work/straight.log"
run --epochs 1 --threads 2 --checkpoint "$work/first.ckpt" > /dev/null
run --epochs 2 --threads 2 --resume "$work/first.ckpt" --checkpoint "$work/resumed.ckpt" \
  > "$work/resumed.log"
cmp "$work/straight.ckpt" "$work/resumed.ckpt"
# The resumed run reports epoch 2 exactly as the straight one did.
grep "^epoch 2:" "$work/straight.log" > "$work/a"
grep "^epoch 2:" "$work/resumed.log" > "$work/b"
cmp "$work/a" "$work/b"
echo "resume: 2 epochs straight == 1 + checkpoint + resume + 1 (checkpoints identical): $(cat "$work/a")"

# The CNN on its reference batch: 5 steps, the trained weights saved.
cnn="$reference/cnn.ref/fp32"
index=0
steps() { # THREADS DISPATCH...: prints the trained model's path
  local threads="$1"; shift
  index=$((index + 1))
  "$trainc" train "$source/models/cnn.onnx" --feed "image=$cnn/inputs/image.npy" \
    --labels "$cnn/labels.npy" --steps 5 --threads "$threads" "$@" \
    --save "$work/cnn-$index.onnx" > /dev/null
  echo "$work/cnn-$index.onnx"
}
first=$(steps 2) && second=$(steps 2)
cmp "$first" "$second"
echo "threads: the CNN (default dispatch, oneDNN) twice on 2 threads: identical"
invariant=(--dispatch conv=openblas --dispatch conv_backward_input=openblas
           --dispatch conv_backward_weight=openblas --dispatch gemm=openblas
           --dispatch max_pool=reference --dispatch max_pool_backward=reference)
one=$(steps 1 "${invariant[@]}") && two=$(steps 2 "${invariant[@]}")
cmp "$one" "$two"
echo "threads: the CNN with OpenBLAS and reference kernels on 1 and 2 threads: identical"
