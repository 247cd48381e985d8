//===- ShapeInference.cpp - helpers shared by graph op inference ----------===//
#include "dialects/graph/ShapeInference.h"

#include "llvm/ADT/SmallSet.h"

#include <limits>
#include <string>

using namespace mlir;

namespace trainc::graph {

std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  llvm::SmallVector<int64_t> result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right.
    int64_t a = i < rank - lhs.size() ? 1 : lhs[i - (rank - lhs.size())];
    int64_t b = i < rank - rhs.size() ? 1 : rhs[i - (rank - rhs.size())];
    if (a == 1) {
      result[i] = b;
    } else if (b == 1 || a == b) {
      result[i] = a;
    } else if (isDynamic(a) || isDynamic(b)) {
      result[i] = isDynamic(a) ? b : a;
    } else {
      return std::nullopt;
    }
  }
  return result;
}

std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode) {
  if (isDynamic(input))
    return ShapedType::kDynamic;
  // In 128 bits: kernel, stride, pads and dilation come from a model's
  // attributes, and none of them may overflow the arithmetic.
  using Wide = __int128;
  Wide effectiveKernel = Wide(dilation) * (Wide(kernel) - 1) + 1;
  Wide span = Wide(input) + padBegin + padEnd - effectiveKernel;
  if (span < 0 || stride <= 0 || kernel <= 0 || dilation <= 0)
    return std::nullopt;
  Wide size = (ceilMode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil_mode, a last window that would start inside the end padding
  // is dropped (ONNX and PyTorch agree on this).
  if (ceilMode && (size - 1) * stride >= Wide(input) + padBegin)
    --size;
  if (size > std::numeric_limits<int64_t>::max())
    return std::nullopt;
  return static_cast<int64_t>(size);
}

llvm::FailureOr<llvm::SmallVector<int64_t, 2>>
convMatrixShape(std::optional<Location> location,
                llvm::ArrayRef<int64_t> weight, llvm::ArrayRef<int64_t> input,
                llvm::ArrayRef<int64_t> output, llvm::ArrayRef<int64_t> strides,
                llvm::ArrayRef<int64_t> pads) {
  size_t spatial = input.size();
  if (spatial == 0 || weight.size() != spatial + 2 ||
      output.size() != spatial || strides.size() != spatial ||
      pads.size() != spatial)
    return inferenceError(
        location, "conv_matrix needs a weight [M, C, K...] and one input "
                  "size, output size, stride and begin pad per spatial dim");
  if (llvm::any_of(weight, isDynamic))
    return inferenceError(location, "conv_matrix needs a static weight");
  llvm::SmallVector<int64_t, 2> shape = {weight[0], weight[1]};
  for (size_t d = 0; d < spatial; ++d) {
    if (!readsWholePlane(input[d], output[d], weight[d + 2], strides[d],
                         pads[d]))
      return inferenceError(
          location, "conv_matrix: along spatial dim " + std::to_string(d) +
                        " a window of " + std::to_string(weight[d + 2]) +
                        " taps, stride " + std::to_string(strides[d]) +
                        " and pad " + std::to_string(pads[d]) +
                        " does not read all " + std::to_string(input[d]) +
                        " inputs from all " + std::to_string(output[d]) +
                        " outputs");
    shape[0] *= output[d];
    shape[1] *= input[d];
  }
  return shape;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += "x";
    text += isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return shape.empty() ? "scalar" : text;
}

LogicalResult verifyAxes(std::optional<Location> location,
                         llvm::ArrayRef<int64_t> axes, int64_t rank,
                         llvm::StringRef what) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank)
      return inferenceError(location, what + " " + std::to_string(axis) +
                                          " is out of range for rank " +
                                          std::to_string(rank));
    if (!seen.insert(axis).second)
      return inferenceError(location, what + " " + std::to_string(axis) +
                                          " appears twice");
  }
  return success();
}

} // namespace trainc::graph
