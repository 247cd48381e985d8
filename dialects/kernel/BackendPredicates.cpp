//===- BackendPredicates.cpp - what each backend can run
//-------------------===//
//
// The predicates of the dispatch rules (BackendRegistry.cpp's table): for
// each backend, the launches (dtypes, ranks, options) its kernels take,
// and, where a launch is refused, why. The shape rules that choose between
// backends that can both run a launch are in ConvolutionRules.cpp and
// ProductRules.cpp.
//
//===----------------------------------------------------------------------===//
#include "dialects/kernel/BackendPredicates.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace trainc::kernel {

bool allFloat32(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands())
    if (!cast<MemRefType>(buffer.getType()).getElementType().isF32()) {
      whyNot = "it handles f32 buffers only";
      return false;
    }
  return true;
}

bool always(LaunchOp, std::string &) { return true; }

/// bf16 or f16: the low precisions of --amp.
bool isLowFloat(Type element) { return element.isBF16() || element.isF16(); }

/// No bf16 or f16 buffer: the runtime's reference kernels compute in f32,
/// f64 and integers only.
static bool noLowFloats(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands())
    if (isLowFloat(cast<MemRefType>(buffer.getType()).getElementType())) {
      whyNot = "it handles no bf16 or f16 tensors";
      return false;
    }
  return true;
}

/// The reference kernels: every computation, in f32, f64 and integers
/// (communication is not a computation: graph.all_reduce is mpi's).
bool referenceKernel(LaunchOp launch, std::string &whyNot) {
  if (launch.getKernel() == "graph.all_reduce") {
    whyNot = "the reference kernels do not communicate";
    return false;
  }
  return noLowFloats(launch, whyNot);
}

/// f32 tensors, with i1 allowed for masks and comparison results.
bool float32OrMask(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands()) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    if (!element.isF32() && !element.isInteger(1)) {
      whyNot = "it handles f32 tensors (and i1 masks) only";
      return false;
    }
  }
  return true;
}

/// As float32OrMask, or bf16 and f16 too: elementwise kernels, which load
/// and store them and compute in f32 (--trainc-widen-low-floats). Not for
/// reductions, which accumulate in their output.
bool floatOrMask(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands()) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    if (!element.isF32() && !element.isInteger(1) && !isLowFloat(element)) {
      whyNot = "it handles f32, bf16 and f16 tensors (and i1 masks) only";
      return false;
    }
  }
  return true;
}

/// Floats or i1 as floatOrMask, or all i64 or all i32 (integer add, sub and
/// mul wrap, as the reference's).
bool floatOrInteger(LaunchOp launch, std::string &whyNot) {
  for (unsigned width : {32u, 64u})
    if (llvm::all_of(launch->getOperands(), [&](Value buffer) {
          return cast<MemRefType>(buffer.getType())
              .getElementType()
              .isSignlessInteger(width);
        }))
      return true;
  if (floatOrMask(launch, whyNot))
    return true;
  whyNot = "it handles f32, bf16 and f16 tensors, i1 masks and i32 or i64 "
           "integers only";
  return false;
}

/// As floatOrMask, or i1 masks with all other buffers i64, or all i32
/// (integer comparisons and selects).
bool floatOrIntegerOrMask(LaunchOp launch, std::string &whyNot) {
  for (unsigned width : {32u, 64u})
    if (llvm::all_of(launch->getOperands(), [&](Value buffer) {
          Type element = cast<MemRefType>(buffer.getType()).getElementType();
          return element.isInteger(1) || element.isSignlessInteger(width);
        }))
      return true;
  if (floatOrMask(launch, whyNot))
    return true;
  whyNot = "it handles f32, bf16 and f16 tensors, i1 masks and i32 or i64 "
           "integers only";
  return false;
}

//===----------------------------------------------------------------------===//
// oneDNN: what lib/Runtime/kernels/Dnnl*.cpp refuse, these reject.
//===----------------------------------------------------------------------===//

ArrayRef<int64_t> shapeOf(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getShape();
}

