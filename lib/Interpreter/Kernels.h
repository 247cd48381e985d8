//===- Kernels.h - what an interpreter kernel sees ------------*- C++ -*-===//
//
// A kernel runs one op: it reads its operands' host tensors, computes every
// result in double and returns them with their shapes. The driver
// (Interpreter.cpp) sets the dtypes, rounds each element to the result's
// element type, and checks the shapes against the op's result types, so a
// kernel never rounds and a shape mistake in a kernel or in the op's
// inference is caught at once. Kernels are registered by op name in one
// table per op family (*Kernels.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_INTERPRETER_KERNELS_H
#define TRAINC_LIB_INTERPRETER_KERNELS_H

#include "trainc/Interpreter.h"

#include "dialects/graph/ShapeInference.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <functional>
#include <optional>

namespace trainc::interpreter {

using KernelResult = llvm::Expected<std::vector<HostTensor>>;

/// The values computed so far in the function being run.
class Values {
public:
  explicit Values(bool exact = false) : exactRun(exact) {}
  /// Whether the run computes in double without rounding float results
  /// (InterpreterOptions::fp64): a kernel that rounds inside an op (the SGD
  /// update, op by op as PyTorch does) must not then.
  bool exact() const { return exactRun; }
  /// The tensor of `value`; the driver guarantees every operand is set.
  const HostTensor &operator[](mlir::Value value) const {
    return map.find(value)->second;
  }
  void set(mlir::Value value, HostTensor tensor) {
    map[value] = std::move(tensor);
  }

private:
  llvm::DenseMap<mlir::Value, HostTensor> map;
  bool exactRun;
};

using Kernel = std::function<KernelResult(mlir::Operation *, const Values &)>;

/// Kernels by op name.
class KernelTable {
public:
  /// Registers `kernel`, a callable taking (OpTy, const Values &).
  template <typename OpTy, typename Callable> void add(Callable kernel) {
    kernels[OpTy::getOperationName()] = [kernel](mlir::Operation *op,
                                                 const Values &values) {
      return kernel(llvm::cast<OpTy>(op), values);
    };
  }
  const Kernel *lookup(llvm::StringRef name) const {
    auto it = kernels.find(name);
    return it == kernels.end() ? nullptr : &it->second;
  }

private:
  llvm::StringMap<Kernel> kernels;
};

void registerElementwiseKernels(KernelTable &table);
void registerTensorKernels(KernelTable &table);
void registerNeuralKernels(KernelTable &table);
void registerBackwardKernels(KernelTable &table);
void registerTrainingKernels(KernelTable &table);

//===----------------------------------------------------------------------===//
// Helpers shared by the kernels (KernelSupport.cpp)
//===----------------------------------------------------------------------===//

/// An error for the driver to prefix with the op and its location.
llvm::Error kernelError(const llvm::Twine &message);

/// One result: the common case.
KernelResult result(HostTensor tensor);

/// A tensor of `shape` filled with `value` (dtype is set by the driver).
HostTensor filled(llvm::ArrayRef<int64_t> shape, double value = 0.0);

int64_t product(llvm::ArrayRef<int64_t> shape);
/// Row-major strides of `shape`.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);
/// The multi-index of row-major element `flat` of `shape`.
llvm::SmallVector<int64_t> unravel(int64_t flat, llvm::ArrayRef<int64_t> shape);
/// The row-major position of `index` in a tensor with `strides`.
int64_t ravel(llvm::ArrayRef<int64_t> index, llvm::ArrayRef<int64_t> strides);

/// "[2, 3]" for messages.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// numpy broadcasting, as the graph dialect's inference defines it.
using graph::broadcastShapes;

/// Calls `visit(outputFlat, dataFlat)` for every element of gather(data,
/// indices, axis): its flat position in the output and the flat position
/// in data it reads (negative indices count from the end). Fails if an
/// index is out of range.
llvm::Error forEachGathered(llvm::ArrayRef<int64_t> dataShape,
                            const HostTensor &indices, int64_t axis,
                            llvm::function_ref<void(int64_t, int64_t)> visit);

/// Calls `visit(outputFlat, dataFlat)` for every element of
/// gather_elements(data, indices, axis): the output has the indices' shape
/// and element p reads data[p with p[axis] = indices[p]]. Fails if an index
/// is out of range or the indices exceed the data off the axis.
llvm::Error
forEachGatheredElement(llvm::ArrayRef<int64_t> dataShape,
                       const HostTensor &indices, int64_t axis,
                       llvm::function_ref<void(int64_t, int64_t)> visit);

/// Maps row-major elements of a broadcast result back to one operand.
class BroadcastIndexer {
public:
  BroadcastIndexer(llvm::ArrayRef<int64_t> resultShape,
                   llvm::ArrayRef<int64_t> operandShape);
  /// The operand element that result element `flat` reads.
  int64_t operator()(int64_t flat) const;

private:
  llvm::SmallVector<int64_t> resultShape;
  /// Per result dim: the operand stride, 0 where the operand broadcasts.
  llvm::SmallVector<int64_t> strides;
};

/// The static shape of an op's result `index`; nullopt when dynamic.
std::optional<llvm::SmallVector<int64_t>> staticResultShape(mlir::Operation *op,
                                                            unsigned index = 0);

/// True when `value`'s element type is an integer (or i1).
bool isIntegerTensor(mlir::Value value);

/// An integer index from an element of an index tensor.
inline int64_t toIndex(double value) { return static_cast<int64_t>(value); }

/// Output size of one windowed (conv/pool) spatial dim, computed the way
/// ONNX and PyTorch define it; nullopt when the window does not fit.
std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode);

