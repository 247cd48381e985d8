#!/usr/bin/env bash
# Installs every Debian package trainc needs to build, test and benchmark.
# Idempotent: asks apt only for what is missing, so a warm machine returns at once.
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ pkg-config
  # LLVM/MLIR 22 (all four: MLIRConfig.cmake needs mlir-tblgen and LLVM 22 exactly)
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  # ONNX + protobuf
  libonnx-dev libprotobuf-dev protobuf-compiler
  # ONNX backend node tests (the interpreter's oracle tests)
  libonnx-testdata
  # CLI, logging, JSON, tests
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev catch2 zlib1g-dev
  # data-parallel training (--data-parallel): Open MPI and its mpirun
  libopenmpi-dev openmpi-bin
  # CPU kernel libraries
  libdnnl-dev libopenblas-dev
  # the integer-program solver of --trainc-remat solver=ilp|best
  coinor-libcbc-dev
  # fuzzing and sanitizers (scripts/fuzz.sh: clang with libFuzzer)
  clang-22 libclang-rt-22-dev libfuzzer-22-dev
  # data and reference (tests and benchmarks only; for /usr/bin/python3)
  dataset-fashion-mnist python3-torch python3-torchvision python3-onnx python3-numpy
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
