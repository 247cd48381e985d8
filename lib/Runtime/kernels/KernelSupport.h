//===- KernelSupport.h - what every runtime kernel shares ------*- C++ -*-===//
//
// Helpers of the kernel library (plain C++17, no MLIR): error reporting
// that names the op, strict attribute reading, operand checks, element
// types, strided/broadcast loops and conv/pool windows.
//
// Threading contract: every parallel loop splits work so that each output
// element is computed by exactly one thread in a fixed order, or partial
// results are combined in a fixed order; results are bit-identical for any
// OpenMP thread count. Nothing here throws inside a parallel region (all
// buffers are allocated before it).
//
// Aliasing: outputs of elementwise ops, optimizer updates and the running
// statistics of batch_norm_training may alias the corresponding input
// (buffer donation); every other op needs outputs distinct from inputs.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_KERNELS_KERNELSUPPORT_H
#define TRAINC_LIB_RUNTIME_KERNELS_KERNELSUPPORT_H

#include "lib/Runtime/Launch.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace trainc::rt {

using Shape = std::vector<int64_t>;

/// Loops over fewer elements than this run on one thread.
constexpr int64_t kParallelElements = 1 << 15;
/// Spatial dims a conv/pool window may have.
constexpr size_t kMaxSpatialRank = 6;

//===----------------------------------------------------------------------===//
// Errors and checks
//===----------------------------------------------------------------------===//

/// Sets `error` to "<op>: <message>" and returns false.
bool fail(const Launch &launch, std::string &error, const std::string &message);

std::string formatShape(const Shape &shape);
int64_t product(const Shape &shape);
int64_t product(const int64_t *begin, const int64_t *end);
Shape stridesOf(const Shape &shape);

/// Checks the operand counts (inclusive ranges).
bool checkArity(const Launch &launch, size_t minInputs, size_t maxInputs,
                size_t minOutputs, size_t maxOutputs, std::string &error);
/// Checks that output `index` has `dtype` and `shape`.
bool checkOutput(const Launch &launch, size_t index, DType dtype,
                 const Shape &shape, std::string &error);
/// Checks that `operand` (named `what`) has `shape`.
bool checkShape(const Launch &launch, const OperandInfo &operand,
                const Shape &shape, const std::string &what,
                std::string &error);
/// Checks that `operand` (named `what`) is a one-element tensor.
bool checkScalar(const Launch &launch, const OperandInfo &operand,
                 const std::string &what, std::string &error);

/// Reads attributes strictly; remembers the first problem (a missing
/// required attribute or a malformed value) for ok().
class Attributes {
public:
  explicit Attributes(const Launch &launch) : launch(launch) {}

  int64_t integer(const std::string &name);
  int64_t integer(const std::string &name, int64_t defaultValue);
  std::optional<int64_t> optionalInteger(const std::string &name);
  Shape integers(const std::string &name);
  double real(const std::string &name);
  double real(const std::string &name, double defaultValue);
  std::optional<double> optionalReal(const std::string &name);
  bool flag(const std::string &name, bool defaultValue);
  std::string string(const std::string &name, const std::string &defaultValue);
  std::string string(const std::string &name);

  /// False (with `error` set, naming the op) after any problem.
  bool ok(std::string &error) const;

private:
  const std::string *lookup(const std::string &name, bool required);
  void problem(const std::string &message);

  const Launch &launch;
  std::string firstProblem;
};

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// Calls f(T{}) with T = float or double for f32/f64; fails otherwise.
template <typename F>
bool withFloat(const Launch &launch, DType dtype, std::string &error, F &&f) {
  switch (dtype) {
  case DType::F32:
    return f(float{});
  case DType::F64:
    return f(double{});
  default:
    return fail(launch, error,
                std::string("element type ") + dtypeName(dtype) +
                    " is not supported (f32, f64)");
  }
}

/// Calls f(T{}) with the storage type of any numeric dtype but f16/bf16:
/// float, double, int64_t, int32_t, int16_t, int8_t, uint8_t (i1).
template <typename F>
bool withNumber(const Launch &launch, DType dtype, std::string &error, F &&f) {
  switch (dtype) {
  case DType::F32:
    return f(float{});
  case DType::F64:
    return f(double{});
  case DType::I64:
    return f(int64_t{});
  case DType::I32:
    return f(int32_t{});
  case DType::I16:
    return f(int16_t{});
  case DType::I8:
    return f(int8_t{});
  case DType::I1:
    return f(uint8_t{});
  default:
    return fail(launch, error,
                std::string("element type ") + dtypeName(dtype) +
                    " is not supported here");
  }
}

