//===- ShapeInference.h - helpers shared by graph op inference -*- C++ -*-===//
//
// Small, dependency-free shape arithmetic used by the inferReturnTypes
// implementations. Dynamic dimensions (ShapedType::kDynamic) propagate, so
// a symbolic batch dimension needs no change here.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_GRAPH_SHAPEINFERENCE_H
#define TRAINC_DIALECTS_GRAPH_SHAPEINFERENCE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace trainc::graph {

/// Emits `message` at `location` (when given) and returns failure.
inline llvm::LogicalResult inferenceError(std::optional<mlir::Location> location,
                                          const llvm::Twine &message) {
  return mlir::emitOptionalError(location, message);
}

inline bool isDynamic(int64_t dim) { return mlir::ShapedType::isDynamic(dim); }

/// Multidirectional (numpy) broadcast of two shapes; nullopt if they clash.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Output size of one spatial dim of a convolution or pooling window.
/// Returns nullopt when the window does not fit.
std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode);

/// The type of graph.conv's result for `input`, `weight`, `bias` (null if
/// none) and the window, or an error at `location`.
/// graph.conv_backward_input's grad_output must have this type for the
/// input shape it produces (NeuralOps.cpp).
llvm::LogicalResult
inferConvType(std::optional<mlir::Location> location,
              mlir::RankedTensorType input, mlir::RankedTensorType weight,
              mlir::RankedTensorType bias, llvm::ArrayRef<int64_t> strides,
              llvm::ArrayRef<int64_t> pads, llvm::ArrayRef<int64_t> dilations,
              int64_t group, llvm::SmallVectorImpl<mlir::Type> &types);

/// Whether a window of `kernel` taps with `stride` and begin pad `pad`
/// reads every input position i < `input` from every output position
/// o < `output` through a tap inside the kernel (i - o * stride + pad in
/// [0, kernel)): the dims along which graph.conv_matrix has no zeros.
inline bool readsWholePlane(int64_t input, int64_t output, int64_t kernel,
                            int64_t stride, int64_t pad) {
  return input >= 1 && output >= 1 && pad - (output - 1) * stride >= 0 &&
         input - 1 + pad <= kernel - 1;
}

/// The [M * O..., C * D...] shape of graph.conv_matrix of a weight
/// [M, C, K...] between planes `input` (D...) and `output` (O...), or an
/// error at `location`; shared with graph.conv_matrix_backward.
llvm::FailureOr<llvm::SmallVector<int64_t, 2>>
convMatrixShape(std::optional<mlir::Location> location,
                llvm::ArrayRef<int64_t> weight, llvm::ArrayRef<int64_t> input,
                llvm::ArrayRef<int64_t> output, llvm::ArrayRef<int64_t> strides,
                llvm::ArrayRef<int64_t> pads);

/// "4x8x?" for messages.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Checks that every entry of `axes` is in [0, rank) and unique.
llvm::LogicalResult verifyAxes(std::optional<mlir::Location> location,
                               llvm::ArrayRef<int64_t> axes, int64_t rank,
                               llvm::StringRef what);

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_SHAPEINFERENCE_H
