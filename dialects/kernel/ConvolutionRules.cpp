//===- ConvolutionRules.cpp - which backend runs a convolution, by shape ===//
//
// The dispatch predicates that choose a convolution's backend from its
// shape, each with the measurement behind it: OpenBLAS for small output
// planes, the generated depthwise kernels for the directions and shapes
// where oneDNN 2.6 is slow. The rule table is backendRules()
// (BackendRegistry.cpp).
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/BackendPredicates.h"

#include <optional>

using namespace mlir;

namespace trainc::kernel {

//===----------------------------------------------------------------------===//
// Convolutions over small output planes (ResNet-18's last stages at CIFAR
// size: 2x2 and 1x1). oneDNN 2.6 runs them through per-image im2col GEMMs
// (`gemm:jit`) over every kernel tap, even taps that read only padding;
// the openblas kernels run one GEMM over all images and only the taps that
// read the input (lib/Runtime/kernels/OpenBlasConvKernels.cpp, BatchedConv,
// whose runsBatched() accepts every launch these accept). Measured with
// `trainc-runtime-tests "[dnnl][bench]"` (docs/RUNTIME.md, Dispatch).
//===----------------------------------------------------------------------===//

/// A conv's geometry from a launch: the output plane (positions per
/// image and channel), the kernel taps, and how many taps read an input
/// element at some output position.
struct ConvPlane {
  int64_t plane = 1, taps = 1, liveTaps = 1, gathered = 0;
};

/// `data` is the [N, C, D...] operand on the input side, `result` the one
/// on the output side, `kernel` the weight shape [M, C/group, K...].
static std::optional<ConvPlane> convPlane(LaunchOp launch,
                                          ArrayRef<int64_t> data,
                                          ArrayRef<int64_t> result,
                                          ArrayRef<int64_t> kernel) {
  size_t rank = data.size() < 3 ? 0 : data.size() - 2;
  ArrayRef<int64_t> strides = integers(launch, "strides");
  ArrayRef<int64_t> pads = integers(launch, "pads");
  ArrayRef<int64_t> dilations = integers(launch, "dilations");
  if (rank == 0 || result.size() != data.size() ||
      kernel.size() != data.size() || strides.size() != rank ||
      pads.size() != 2 * rank || dilations.size() != rank)
    return std::nullopt;
  ConvPlane conv;
  for (size_t d = 0; d < rank; ++d) {
    int64_t live = 0;
    for (int64_t k = 0; k < kernel[d + 2]; ++k) {
      bool reads = false;
      for (int64_t o = 0; o < result[d + 2] && !reads; ++o) {
        int64_t at = o * strides[d] - pads[d] + k * dilations[d];
        reads = at >= 0 && at < data[d + 2];
      }
      live += reads;
    }
    conv.plane *= result[d + 2];
    conv.taps *= kernel[d + 2];
    conv.liveTaps *= live;
  }
  // What BatchedConv gathers (group 1 bounds every group count).
  conv.gathered = (result[1] + data[1] * conv.taps) * data[0] * conv.plane;
  return conv;
}

static bool smallPlane(const std::optional<ConvPlane> &conv,
                       std::string &whyNot) {
  if (!conv) {
    whyNot = "its operands and window attributes do not match";
    return false;
  }
  if (conv->plane > 4 || conv->gathered > (int64_t(1) << 24)) {
    whyNot = "its output planes are larger than 4 positions (or its "
             "gathered operands larger than 64 MiB)";
    return false;
  }
  return true;
}

/// Weight gradients over planes of at most 4 positions with windows wider
/// than one tap, on targets without AVX-512. On a Zen 3 (AVX2) at 2
/// threads: 2.1 against 3.5 ms (256 channels at 2x2), 1.2 against 17.4
/// (512 at 1x1), 1.2 against 5.1 (2x2 to 1x1, stride 2); 1x1 windows are a
/// tie (0.24 against 0.20). With AVX-512 oneDNN's are faster: on a Zen 4,
/// 0.98 against 1.83 ms at 2x2, and ResNet-18's step 36.8-37.5 against
/// 39.8-40.4 ms with every weight gradient on oneDNN.
bool smallPlaneConvWeight(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32(launch, whyNot))
    return false;
  if (targetVectorLanes(launch) >= 16) {
    whyNot = "the target has AVX-512, where oneDNN's weight gradients were "
             "faster";
    return false;
  }
  std::optional<ConvPlane> conv = convPlane(
      launch, shapeOf(launch.getInputs()[1]), shapeOf(launch.getInputs()[0]),
      integers(launch, "weight_shape"));
  if (!smallPlane(conv, whyNot))
    return false;
  if (conv->taps == 1) {
    whyNot = "its window is a single tap";
    return false;
  }
  return true;
}