/// Calls f(T{}) with an unsigned type of the dtype's size: data movement.
template <typename F>
bool withBits(const Launch &launch, DType dtype, std::string &error, F &&f) {
  switch (dtypeSize(dtype)) {
  case 1:
    return f(uint8_t{});
  case 2:
    return f(uint16_t{});
  case 4:
    return f(uint32_t{});
  case 8:
    return f(uint64_t{});
  default:
    return fail(launch, error, "unsupported element size");
  }
}

/// Class-index operands (labels, gather indices): i32 or i64.
bool isIndexType(DType dtype);
/// Element `i` of an i32/i64 buffer.
inline int64_t indexAt(const void *data, DType dtype, int64_t i) {
  return dtype == DType::I64 ? static_cast<const int64_t *>(data)[i]
                             : static_cast<const int32_t *>(data)[i];
}

template <typename T> constexpr bool isFloat() {
  return std::is_same<T, float>::value || std::is_same<T, double>::value;
}
/// i1 is stored as uint8_t (0 or 1).
template <typename T> constexpr bool isBool() {
  return std::is_same<T, uint8_t>::value;
}

/// Truncates toward zero into int64, saturating and mapping NaN to 0 (the
/// interpreter's rule; no out-of-range conversion is undefined).
inline int64_t truncateToInt64(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 9223372036854775807.0)
    return INT64_MAX;
  if (value <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(value);
}

/// Converts an integer to storage type T: narrow integers wrap, i1 is
/// "non-zero", floats round to nearest.
template <typename T> inline T fromInteger(int64_t value) {
  if constexpr (isBool<T>())
    return value != 0;
  else if constexpr (isFloat<T>())
    return static_cast<T>(static_cast<double>(value));
  else
    return static_cast<T>(
        static_cast<typename std::make_unsigned<T>::type>(value));
}

/// Converts a double to storage type T as graph.cast does.
template <typename T> inline T fromDouble(double value) {
  if constexpr (isBool<T>())
    return value != 0.0;
  else if constexpr (isFloat<T>())
    return static_cast<T>(value);
  else
    return fromInteger<T>(truncateToInt64(value));
}

/// Converts storage type From to storage type To as graph.cast does.
template <typename To, typename From> inline To convertElement(From value) {
  if constexpr (isFloat<From>())
    return fromDouble<To>(static_cast<double>(value));
  else
    return fromInteger<To>(static_cast<int64_t>(value));
}

//===----------------------------------------------------------------------===//
// Parallel helpers
//===----------------------------------------------------------------------===//

inline int maxThreads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}
inline int threadIndex() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/// Sum of f(i) for i in [0, n) in double, in blocks of a fixed size whose
/// partial sums are added in order: the same bits for any thread count.
template <typename F> double deterministicSum(int64_t n, F f) {
  constexpr int64_t kBlock = 4096;
  int64_t blocks = (n + kBlock - 1) / kBlock;
  if (blocks <= 1) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i)
      sum += f(i);
    return sum;
  }
  std::vector<double> partial(blocks, 0.0);
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
  for (int64_t b = 0; b < blocks; ++b) {
    double sum = 0.0;
    int64_t end = std::min(n, (b + 1) * kBlock);
    for (int64_t i = b * kBlock; i < end; ++i)
      sum += f(i);
    partial[b] = sum;
  }
  double sum = 0.0;
  for (double value : partial)
    sum += value;
  return sum;
}

//===----------------------------------------------------------------------===//
// Shapes, broadcasting and strided loops
//===----------------------------------------------------------------------===//

/// numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b);
/// Strides that read `operand` broadcast to `result` (0 on broadcast dims).
Shape broadcastStrides(const Shape &result, const Shape &operand);

/// A row-major loop over `shape` that tracks one element offset per
/// operand (up to 4, each with its own per-dim strides of any sign; 0
/// broadcasts). Adjacent dims are collapsed where every operand allows, so
/// the innermost run is as long as possible.
class StridedLoop {
public:
  static constexpr size_t kMaxOperands = 4;
  using Offsets = std::array<int64_t, kMaxOperands>;

  StridedLoop(const Shape &shape, const std::vector<Shape> &strides,
              const std::vector<int64_t> &bases = {});

