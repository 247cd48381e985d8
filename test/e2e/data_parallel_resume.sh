#!/usr/bin/env bash
# Data-parallel training that loses a process: `mpirun -np 2 trainc train
# --checkpoint` with one rank killed (SIGKILL) after the first checkpoint:
# the job ends with a non-zero status and Open MPI's message; the run
# started again with --resume finishes with a model byte-identical to an
# uninterrupted job's; a checkpoint of a 2-process job is refused by one
# process, naming both sizes.
# Usage: data_parallel_resume.sh TRAINC SOURCE_DIR WORK_DIR
set -euo pipefail
trainc="$1"; source="$2"; work="$3"
rm -rf "$work" && mkdir -p "$work/data"
# A small IDX data set (8192 training and 256 test images of noise with
# random labels).
/usr/bin/python3 "$source/test/lit/driver/Inputs/make_idx.py" "$work/data" 8192 256 3
"$trainc" compile "$source/models/mlp.onnx" --batch 16 --optimizer adam \
  --lr 0.001 --data-parallel --bucket-mib 0.25 -o "$work/libmlp.so"
mpirun=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
epochs=8
run() {
  "${mpirun[@]}" "$trainc" train "$work/libmlp.so" --data "$work/data" \
    --epochs "$epochs" --seed 9 --threads 1 "$@"
}

run --save "$work/straight.onnx" > "$work/straight.log" 2>&1

# Killed: rank 1 dies once the first checkpoint is there.
run --checkpoint "$work/run.ckpt" --save "$work/run.onnx" \
  > "$work/killed.log" 2>&1 &
job=$!
for ((i = 0; i < 3000; ++i)); do
  [ -e "$work/run.ckpt" ] && break
  sleep 0.01
done
# (No `head`: with pipefail, a SIGPIPE in this pipeline, or pgrep finding
# nothing, would end the script without a word under set -e.)
victim=$({ pgrep -f "$work/libmlp.so" || true; } | while read -r pid; do
  if tr '\0' '\n' < "/proc/$pid/environ" 2> /dev/null |
       grep -qx 'OMPI_COMM_WORLD_RANK=1'; then echo "$pid"; break; fi
done)
if [ -z "$victim" ]; then
  echo "FAILED: no rank 1 to kill (did the job finish first?)"
  exit 1
fi
echo "killing rank 1 (pid $victim) after $(grep -c '^epoch [0-9]*:' "$work/killed.log" || true) epochs"
kill -9 "$victim" || echo "rank 1 (pid $victim) had already exited"
if wait "$job"; then
  echo "FAILED: the job exited 0 after losing a process"
  exit 1
fi
if [ -e "$work/run.onnx" ]; then
  echo "FAILED: the killed job wrote its model"
  exit 1
fi
grep -q "exited on signal 9" "$work/killed.log" || {
  cat "$work/killed.log"
  echo "FAILED: mpirun did not say which process died"
  exit 1
}

# Another job size: refused, naming both.
if "$trainc" train "$work/libmlp.so" --data "$work/data" --epochs "$epochs" \
     --seed 9 --threads 1 --resume "$work/run.ckpt" 2> "$work/size.log"; then
  echo "FAILED: one process resumed a 2-process checkpoint"
  exit 1
fi
grep -q "written by a job of 2 processes, this one has 1" "$work/size.log" || {
  cat "$work/size.log"
  echo "FAILED: no message naming the job sizes"
  exit 1
}

# Resumed: the same model as the uninterrupted job.
run --resume "$work/run.ckpt" --checkpoint "$work/run.ckpt" \
  --save "$work/run.onnx" > "$work/resumed.log" 2>&1
cmp "$work/straight.onnx" "$work/run.onnx"
echo "rank 1 killed after epoch $(grep -c '^epoch [0-9]*:' "$work/killed.log" || true); the job ended (mpirun: exited on signal 9); one process refused the checkpoint; the resumed job equals the uninterrupted one byte for byte"