/// Weight gradients of convolutions of a single input channel (the first
/// layer of a network on grayscale images), f32: oneDNN 2.6's kernel for
/// them runs far below its speed elsewhere, most of all on AVX2, while
/// OpenBLAS's im2col + sgemm has only 9 (for 3x3) rows of taps to gather.
/// The CNN's first layer (1 to 32 channels, 3x3, 28x28, batch 64), `trainc
/// compile --profile --profile-threads 2` on a Zen 4: 0.38-0.39 against
/// 0.49-0.51 ms; with the AVX2 code a Zen 3 gets (`--cpu znver3`,
/// DNNL_MAX_CPU_ISA=AVX2) 0.38-0.49 against 1.58-2.10 ms.
bool singleChannelConvWeight(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32(launch, whyNot))
    return false;
  ArrayRef<int64_t> x = shapeOf(launch.getInputs()[1]);
  if (x.size() < 3 || x[1] != 1) {
    whyNot = "its input has more than one channel";
    return false;
  }
  return true;
}

/// Forward convs and input gradients over planes of at most 4 positions
/// where some taps read only padding (oneDNN multiplies them by zeros): at
/// 2 threads, forward 1.2 against 2.6 ms and input gradient 1.1 against
/// 2.0 (512 channels at 1x1), 1.0 against 1.6 and 1.1 against 1.4 (2x2 to
/// 1x1, stride 2). Where every tap reads the input oneDNN is faster (1.5
/// against 2.4 ms, 256 channels at 2x2).
bool smallPlaneConvPaddedTaps(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32(launch, whyNot))
    return false;
  bool forward = launch.getKernel() == "graph.conv";
  Value x = forward ? launch.getInputs()[0] : launch.getOutputs()[0];
  Value y = forward ? launch.getOutputs()[0] : launch.getInputs()[0];
  std::optional<ConvPlane> conv =
      convPlane(launch, shapeOf(x), shapeOf(y), shapeOf(launch.getInputs()[1]));
  if (!smallPlane(conv, whyNot))
    return false;
  if (conv->liveTaps == conv->taps) {
    whyNot = "every kernel tap reads the input";
    return false;
  }
  return true;
}

/// Depthwise convolutions (one input and one output channel per group),
/// f32: the generated kernels run every tap in one vectorized nest
/// (GeneratedDepthwiseKernels.cpp). `bench/depthwise.py` on a Zen 4 (2
/// threads, MobileNetV2's and EfficientNet-B0's layers at 64 px, batch 8;
/// docs/PERFORMANCE.md): oneDNN 2.6's input gradients are 10-30x slower
/// than the generated ones everywhere (1.6 against 0.05 ms at 960 channels
/// of 2x2); its weight gradients are faster for 3x3 windows over inputs of
/// at least 3x3 (0.02-0.12 against 0.05-0.31 ms) but 2-16x slower for
/// 5x5 windows and 2x2 planes; its forward convolutions are faster
/// but over large planes without strides. There (MobileNetV2's first
/// layers at 224 px: 32 x 112x112 and 144 x 56x56) the generated forward
/// and weight gradient take 1.6 and 1.9 against 2.5 and 3.0 ms, and 1.5
/// and 2.2 against 3.1 and 3.8 ms; at 32x32 the two are even. That holds
/// with AVX-512 only: compiled for AVX2 (`--cpu znver3`, oneDNN limited
/// to AVX2, on the same Zen 4) the generated ones took 3.2 and 3.1
/// against 2.3 and 2.9 ms, and 4.4 and 4.0 against 2.6 and 3.1 ms.
static bool largeUnstridedPlane(LaunchOp launch, ArrayRef<int64_t> output) {
  ArrayRef<int64_t> strides = integers(launch, "strides");
  return targetVectorLanes(launch) >= 16 && output.size() > 2 &&
         output.back() >= 56 &&
         llvm::all_of(strides, [](int64_t s) { return s == 1; });
}
static bool isDepthwise(LaunchOp launch, ArrayRef<int64_t> weight,
                        std::string &whyNot) {
  if (!allFloat32OrLow(launch, whyNot))
    return false;
  auto group = launch.getOptions().getAs<IntegerAttr>("group");
  if (weight.size() < 3 || weight[1] != 1 || !group ||
      group.getInt() != weight[0]) {
    whyNot = "it is not depthwise (one input and one output channel per "
             "group)";
    return false;
  }
  return true;
}