  int64_t size() const { return total; }
  /// Calls body(offsets, steps, count) for every innermost run: operand k
  /// reads elements offsets[k] + i * steps[k] for i < count. Runs go to
  /// several threads when the loop has at least `minParallel` elements.
  template <typename Body>
  void run(Body body, int64_t minParallel = kParallelElements) const {
    if (total == 0)
      return;
    int64_t inner = shape.empty() ? 1 : shape.back();
    int64_t rows = total / inner;
    Offsets steps{};
    for (size_t k = 0; k < operands; ++k)
      steps[k] = shape.empty() ? 0 : strides[k].back();
    // Long rows are cut into chunks so that few rows still go parallel.
    constexpr int64_t kChunk = 1 << 14;
    int64_t chunks = (inner + kChunk - 1) / kChunk;
    int64_t tasks = rows * chunks;
#pragma omp parallel for schedule(static) if (total >= minParallel && tasks > 1)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t begin = (task % chunks) * kChunk;
      Offsets offsets = rowOffsets(task / chunks);
      for (size_t k = 0; k < operands; ++k)
        offsets[k] += begin * steps[k];
      body(offsets, steps, std::min(kChunk, inner - begin));
    }
  }

  /// Like run(), on the calling thread only, in row-major order.
  template <typename Body> void runSerial(Body body) const {
    if (total == 0)
      return;
    int64_t inner = shape.empty() ? 1 : shape.back();
    int64_t rows = total / inner;
    Offsets steps{};
    for (size_t k = 0; k < operands; ++k)
      steps[k] = shape.empty() ? 0 : strides[k].back();
    for (int64_t row = 0; row < rows; ++row)
      body(rowOffsets(row), steps, inner);
  }

private:
  Offsets rowOffsets(int64_t row) const {
    Offsets offsets = bases;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) {
      int64_t index = row % shape[d];
      row /= shape[d];
      for (size_t k = 0; k < operands; ++k)
        offsets[k] += index * strides[k][d];
    }
    return offsets;
  }

  Shape shape;
  std::vector<Shape> strides;
  Offsets bases{};
  size_t operands = 0;
  int64_t total = 0;
};

//===----------------------------------------------------------------------===//
// Windows of conv and pooling
//===----------------------------------------------------------------------===//

/// Output size of one windowed dim (ONNX/PyTorch; ceil_mode never starts a
/// window in the end padding); nullopt when the window does not fit.
std::optional<int64_t> windowOutputSize(int64_t input, int64_t kernel,
                                        int64_t stride, int64_t padBegin,
                                        int64_t padEnd, int64_t dilation,
                                        bool ceilMode);

/// A conv/pool window over the spatial dims of [N, C, D...].
struct Window {
  size_t rank = 0;
  Shape kernel, strides, padsBegin, padsEnd, dilations;
  Shape inputSpatial, outputSpatial;
  Shape inputStrides, kernelStrides; ///< row-major, per spatial dim
  int64_t inputPlane = 1, outputPlane = 1, kernelSize = 1;

  /// Calls f(kernelFlat, inputFlat) for every tap of the window at output
  /// position `output` (a spatial multi-index) inside the input, in
  /// row-major kernel order (taps in the padding are skipped).
  template <typename F> void forEachTap(const int64_t *output, F &&f) const {
    int64_t low[kMaxSpatialRank], high[kMaxSpatialRank], start[kMaxSpatialRank],
        k[kMaxSpatialRank];
    for (size_t d = 0; d < rank; ++d) {
      int64_t dilation = dilations[d]; // divisions only when dilated
      start[d] = output[d] * strides[d] - padsBegin[d];
      low[d] = start[d] >= 0   ? 0
               : dilation == 1 ? -start[d]
                               : (-start[d] + dilation - 1) / dilation;
      int64_t room = inputSpatial[d] - 1 - start[d];
      high[d] = room < 0
                    ? 0
                    : std::min(kernel[d],
                               (dilation == 1 ? room : room / dilation) + 1);
      if (low[d] >= high[d])
        return;
      k[d] = low[d];
    }
    if (rank == 1) {
      for (int64_t k0 = low[0]; k0 < high[0]; ++k0)
        f(k0, start[0] + k0 * dilations[0]);
      return;
    }
    if (rank == 2) { // the common case, without the odometer
      for (int64_t k0 = low[0]; k0 < high[0]; ++k0) {
        int64_t row = (start[0] + k0 * dilations[0]) * inputStrides[0];
        for (int64_t k1 = low[1]; k1 < high[1]; ++k1)
          f(k0 * kernel[1] + k1, row + start[1] + k1 * dilations[1]);
      }
      return;
    }
    while (true) {
      int64_t kernelFlat = 0, inputFlat = 0;
      for (size_t d = 0; d < rank; ++d) {
        kernelFlat += k[d] * kernelStrides[d];
        inputFlat += (start[d] + k[d] * dilations[d]) * inputStrides[d];
      }
      f(kernelFlat, inputFlat);
      int64_t d = static_cast<int64_t>(rank) - 1;
      for (; d >= 0; --d) {
        if (++k[d] < high[d])
          break;
        k[d] = low[d];
      }
      if (d < 0)
        return;
    }
  }