/// All f32, or all of one low float type (bf16, f16): kernels exact in any
/// precision (max pooling), which generated code computes in f32.
bool allFloat32OrLow(LaunchOp launch, std::string &whyNot) {
  Type first =
      cast<MemRefType>(launch->getOperand(0).getType()).getElementType();
  bool same = llvm::all_of(launch->getOperands(), [&](Value buffer) {
    return cast<MemRefType>(buffer.getType()).getElementType() == first;
  });
  if (!same || !(first.isF32() || isLowFloat(first))) {
    whyNot = "it handles all-f32, all-bf16 or all-f16 buffers only";
    return false;
  }
  return true;
}

/// Every buffer bf16.
static bool allBfloat16(LaunchOp launch) {
  return llvm::all_of(launch->getOperands(), [](Value buffer) {
    return cast<MemRefType>(buffer.getType()).getElementType().isBF16();
  });
}

/// No buffer with 0 elements (library kernels that refuse them).
static bool noEmptyBuffers(LaunchOp launch, std::string &whyNot) {
  for (Value buffer : launch->getOperands())
    if (cast<MemRefType>(buffer.getType()).getNumElements() == 0) {
      whyNot = "it runs no empty tensors";
      return false;
    }
  return true;
}

/// f32 buffers, or with `bf16` all bf16 buffers (lib/Runtime/kernels/
/// Dnnl.h: checkDnnlTypes) on an AVX-512 target (16 lanes: oneDNN 2.6
/// has no bf16 primitives below avx512_core, so an AVX2 CPU could not
/// create one when the session opens), none empty.
static bool dnnlBuffers(LaunchOp launch, std::string &whyNot,
                        bool bf16 = false) {
  bool allBf16 = allBfloat16(launch);
  if (allBf16 && bf16 && targetVectorLanes(launch) < 16) {
    whyNot = "it has no bf16 kernels for CPUs without AVX-512";
    return false;
  }
  if (!(bf16 && allBf16) && !allFloat32(launch, whyNot)) {
    if (bf16)
      whyNot = "it handles all-f32 or all-bf16 buffers only";
    return false;
  }
  return noEmptyBuffers(launch, whyNot);
}

/// [N, C, D...] with 1 to 3 spatial dims.
static bool dnnlSpatial(Value buffer, std::string &whyNot) {
  size_t rank = shapeOf(buffer).size();
  if (rank < 3 || rank > 5) {
    whyNot = "it handles 1 to 3 spatial dims";
    return false;
  }
  return true;
}

bool dnnlConv(LaunchOp launch, std::string &whyNot) {
  return dnnlBuffers(launch, whyNot, /*bf16=*/true) &&
         dnnlSpatial(launch.getOutputs()[0], whyNot) &&
         dnnlSpatial(launch.getInputs()[0], whyNot);
}

bool dnnlMatmul(LaunchOp launch, std::string &whyNot) {
  if (!dnnlBuffers(launch, whyNot, /*bf16=*/true))
    return false;
  for (Value buffer : launch.getInputs())
    if (shapeOf(buffer).size() > 12) {
      whyNot = "it handles up to 12 dims";
      return false;
    }
  return true;
}

ArrayRef<int64_t> integers(LaunchOp launch, StringRef name) {
  auto array = launch.getOptions().getAs<DenseI64ArrayAttr>(name);
  return array ? array.asArrayRef() : ArrayRef<int64_t>();
}