/// Geometry of a conv/pool window over the spatial dims of [N, C, D...].
struct Window {
  llvm::SmallVector<int64_t> kernel, strides, padsBegin, padsEnd, dilations;
  size_t rank() const { return kernel.size(); }
};
/// Checks the attribute lengths against `spatialRank` and splits the pads.
llvm::Expected<Window> makeWindow(size_t spatialRank,
                                  llvm::ArrayRef<int64_t> kernel,
                                  llvm::ArrayRef<int64_t> strides,
                                  llvm::ArrayRef<int64_t> pads,
                                  llvm::ArrayRef<int64_t> dilations);
/// [N, C, out...] for `inputShape` under `window` with `channels` outputs.
llvm::Expected<llvm::SmallVector<int64_t>>
windowedShape(llvm::ArrayRef<int64_t> inputShape, int64_t channels,
              const Window &window, bool ceilMode);

/// A tap of a window: a kernel position and the input element it reads,
/// both as row-major flat indices (of the kernel and of one spatial plane).
struct WindowTap {
  int64_t kernel;
  int64_t input;
};
/// The taps of the window at output position `output` (spatial multi-index)
/// that fall inside the input, in row-major kernel order; taps in the
/// padding are left out.
llvm::SmallVector<WindowTap> windowTaps(const Window &window,
                                        llvm::ArrayRef<int64_t> inputSpatial,
                                        llvm::ArrayRef<int64_t> output);
/// What average pooling divides the window at `output` by (PyTorch's rule):
/// with count_include_pad, the window's extent clipped to input + pads
/// (so a ceil_mode window hanging past the end padding counts only the
/// part inside it); otherwise the number of taps inside the input.
double averagePoolDivisor(const Window &window,
                          llvm::ArrayRef<int64_t> inputSpatial,
                          llvm::ArrayRef<int64_t> output, bool countIncludePad);
/// The input element max pooling selects in the window at `output`: the
/// first maximal tap in row-major window order (a NaN wins), the one
/// PyTorch's indices name; -1 when every tap is padding. `plane` holds one
/// [D...] spatial plane of the input.
int64_t maxPoolArgmax(const Window &window,
                      llvm::ArrayRef<int64_t> inputSpatial,
                      llvm::ArrayRef<int64_t> output,
                      llvm::ArrayRef<double> plane);

/// Mean and biased variance per channel of [N, C, ...] over every dim but
/// C (batch norm; NeuralKernels.cpp).
struct ChannelStatistics {
  std::vector<double> mean, variance;
  int64_t count = 0; ///< values per channel
  int64_t inner = 1; ///< elements per (n, c) plane
};
ChannelStatistics channelStatistics(const HostTensor &input);

/// Mean and biased variance of row `row` of `size` elements (layer norm).
struct RowStatistics {
  double mean = 0.0, variance = 0.0;
  double inverseStd(double epsilon) const {
    return 1.0 / std::sqrt(variance + epsilon);
  }
};
RowStatistics rowStatistics(const HostTensor &input, int64_t row, int64_t size);

/// Calls `body(index)` for every multi-index of `shape`, row-major.
void forEachIndex(llvm::ArrayRef<int64_t> shape,
                  llvm::function_ref<void(llvm::ArrayRef<int64_t>)> body);

/// Calls `visit(entry, tap)` for every entry of graph.conv_matrix's
/// [M * O..., C * D...] matrix of a weight [M, C, K...], row-major, with
/// the flat index into the weight of the tap it holds; an error if the
/// shapes do not fit or a pair reads outside the kernel.
llvm::Error forEachConvMatrixEntry(
    llvm::ArrayRef<int64_t> weight, llvm::ArrayRef<int64_t> input,
    llvm::ArrayRef<int64_t> output, llvm::ArrayRef<int64_t> strides,
    llvm::ArrayRef<int64_t> pads,
    llvm::function_ref<void(int64_t, int64_t)> visit);

} // namespace trainc::interpreter

#endif // TRAINC_LIB_INTERPRETER_KERNELS_H