  /// The spatial multi-index of flat output position `flat`.
  void unravelOutput(int64_t flat, int64_t *index) const {
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      index[d] = flat % outputSpatial[d];
      flat /= outputSpatial[d];
    }
  }
  /// Advances a spatial output multi-index by one position (row-major).
  void nextOutput(int64_t *index) const {
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      if (++index[d] < outputSpatial[d])
        return;
      index[d] = 0;
    }
  }
};

/// Builds the window of a conv/pool op on an input of `inputShape`
/// ([N, C, D...]): checks the attribute lengths and values, computes the
/// output spatial shape. `pads` holds begin pads then end pads.
bool makeWindow(const Launch &launch, const Shape &inputShape,
                const Shape &kernel, const Shape &strides, const Shape &pads,
                const Shape &dilations, bool ceilMode, Window &window,
                std::string &error);

/// Average pooling's divisor at `output` (PyTorch's rule, as the
/// interpreter): with count_include_pad the window clipped to input + pads,
/// otherwise the number of taps inside the input.
double averagePoolDivisor(const Window &window, const int64_t *output,
                          bool countIncludePad);

/// The conv geometry shared by the forward and both backward kernels.
struct ConvShape {
  Window window;
  int64_t batch = 0, channels = 0, outChannels = 0, group = 1;
  int64_t groupChannels = 0; ///< C / group (weight dim 1)
  int64_t groupOutputs = 0;  ///< M / group
  Shape inputShape, weightShape, outputShape;
};
/// Reads strides/pads/dilations/group and checks input/weight/output shapes.
bool makeConvShape(const Launch &launch, const Shape &inputShape,
                   const Shape &weightShape, ConvShape &conv,
                   std::string &error);
/// Reads and checks a conv launch (input, weight, optional bias): arity,
/// shapes, equal element types, the result. Shared by every backend.
bool checkConv(const Launch &launch, ConvShape &conv, std::string &error);
/// Reads and checks a conv_backward_input launch (grad_output, weight;
/// `input_shape`) or a conv_backward_weight launch (grad_output, input;
/// `weight_shape`): arity, shapes against the forward conv, the result,
/// equal element types. Shared by every backend.
bool checkConvBackwardInput(const Launch &launch, ConvShape &conv,
                            std::string &error);
bool checkConvBackwardWeight(const Launch &launch, ConvShape &conv,
                             std::string &error);

/// The geometry of max_pool / avg_pool and their gradients.
struct PoolShape {
  Window window;
  bool ceilMode = false, countIncludePad = false;
  Shape inputShape, outputShape; ///< [N, C, D...] of the forward op
};
/// Reads and checks a pooling launch: max_pool / avg_pool (input) or their
/// backward ops (`backward`: max_pool_backward takes grad_output and input,
/// avg_pool_backward grad_output and `input_shape`): the window attributes
/// (dilations for max pooling only), arity, shapes, element types and the
/// result. Shared by every backend.
bool checkPool(const Launch &launch, bool isMax, bool backward,
               PoolShape &pool, std::string &error);

/// The [N, C, inner...] geometry and attributes of a batch norm launch.
struct BatchNormShape {
  int64_t batch = 0, channels = 0, inner = 1;
  double epsilon = 0.0, momentum = 0.0;
};
/// Reads and checks batch_norm_training (x, scale, bias, running mean and
/// variance -> y, new mean, new variance), batch_norm_inference (x, scale,
/// bias, mean, var -> y) and batch_norm_training_backward (grad_output, x,
/// scale -> grad x, grad scale, grad bias). Shared by every backend.
bool checkBatchNormTraining(const Launch &launch, BatchNormShape &norm,
                            std::string &error);
bool checkBatchNormInference(const Launch &launch, BatchNormShape &norm,
                             std::string &error);
bool checkBatchNormBackward(const Launch &launch, BatchNormShape &norm,
                            std::string &error);

//===----------------------------------------------------------------------===//
// Matrix products (reference and OpenBLAS kernels)
//===----------------------------------------------------------------------===//