/// Pooling windows oneDNN computes as the graph op does: none lies in the
/// padding only (oneDNN's max would be the lowest float, not -inf), and an
/// average that counts the padding never crosses the end padding (ceil_mode:
/// oneDNN divides by the whole kernel, the graph op by the clipped window).
bool dnnlPool(LaunchOp launch, std::string &whyNot) {
  if (!dnnlBuffers(launch, whyNot, /*bf16=*/true))
    return false;
  StringRef kernel = launch.getKernel();
  bool isMax = kernel.starts_with("graph.max_pool");
  bool backward = kernel.ends_with("_backward");
  // The forward op's input and output.
  ArrayRef<int64_t> input = !backward ? shapeOf(launch.getInputs()[0])
                            : isMax   ? shapeOf(launch.getInputs()[1])
                                      : integers(launch, "input_shape");
  ArrayRef<int64_t> output = backward ? shapeOf(launch.getInputs()[0])
                                      : shapeOf(launch.getOutputs()[0]);
  if (!dnnlSpatial(backward ? launch.getInputs()[0] : launch.getOutputs()[0],
                   whyNot))
    return false;
  size_t rank = input.size() - 2;
  ArrayRef<int64_t> window = integers(launch, "kernel_shape");
  ArrayRef<int64_t> strides = integers(launch, "strides");
  ArrayRef<int64_t> pads = integers(launch, "pads");
  ArrayRef<int64_t> dilations = integers(launch, "dilations");
  auto flag = [&](StringRef name) {
    auto value = launch.getOptions().getAs<BoolAttr>(name);
    return value && value.getValue();
  };
  bool countIncludePad = !isMax && flag("count_include_pad");
  if (window.size() != rank || strides.size() != rank ||
      pads.size() != 2 * rank || output.size() != input.size() ||
      (isMax && dilations.size() != rank)) {
    whyNot = "its window attributes do not match the operands";
    return false;
  }
  for (size_t d = 0; d < rank; ++d) {
    int64_t dilation = isMax ? dilations[d] : 1;
    for (int64_t o = 0; o < output[d + 2]; ++o) {
      int64_t start = o * strides[d] - pads[d];
      bool inside = false;
      for (int64_t k = 0; k < window[d] && !inside; ++k)
        inside =
            start + k * dilation >= 0 && start + k * dilation < input[d + 2];
      if (!inside) {
        whyNot = "a window lies entirely in the padding";
        return false;
      }
      if (countIncludePad &&
          start + window[d] > input[d + 2] + pads[d + rank]) {
        whyNot = "an average counting the padding crosses the end padding "
                 "(ceil_mode)";
        return false;
      }
    }
  }
  return true;
}

/// Every buffer f32, or every one bf16 (--amp bf16 on the GPU: the cuBLAS
/// and cuDNN kernels multiply bf16 on tensor cores, accumulating in f32).
/// No empty buffer either: cuBLAS refuses a leading dimension of 0 and
/// cuDNN a descriptor with a 0 extent.
static bool allFloat32OrBf16(LaunchOp launch, std::string &whyNot) {
  if (!allBfloat16(launch) && !allFloat32(launch, whyNot)) {
    whyNot = "it handles all-f32 or all-bf16 buffers only";
    return false;
  }
  return noEmptyBuffers(launch, whyNot);
}

/// graph.matmul and graph.gemm on cuBLAS (lib/Runtime/kernels/
/// CublasKernels.cpp): f32 or bf16, and a gemm's c a row [n], a column
/// [m, 1] or (f32 only) a whole [m, n] (the broadcasts its kernel builds
/// with cuBLAS itself).
bool cublasProduct(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32OrBf16(launch, whyNot))
    return false;
  if (launch.getKernel() != "graph.gemm" || launch.getInputs().size() < 3)
    return true;
  auto c = cast<MemRefType>(launch.getInputs()[2].getType());
  auto out = cast<MemRefType>(launch.getOutputs()[0].getType());
  ArrayRef<int64_t> shape = c.getShape();
  int64_t m = out.getDimSize(0), n = out.getDimSize(1);
  bool row = (shape.size() == 1 && shape[0] == n) ||
             (shape.size() == 2 && shape[0] == 1 && shape[1] == n);
  bool column = shape.size() == 2 && shape[0] == m && shape[1] == 1;
  bool whole = shape.size() == 2 && shape[0] == m && shape[1] == n &&
               c.getElementType().isF32();
  if (row || column || whole)
    return true;
  whyNot = "its c broadcast is not a row, a column or (f32) the whole output";
  return false;
}

