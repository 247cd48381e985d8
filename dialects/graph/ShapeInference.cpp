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
