#!/bin/bash
# The CUDA target's check on a GPU (docs/GPU.md).
#
#   scripts/gpu-check.sh build DIR   compile the bundle: every reference
#                                    model's --target cuda library (per
#                                    optimizer of the reference) and its
#                                    reference batch; needs trainc and the
#                                    CUDA toolkit, not a GPU
#   scripts/gpu-check.sh run DIR     train and time them (test/gpu/
#                                    gpu_check.py); needs an NVIDIA GPU and
#                                    python3 with torch, numpy and onnx,
#                                    not LLVM or the toolkit
#   scripts/gpu-check.sh profile DIR LIBRARY MODEL
#                                    the kernels of one library's step by
#                                    GPU time (test/gpu/gpu_profile.py)
#   scripts/gpu-check.sh [DIR]       both (default DIR: build/gpu-check)
#
# Environment: TRAINC (default build/bin/trainc), REFERENCES (the reference
# batches, default build/reference), GPU_ARCH (default sm_80,sm_90),
# CUDA_PATH (default /usr/local/cuda), MODELS (default: every reference
# model but resnet18, whose bundle alone is 90 MB; add it by name), TARGET
# (default cuda; cpu makes a bundle that checks the harness on a CPU),
# TIME_BATCHES (MODEL=BATCH ...: libraries that are only timed, at that
# batch, on export.py's inputs drawn at that size; e.g. "cnn=256"), TIMED
# (the models whose reference-batch library is timed, default "mlp cnn
# cnn_bn_opset15 transformer resnet18"), COMPARE_DISPATCH (--dispatch
# choices, e.g. "conv=generated conv_backward_input=generated": every timed
# library is also built with them and timed beside the default one, an
# A/B of two dispatch choices in the same run), AMP_MODELS (models also
# built with --amp bf16, SGD with momentum: parity by the mixed-precision
# criterion, timed against PyTorch under CUDA autocast), AMP_TIME_BATCHES
# (as TIME_BATCHES, built with --amp bf16).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mode=all
case "${1:-}" in build|run|profile) mode=$1; shift ;; esac
DIR=$(realpath -m "${1:-$ROOT/build/gpu-check}")
TRAINC=${TRAINC:-$ROOT/build/bin/trainc}
REFERENCES=${REFERENCES:-$ROOT/build/reference}
GPU_ARCH=${GPU_ARCH:-sm_80,sm_90}
CUDA_PATH=${CUDA_PATH:-/usr/local/cuda}
TARGET=${TARGET:-cuda}
MODELS=${MODELS-"mlp cnn cnn_bn_opset15 transformer class_token tied_head"}
TIMED=${TIMED-"mlp cnn cnn_bn_opset15 transformer resnet18"}
COMPARE_FLAGS=()
for choice in ${COMPARE_DISPATCH:-}; do COMPARE_FLAGS+=(--dispatch "$choice"); done

# compile ONNX BATCH LIBRARY FLAGS...: one --target cuda library of the
# bundle.
compile() {
  local onnx=$1 batch=$2 library=$3
  shift 3
  echo "compiling $library" >&2
  "$TRAINC" compile "$onnx" --batch "$batch" "$@" --target "$TARGET" \
    --gpu-arch "$GPU_ARCH" --cuda-path "$CUDA_PATH" -o "$DIR/$library" 2>&1 |
    grep -v "^\[info\]" >&2 || true
  [ -f "$DIR/$library" ] || { echo "compiling $library failed" >&2; exit 1; }
}