/// Convolutions and their gradients on cuDNN (lib/Runtime/kernels/
/// CudnnKernels.cpp): f32 or bf16, 1 to 3 spatial dims, each padded alike
/// at both ends (cuDNN's descriptors hold one pad per dim).
bool cudnnConv(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32OrBf16(launch, whyNot))
    return false;
  ArrayRef<int64_t> pads = integers(launch, "pads");
  size_t rank = pads.size() / 2;
  if (rank < 1 || rank > 3) {
    whyNot = "it convolves 1 to 3 spatial dims";
    return false;
  }
  for (size_t d = 0; d < rank; ++d)
    if (pads[d] != pads[d + rank]) {
      whyNot = "its pads differ at the two ends of a dim";
      return false;
    }
  return true;
}

/// graph.cast between f32, f64, i64, i32 and bool, and between bf16, f16
/// and f32 (other casts of low floats would go through f64, which needs
/// library calls generated code does not link).
bool generatedCast(LaunchOp launch, std::string &whyNot) {
  auto supported = [](Type type) {
    return type.isF32() || type.isF64() || type.isInteger(64) ||
           type.isInteger(32) || type.isInteger(1);
  };
  auto lowOrF32 = [](Type type) { return type.isF32() || isLowFloat(type); };
  Type from =
      cast<MemRefType>(launch.getInputs()[0].getType()).getElementType();
  Type to = cast<MemRefType>(launch.getOutputs()[0].getType()).getElementType();
  bool low = isLowFloat(from) || isLowFloat(to);
  if (low ? !((lowOrF32(from) || from.isInteger(1)) && lowOrF32(to))
          : !(supported(from) && supported(to))) {
    whyNot = "it casts between f32, f64, i64, i32 and bool, between "
             "bf16, f16 and f32, and from bool to bf16 and f16 only";
    return false;
  }
  return true;
}

/// Class losses and their gradients: i64 or i32 labels (the last input), f32
/// everything else, and at least one class in the scores (the input before
/// the labels): the generated kernels read a label as a class or nothing.
bool float32ClassLoss(LaunchOp launch, std::string &whyNot) {
  OperandRange inputs = launch.getInputs();
  Value labels = inputs.back();
  for (Value buffer : launch->getOperands()) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    if (buffer == labels ? !(element.isInteger(64) || element.isInteger(32))
                         : !element.isF32()) {
      whyNot = "it handles f32 scores with i64 or i32 labels only";
      return false;
    }
  }
  ArrayRef<int64_t> scores = shapeOf(inputs[inputs.size() - 2]);
  if (scores.size() < 2 || scores[1] < 1) {
    whyNot = "it needs scores [N, C, ...] with at least one class";
    return false;
  }
  return true;
}

/// argmax of f32 (lib/Conversion/GeneratedKernels.cpp; the reference
/// kernel takes every number type).
bool float32ArgMax(LaunchOp launch, std::string &whyNot) {
  if (cast<MemRefType>(launch.getInputs()[0].getType())
          .getElementType()
          .isF32())
    return true;
  whyNot = "it takes f32 input only";
  return false;
}

/// Dropout masks of f32 (lib/Conversion/GeneratedRandomKernels.cpp).
bool allFloat32Mask(LaunchOp launch, std::string &whyNot) {
  if (!cast<MemRefType>(launch.getOutputs()[0].getType())
           .getElementType()
           .isF32()) {
    whyNot = "it draws f32 masks only";
    return false;
  }
  return true;
}

