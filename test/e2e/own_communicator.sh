#!/usr/bin/env bash
# Builds test/e2e/own_communicator.c (a program that initializes MPI
# itself) against a --data-parallel model library and runs each of its
# modes as a 2-process job (world also with TRAINC_MPI_SHARED_MEMORY=0);
# checks that only such libraries need libmpi.
# Usage: own_communicator.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"; source="$2"
work="$build/e2e/own-communicator"
rm -rf "$work" && mkdir -p "$work/plain"
"$build/bin/trainc" compile "$source/models/mlp.onnx" --batch 8 \
  --data-parallel -o "$work/libmlp.so"
# Only --data-parallel libraries depend on MPI.
"$build/bin/trainc" compile "$source/models/mlp.onnx" --batch 8 \
  -o "$work/plain/libmlp.so"
readelf -d "$work/libmlp.so" | grep -q 'NEEDED.*libmpi' || {
  echo "FAILED: the --data-parallel library does not link libmpi"; exit 1; }
if readelf -d "$work/plain/libmlp.so" | grep -q 'NEEDED.*libmpi'; then
  echo "FAILED: a library without --data-parallel links libmpi"; exit 1
fi
mpicc -std=c99 -Wall -Werror -I "$source/include" \
  "$source/test/e2e/own_communicator.c" -o "$work/own_communicator" \
  -L "$work" -lmlp -Wl,-rpath,"$work"
mpirun=(mpirun -np 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
for mode in split world funneled; do
  "${mpirun[@]}" "$work/own_communicator" "$mode"
done
# The same job on MPI_Allreduce instead of shared arenas.
TRAINC_MPI_SHARED_MEMORY=0 "${mpirun[@]}" -x TRAINC_MPI_SHARED_MEMORY \
  "$work/own_communicator" world