# The entry's "compare" member: the library built with COMPARE_DISPATCH.
compared() {
  local onnx=$1 batch=$2 library=$3
  shift 3
  [ ${#COMPARE_FLAGS[@]} -gt 0 ] || return 0
  compile "$onnx" "$batch" "${library%.so}_compare.so" "$@" "${COMPARE_FLAGS[@]}"
  echo ", \"compare\": \"${library%.so}_compare.so\", \"compare_label\": \"${COMPARE_DISPATCH}\""
}

build() {
  mkdir -p "$DIR/lib"
  local entries=()
  for model in $MODELS; do
    local ref="$REFERENCES/$model.ref" onnx="$ROOT/models/$model.onnx"
    [ -f "$onnx" ] || onnx="$ROOT/build/models/$model.onnx"
    [ -f "$ref/reference.json" ] || { echo "no reference batch $ref (build the tests first)" >&2; exit 1; }
    local batch optimizers="sgd_momentum adamw" reference="\"$model.ref\""
    batch=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['inputs'][0]['shape'][0])" "$ref/reference.json")
    if [ "$model" = resnet18 ]; then
      # Its reference files (390 MB) stay here: gpu_check.py computes the
      # reference there from the library's weights. SGD only (47 MB).
      optimizers=sgd_momentum reference=null
    else
      mkdir -p "$DIR/$model.ref/fp32" "$DIR/$model.ref/fp64"
      cp "$ref/reference.json" "$DIR/$model.ref/"
      cp -r "$ref/fp32/inputs" "$ref/fp32/labels.npy" "$DIR/$model.ref/fp32/"
    fi
    for optimizer in $optimizers; do
      case $optimizer in
        sgd_momentum) flags="--optimizer sgd --lr 0.01 --momentum 0.9" ;;
        adamw) flags="--optimizer adamw --lr 0.001 --weight-decay 0.01" ;;
      esac
      if [ "$reference" != null ]; then
        cp -r "$ref/fp32/$optimizer" "$DIR/$model.ref/fp32/"
        cp -r "$ref/fp64/$optimizer" "$DIR/$model.ref/fp64/"
      fi
      local library="lib${model}_$optimizer.so" time=false compare=""
      # shellcheck disable=SC2086
      compile "$onnx" "$batch" "$library" $flags
      if [ "$optimizer" = sgd_momentum ] && [[ " $TIMED " == *" $model "* ]]; then
        time=true
        # shellcheck disable=SC2086
        compare=$(compared "$onnx" "$batch" "$library" $flags)
      fi
      entries+=("{\"model\": \"$model\", \"optimizer\": \"$optimizer\", \"library\": \"$library\", \"reference\": $reference, \"time\": $time$compare}")
    done
  done
  for model in ${AMP_MODELS:-}; do
    local ref="$REFERENCES/$model.ref" onnx="$ROOT/models/$model.onnx" reference=null batch
    [ -f "$onnx" ] || onnx="$ROOT/build/models/$model.onnx"
    batch=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['inputs'][0]['shape'][0])" "$ref/reference.json")
    if [ "$model" != resnet18 ]; then
      # The losses of the curves the criterion compares with, and the batch.
      reference="\"$model.ref\""
      mkdir -p "$DIR/$model.ref/fp32/sgd_momentum" "$DIR/$model.ref/autocast_bf16/sgd_momentum"
      cp "$ref/reference.json" "$DIR/$model.ref/"
      cp -r "$ref/fp32/inputs" "$ref/fp32/labels.npy" "$DIR/$model.ref/fp32/"
      cp "$ref/fp32/sgd_momentum/losses.npy" "$DIR/$model.ref/fp32/sgd_momentum/"
      cp "$ref/autocast_bf16/sgd_momentum/losses.npy" "$DIR/$model.ref/autocast_bf16/sgd_momentum/"
    fi
    local library="lib${model}_amp_bf16.so"
    compile "$onnx" "$batch" "$library" --optimizer sgd --lr 0.01 --momentum 0.9 --amp bf16
    entries+=("{\"model\": \"$model\", \"optimizer\": \"sgd_momentum\", \"library\": \"$library\", \"reference\": $reference, \"amp\": \"bf16\", \"time\": true}")
  done
  for pair in ${TIME_BATCHES:-} ${AMP_TIME_BATCHES:+$(printf '%s:amp ' $AMP_TIME_BATCHES)}; do
    local amp="" ampFlags=()
    if [[ $pair == *:amp ]]; then
      pair=${pair%:amp} amp=", \"amp\": \"bf16\"" ampFlags=(--amp bf16)
    fi
    local model=${pair%=*} batch=${pair#*=} onnx
    onnx="$ROOT/models/$model.onnx"
    [ -f "$onnx" ] || onnx="$ROOT/build/models/$model.onnx"
    local library="lib${model}_batch$batch${amp:+_amp_bf16}.so"
    local sgd=(--optimizer sgd --lr 0.01 --momentum 0.9 "${ampFlags[@]}")
    compile "$onnx" "$batch" "$library" "${sgd[@]}"
    local compare
    compare=$(compared "$onnx" "$batch" "$library" "${sgd[@]}")
    entries+=("{\"model\": \"$model\", \"library\": \"$library\", \"batch\": $batch, \"parity\": false, \"time\": true$compare$amp}")
  done
  # The runtime's one dependency a GPU machine may lack.
  cp "$(gcc -print-file-name=libgomp.so.1)" "$DIR/lib/"
  (IFS=,; echo "{\"libraries\": [${entries[*]}]}") > "$DIR/bundle.json"
  du -sh "$DIR" >&2
}

# The libraries' runtime dependencies on the GPU machine.
environment() {
  export LD_LIBRARY_PATH="$DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # cuBLAS 13 and cuDNN 9 (the libraries' products and convolutions): the
  # toolkit's, or the ones pip installed with PyTorch.
  local name found
  for name in libcublas.so.13 libcudnn.so.9; do
    found=$( (ls "$CUDA_PATH/lib64/$name" 2>/dev/null;
              python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null |
              xargs -I{} find {} -name "$name" 2>/dev/null) | head -1 || true)
    [ -n "$found" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    echo "$name: ${found:-not found}"
  done
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
}

run() {
  environment
  PYTHONUNBUFFERED=1 python3 "$ROOT/test/gpu/gpu_check.py" --bundle "$DIR" "$@"
}

# profile DIR LIBRARY MODEL [ARGS]: the kernels of LIBRARY's step by GPU
# time (test/gpu/gpu_profile.py).
profile() {
  environment
  local library=$1 model=$2
  shift 2
  PYTHONUNBUFFERED=1 python3 "$ROOT/test/gpu/gpu_profile.py" \
    --library "$DIR/$library" --model "$model" "$@"
}

case $mode in
  build) build ;;
  run) run "${@:2}" ;;
  profile) profile "${@:2}" ;;
  all) build && run ;;
esac