/// graph.matmul with numpy semantics: batch p multiplies lhs matrix
/// lhsIndex[p] [m, k] by rhs matrix rhsIndex[p] [k, n] into output p.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0, batch = 1;
  std::vector<int64_t> lhsIndex, rhsIndex;
  Shape outputShape;
};
bool makeMatmulShape(const Launch &launch, MatmulShape &matmul,
                     std::string &error);
/// Whether matmul operand `index` is stored with its last two dims swapped
/// (`lhs_perm` / `rhs_perm` = `option`, set by --trainc-fold-transposes: a
/// BLAS reads such an operand transposed); `shape` becomes the operand's
/// logical shape. Other permutations are an error.
bool transposedOperand(const Launch &launch, unsigned index, const char *option,
                       Shape &shape, bool &transposed, std::string &error);

/// graph.gemm: alpha * op(a) [m, k] * op(b) [k, n] + beta * c.
struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  bool transA = false, transB = false, hasC = false;
  double alpha = 1.0, beta = 1.0;
  Shape cStrides; ///< c broadcast to [m, n]
};
bool makeGemmShape(const Launch &launch, GemmShape &gemm, std::string &error);

//===----------------------------------------------------------------------===//
// Gather and slice geometry (forward and backward kernels)
//===----------------------------------------------------------------------===//

/// gather(data, indices, axis) viewed as [outer, axisSize, inner] data
/// read at `count` indices: output [outer, count, inner].
struct GatherShape {
  int64_t outer = 1, axisSize = 0, count = 0, inner = 1;
  Shape outputShape; ///< data[:axis] + indices + data[axis+1:]
  /// Index j, negative values counted from the end (checked in range).
  int64_t position(const void *indices, DType dtype, int64_t j) const {
    int64_t value = indexAt(indices, dtype, j);
    return value < 0 ? value + axisSize : value;
  }
};
/// Checks the axis, the index dtype and every index against the data.
bool makeGatherShape(const Launch &launch, const Shape &dataShape,
                     const OperandInfo &indices, const void *indexData,
                     int64_t axis, GatherShape &gather, std::string &error);

/// gather_elements along `axis`: for each element of the indices (and of
/// the output, shaped alike) the flat position in the data it reads.
/// Checks the ranks, the extents off the axis, the index dtype and every
/// index against the data.
bool gatherElementsSources(const Launch &launch, const Shape &dataShape,
                           const OperandInfo &indices, const void *indexData,
                           int64_t axis, std::vector<int64_t> &sources,
                           std::string &error);

/// The result shape of a normalized slice (TensorKernels.cpp).
bool sliceGeometry(const Launch &launch, const Shape &inputShape,
                   const Shape &starts, const Shape &ends, const Shape &steps,
                   Shape &shape, std::string &error);
/// Operand 0 walks the sliced `shape` densely, operand 1 the selected
/// elements of a dense tensor of `fullShape`.
StridedLoop sliceWalk(const Shape &shape, const Shape &fullShape,
                      const Shape &starts, const Shape &steps);

//===----------------------------------------------------------------------===//
// Registration (one function per family, called by Kernels.cpp)
//===----------------------------------------------------------------------===//

/// Registers `kernel` wrapped so that a C++ exception (bad_alloc) becomes
/// a false return with a message instead of escaping into generated code.
template <KernelFunction kernel>
bool guardedKernel(const Launch &launch, void *const *inputs,
                   void *const *outputs, std::string &error) {
  try {
    return kernel(launch, inputs, outputs, error);
  } catch (const std::exception &exception) {
    return fail(launch, error, exception.what());
  } catch (...) {
    return fail(launch, error, "unknown exception");
  }
}
#define TRAINC_RT_REGISTER(op, backend, kernel)                                \
  ::trainc::rt::registerKernel(op, backend,                                    \
                               &::trainc::rt::guardedKernel<kernel>)

void registerElementwiseKernels();
void registerReductionKernels();
void registerTensorKernels();
void registerNeuralKernels();
void registerPoolingKernels();
void registerBackwardKernels();
void registerLossKernels();
void registerOptimizerKernels();
/// Defined in libtrainc_rt_mpi.a (MpiKernels.cpp); null where a library
/// does not link it.
void registerMpiKernels() __attribute__((weak));
void registerOpenBlasKernels();
void registerOpenBlasConvKernels();
void registerDnnlKernels();
void registerDnnlConvKernels();

} // namespace trainc::rt

#endif // TRAINC_LIB_RUNTIME_KERNELS_KERNELSUPPORT_H
