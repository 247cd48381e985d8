#!/usr/bin/env bash
# Makes the virtual environment of bench/run.py's newer peers from PyPI:
# torch + torchvision (torch.compile; PyPI's Linux wheel pulls its CUDA
# libraries too, about 5 GB, unused on CPU), JAX on CPU, and ONNX Runtime
# Training (CPU build; it reads IR <= 10, hence onnx < 1.18). A group that
# fails to install is reported and skipped; bench/run.py then skips its peer.
# Usage: bench/setup_peers.sh [VENV]   (default bench/.venv)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/bench/.venv}"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv" || exit 1
"$venv/bin/pip" install --quiet --upgrade pip
status=0
for group in "torch torchvision onnx<1.18" "jax[cpu]" "onnxruntime-training-cpu onnx<1.18"; do
  # shellcheck disable=SC2086  # each group is a list of requirements
  if "$venv/bin/pip" install --quiet $group; then
    echo "installed: $group"
  else
    echo "could not install: $group"
    status=1
  fi
done
exit $status