/// Gathers and their gradients: f32 data, i64 or i32 indices, and an axis
/// of size at least 1 (lib/Conversion/GeneratedSliceKernels.cpp).
bool generatedGather(LaunchOp launch, std::string &whyNot) {
  bool forward = launch.getKernel() == "graph.gather" ||
                 launch.getKernel() == "graph.gather_elements";
  Value data = forward ? launch.getInputs()[0] : launch.getOutputs()[0];
  Type element = cast<MemRefType>(data.getType()).getElementType();
  Type index =
      cast<MemRefType>(launch.getInputs()[1].getType()).getElementType();
  if (!element.isF32() || !(index.isInteger(64) || index.isInteger(32))) {
    whyNot = "it handles f32 data with i64 or i32 indices only";
    return false;
  }
  auto axis = launch.getOptions().getAs<IntegerAttr>("axis");
  ArrayRef<int64_t> shape = shapeOf(data);
  if (!axis || axis.getInt() < 0 ||
      axis.getInt() >= static_cast<int64_t>(shape.size()) ||
      shape[axis.getInt()] < 1) {
    whyNot = "its axis must be a dim of the data of size at least 1";
    return false;
  }
  return true;
}

/// Batch norm over [N, C] to [N, C, D1, D2, D3].
bool dnnlBatchNorm(LaunchOp launch, std::string &whyNot) {
  if (!dnnlBuffers(launch, whyNot))
    return false;
  if (shapeOf(launch.getOutputs()[0]).size() > 5) {
    whyNot = "it handles 2 to 5 dims";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Generated loop nests: what lib/Conversion's builders refuse, these reject.
//===----------------------------------------------------------------------===//

/// Batch norm over f32 [N, C, D...] (or bf16/f16 activations with f32
/// parameters and statistics, --amp); in training more than one value per
/// channel, as the running variance's unbiased estimate divides by count - 1.
bool generatedBatchNorm(LaunchOp launch, std::string &whyNot) {
  if (!floatOrMask(launch, whyNot))
    return false;
  ArrayRef<int64_t> shape = shapeOf(launch.getOutputs()[0]);
  if (shape.size() < 2) {
    whyNot = "it needs an [N, C, ...] input";
    return false;
  }
  int64_t count = 1;
  for (auto [dim, extent] : llvm::enumerate(shape))
    if (dim != 1)
      count *= extent;
  if (launch.getKernel() == "graph.batch_norm_training" && count <= 1) {
    whyNot = "batch statistics need more than one value per channel";
    return false;
  }
  return true;
}

/// Max pooling or its gradient whose windows tile the f32 input exactly:
/// strides equal to the window, no padding, no dilation, spatial extents
/// that are multiples of the window's
/// (lib/Conversion/GeneratedPoolKernels.cpp).
bool generatedMaxPool(LaunchOp launch, std::string &whyNot) {
  if (!allFloat32OrLow(launch, whyNot))
    return false;
  bool backward = launch.getKernel().ends_with("_backward");
  ArrayRef<int64_t> input = shapeOf(launch.getInputs()[backward ? 1 : 0]);
  ArrayRef<int64_t> windows =
      shapeOf(backward ? launch.getInputs()[0] : launch.getOutputs()[0]);
  ArrayRef<int64_t> window = integers(launch, "kernel_shape");
  ArrayRef<int64_t> pads = integers(launch, "pads");
  ArrayRef<int64_t> dilations = integers(launch, "dilations");
  size_t rank = window.size();
  bool exact = rank > 0 && input.size() == rank + 2 &&
               windows.size() == input.size() &&
               integers(launch, "strides") == window &&
               pads.size() == 2 * rank && dilations.size() == rank;
  for (size_t d = 0; exact && d < rank; ++d)
    exact = window[d] >= 1 && input[d + 2] % window[d] == 0 &&
            windows[d + 2] * window[d] == input[d + 2] && pads[d] == 0 &&
            pads[d + rank] == 0 && dilations[d] == 1;
  if (!exact)
    whyNot = "its windows do not tile the input exactly (strides equal to "
             "the window, no padding or dilation, extents that are multiples "
             "of the window's)";
  return exact;
}

/// The same, with windows 1 or 2 wide along the last dim: the cases whose
/// nests vectorize.
bool generatedMaxPoolVectorized(LaunchOp launch, std::string &whyNot) {
  if (!generatedMaxPool(launch, whyNot))
    return false;
  if (integers(launch, "kernel_shape").back() > 2) {
    whyNot = "its windows are wider than 2 along the last dim";
    return false;
  }
  return true;
}

} // namespace trainc::kernel
