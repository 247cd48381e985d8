#!/usr/bin/env bash
# `trainc train` determinism, at the level a user sees it:
#  1. 2 epochs straight == 1 epoch, checkpoint, --resume, 1 more epoch
#     (the checkpoints, which hold every parameter, optimizer state, the
#     step and the data order, are byte-identical);
#  2. the same run on 1 and on 2 threads gives byte-identical checkpoints.
# Usage: resume_and_threads.sh TRAINC SOURCE_DIR WORK_DIR
set -euo pipefail
trainc="$1"; source="$2"; work="$3"
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

run --epochs 1 --threads 1 --checkpoint "$work/one-thread.ckpt" > /dev/null
cmp "$work/first.ckpt" "$work/one-thread.ckpt"
echo "threads: 1 epoch on 1 thread == on 2 threads (checkpoints identical)"