/// Stride 1, at most 9 taps, at least 3 channels and rows of at least 8:
/// the generated kernel reads its input unpadded there
/// (GeneratedDepthwiseBorders.cpp), which made its forward convolutions
/// faster than oneDNN's on every plane measured (Zen 4, `trainc compile
/// --profile`, batch 8, 3x3: 2 threads, AVX-512, 0.021-0.056 against
/// 0.035-0.109 ms from 8x8 to 32x32, 0.65-1.23 against 2.5-3.0 ms at
/// 56x56 and 112x112; one thread with AVX2 code and oneDNN limited to
/// AVX2, 1.3-2.7x).
static bool unpaddedTaps(LaunchOp launch, ArrayRef<int64_t> weight,
                         ArrayRef<int64_t> output) {
  ArrayRef<int64_t> strides = integers(launch, "strides");
  int64_t taps = 1;
  for (int64_t extent : weight.drop_front(2))
    taps *= extent;
  return taps <= 9 && weight[0] >= 3 && output.size() > 2 &&
         output.back() >= 8 &&
         llvm::all_of(strides, [](int64_t s) { return s == 1; });
}

/// The generated forward convolution sums its taps with fused
/// multiply-adds in oneDNN's order (bias first, then the taps row-major),
/// so it gives oneDNN's bits: 2 SGD steps (learning rate 100) of each of
/// `bench/depthwise.py`'s 21 one-block models saved byte-identical models
/// with the forward on either, with AVX-512 and with AVX2 (`--cpu znver3`,
/// oneDNN limited to AVX2). Before the fused multiply-add,
/// EfficientNet-B0's 3 steps missed the parity criterion with the
/// generated forward over rows of 8 to 55 (`scripts/torchvision_parity.py`:
/// 1.20 times the bound on a running mean, 0.98 with oneDNN's forward).
bool generatedDepthwiseForward(LaunchOp launch, std::string &whyNot) {
  ArrayRef<int64_t> weight = shapeOf(launch.getInputs()[1]);
  if (!isDepthwise(launch, weight, whyNot))
    return false;
  ArrayRef<int64_t> output = shapeOf(launch.getOutputs()[0]);
  if (!largeUnstridedPlane(launch, output) &&
      !unpaddedTaps(launch, weight, output)) {
    whyNot = "oneDNN's depthwise forward convolutions were faster but "
             "without strides over rows of at least 8 (up to 9 taps) or 56 "
             "(AVX-512)";
    return false;
  }
  return true;
}

bool generatedDepthwiseInputGradient(LaunchOp launch, std::string &whyNot) {
  return isDepthwise(launch, shapeOf(launch.getInputs()[1]), whyNot);
}

bool generatedDepthwiseWeightGradient(LaunchOp launch, std::string &whyNot) {
  ArrayRef<int64_t> weight = integers(launch, "weight_shape");
  if (!isDepthwise(launch, weight, whyNot))
    return false;
  ArrayRef<int64_t> input = shapeOf(launch.getInputs()[1]);
  Type element =
      cast<MemRefType>(launch.getInputs()[1].getType()).getElementType();
  // Read unpadded, the generated 3x3 weight gradients beat oneDNN's too
  // (Zen 4, batch 8, `trainc compile --profile`: 2 threads of AVX-512,
  // 0.023-0.052 against 0.027-0.070 ms from 8x8 to 32x32; one thread of
  // AVX2 code, 2.5 against 5.6-6.6 ms at 56x56 and 112x112, but 0.186
  // against 0.155 at 32x32, where a row is 4 vectors and its sums do not
  // stay in registers).
  ArrayRef<int64_t> output = shapeOf(launch.getInputs()[0]);
  bool unpadded = unpaddedTaps(launch, weight, output) &&
                  (targetVectorLanes(launch) >= 16 || output.back() >= 56);
  bool oneDnnFast =
      !isLowFloat(element) && !largeUnstridedPlane(launch, output) && !unpadded;
  for (size_t d = 2; d < weight.size(); ++d)
    oneDnnFast &= weight[d] == 3 && input[d] >= 3;
  if (oneDnnFast) {
    whyNot = "oneDNN's f32 weight gradients of 3x3 windows over planes of "
             "at least 3x3 were faster, but without strides over rows of "
             "8 (AVX-512) or 56";
    return false;
  }
  return true;
}

} // namespace trainc::kernel
