#!/usr/bin/env bash
# `trainc train --checkpoint` killed with SIGKILL at random moments, many
# times, each time started again with --resume from whatever checkpoint is
# there: every restart resumes, the run that finishes leaves no temporary
# files behind (PATH.tmp.PID of the killed writers are removed by the next
# write of PATH), and its model is byte-identical to an uninterrupted
# run's.
# Usage: kill_resume.sh TRAINC SOURCE_DIR WORK_DIR [KILLS]
set -euo pipefail
trainc="$1"; source="$2"; work="$3"; kills="${4:-25}"
rm -rf "$work" && mkdir -p "$work/data"
# A small IDX data set (1024 training and 128 test images of noise with
# random labels), so that an epoch takes milliseconds.
/usr/bin/python3 "$source/test/lit/driver/Inputs/make_idx.py" "$work/data" 1024 128 7
"$trainc" compile "$source/models/mlp.onnx" --batch 32 --optimizer adam \
  --lr 0.001 -o "$work/libmlp.so"
epochs=40
# An array, not a shell function: `function &` would run trainc as the child
# of a subshell, and `kill -9 $!` would kill the subshell and leave trainc
# running on (and writing the checkpoint beside the next run).
run=("$trainc" train "$work/libmlp.so" --data "$work/data" --epochs "$epochs"
  --seed 5 --threads 1)
start=$(date +%s%N)
"${run[@]}" --save "$work/straight.onnx" > /dev/null
# Kills land anywhere in a run: up to its whole length.
span_ms=$((($(date +%s%N) - start) / 1000000 + 1))

RANDOM=11
killed=0
resumed=0
for ((i = 0; i < kills; ++i)); do
  resume=()
  if [ -e "$work/run.ckpt" ]; then
    resume=(--resume "$work/run.ckpt")
    resumed=$((resumed + 1))
  fi
  "${run[@]}" "${resume[@]}" --checkpoint "$work/run.ckpt" \
    --save "$work/run.onnx" > /dev/null 2>&1 &
  pid=$!
  delay=$((RANDOM * span_ms / 32768))
  sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
  if kill -9 "$pid" 2> /dev/null; then killed=$((killed + 1)); fi
  wait "$pid" 2> /dev/null || true
  # A finished run is started again from the beginning (its checkpoint
  # holds the last epoch): kills keep landing during the run.
  if [ -e "$work/run.onnx" ]; then rm -f "$work/run.onnx" "$work/run.ckpt"; fi
done
strays_before=$(ls "$work" | grep -c '\.tmp\.' || true)
resume=()
if [ -e "$work/run.ckpt" ]; then resume=(--resume "$work/run.ckpt"); fi
"${run[@]}" "${resume[@]}" --checkpoint "$work/run.ckpt" \
  --save "$work/run.onnx" > /dev/null
strays=$(ls "$work" | grep '\.tmp\.' || true)
if [ -n "$strays" ]; then
  echo "temporary files left behind: $strays"
  exit 1
fi
cmp "$work/straight.onnx" "$work/run.onnx"
if [ "$resumed" -eq 0 ]; then
  echo "no run got as far as a checkpoint: nothing was resumed"
  exit 1
fi
echo "a run takes $span_ms ms; killed $killed of $kills runs, $resumed started from a checkpoint ($strays_before temporary files left by the killed ones, removed); the run that finished equals the uninterrupted one byte for byte"
