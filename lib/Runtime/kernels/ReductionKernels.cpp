//===- ReductionKernels.cpp - reduce_sum/mean/max, softmax, log_softmax ---===//
//
// Each output element is reduced by one thread in row-major order of the
// reduced dims (a full reduction to one element uses fixed-size blocks
// added in order instead), so results do not depend on the thread count.
// Float sums accumulate in double.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include <limits>

namespace trainc::rt {
namespace {

enum class Reduce { Sum, Mean, Max };

/// One output element: the reduced elements at base + the loop's offsets.
template <Reduce kind, typename T>
T reduceOne(const T *x, const StridedLoop &reduced, int64_t count) {
  if constexpr (kind == Reduce::Max) {
    bool empty = true;
    T best{};
    reduced.runSerial([&](const StridedLoop::Offsets &at,
                          const StridedLoop::Offsets &step, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        T value = x[at[0] + i * step[0]];
        bool nan = false;
        if constexpr (isFloat<T>())
          nan = std::isnan(value);
        if (empty || nan || value > best) // NaN wins, as in numpy
          best = value;
        empty = false;
      }
    });
    return empty ? fromDouble<T>(-std::numeric_limits<double>::infinity())
                 : best;
  } else if constexpr (isFloat<T>()) {
    double sum = 0.0;
    reduced.runSerial([&](const StridedLoop::Offsets &at,
                          const StridedLoop::Offsets &step, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        sum += static_cast<double>(x[at[0] + i * step[0]]);
    });
    return static_cast<T>(
        kind == Reduce::Mean ? sum / static_cast<double>(count) : sum);
  } else {
    uint64_t sum = 0; // wraps like the integer type
    reduced.runSerial([&](const StridedLoop::Offsets &at,
                          const StridedLoop::Offsets &step, int64_t n) {
      for (int64_t i = 0; i < n; ++i)
        sum +=
            static_cast<uint64_t>(static_cast<int64_t>(x[at[0] + i * step[0]]));
    });
    int64_t total = static_cast<int64_t>(sum);
    if (kind == Reduce::Mean)
      return fromDouble<T>(static_cast<double>(total) /
                           static_cast<double>(count));
    return fromInteger<T>(total);
  }
}

template <Reduce kind>
bool reduceKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape axes = attributes.integers("axes");
  bool keepdims = attributes.flag("keepdims", true);
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  int64_t rank = static_cast<int64_t>(input.shape.size());
  std::vector<bool> isReduced(rank, false);
  for (int64_t axis : axes) {
    if (axis < 0 || axis >= rank || isReduced[axis])
      return fail(launch, error,
                  "reduction axes must be unique and in [0, " +
                      std::to_string(rank) + ")");
    isReduced[axis] = true;
  }
  Shape strides = stridesOf(input.shape);
  Shape outputShape, keptShape, keptStrides, reducedShape, reducedStrides;
  for (int64_t d = 0; d < rank; ++d) {
    if (isReduced[d]) {
      reducedShape.push_back(input.shape[d]);
      reducedStrides.push_back(strides[d]);
      if (keepdims)
        outputShape.push_back(1);
    } else {
      keptShape.push_back(input.shape[d]);
      keptStrides.push_back(strides[d]);
      outputShape.push_back(input.shape[d]);
    }
  }
  if (!checkOutput(launch, 0, input.dtype, outputShape, error))
    return false;
  int64_t outputs_ = product(keptShape), count = product(reducedShape);
  StridedLoop reduced(reducedShape, {reducedStrides});
  return withNumber(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    T *y = static_cast<T *>(outputs[0]);
    if constexpr (isFloat<T>() && kind != Reduce::Max) {
      if (outputs_ == 1) { // everything: blocks added in a fixed order
        double sum = deterministicSum(
            count, [&](int64_t i) { return static_cast<double>(x[i]); });
        y[0] = static_cast<T>(
            kind == Reduce::Mean ? sum / static_cast<double>(count) : sum);
        return true;
      }
    }
    int64_t work = outputs_ * count;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t o = 0; o < outputs_; ++o) {
      int64_t base = 0, rest = o;
      for (int64_t d = static_cast<int64_t>(keptShape.size()) - 1; d >= 0;
           --d) {
        base += (rest % keptShape[d]) * keptStrides[d];
        rest /= keptShape[d];
      }
      y[o] = reduceOne<kind>(x + base, reduced, count);
    }
    return true;
  });
}

/// The rows along `axis` of a row-major tensor: row r (of outer * inner)
/// starts at base(r) and steps by `inner`.
struct AxisRows {
  int64_t outer = 1, size = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t row) const {
    return (row / inner) * size * inner + row % inner;
  }
};

/// `rows` of `shape` along `axis`; fails naming the launch when the axis
/// is out of range.
bool axisRows(const Launch &launch, const Shape &shape, int64_t axis,
              AxisRows &rows, std::string &error) {
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    return fail(launch, error,
                "axis " + std::to_string(axis) + " is out of range for " +
                    formatShape(shape));
  rows.outer = product(shape.data(), shape.data() + axis);
  rows.size = shape[axis];
  rows.inner = product(shape.data() + axis + 1, shape.data() + shape.size());
  return true;
}

/// graph.argmax along `axis`: the first (with select_last_index, last)
/// largest element of each row (outer, inner); a NaN is larger than any
/// number.
bool argMaxKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  bool keepdims = attributes.flag("keepdims", true);
  bool last = attributes.flag("select_last_index", false);
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  const Shape &shape = input.shape;
  AxisRows rows;
  if (!axisRows(launch, shape, axis, rows, error))
    return false;
  Shape outputShape = shape;
  if (keepdims)
    outputShape[axis] = 1;
  else
    outputShape.erase(outputShape.begin() + axis);
  if (!checkOutput(launch, 0, DType::I64, outputShape, error))
    return false;
  int64_t size = rows.size, inner = rows.inner;
  return withNumber(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    int64_t *y = static_cast<int64_t *>(outputs[0]);
#pragma omp parallel for schedule(static) if (rows.count() * size >= kParallelElements)
    for (int64_t row = 0; row < rows.count(); ++row) {
      const T *in = x + rows.base(row);
      int64_t best = 0;
      for (int64_t k = 1; k < size; ++k) {
        T value = in[k * inner], largest = in[best * inner];
        bool better = value > largest || (last && value == largest);
        if constexpr (isFloat<T>()) {
          if (std::isnan(largest))
            better = last && std::isnan(value);
          else if (std::isnan(value))
            better = true;
        }
        if (better)
          best = k;
      }
      y[row] = size > 0 ? best : 0;
    }
    return true;
  });
}

/// softmax / log_softmax along `axis`: one row (outer, inner) per task.
template <bool logarithm>
bool softmaxKernel(const Launch &launch, void *const *inputs,
                   void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  const Shape &shape = input.shape;
  AxisRows rows;
  if (!axisRows(launch, shape, axis, rows, error) ||
      !checkOutput(launch, 0, input.dtype, shape, error))
    return false;
  int64_t size = rows.size, inner = rows.inner;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    T *y = static_cast<T *>(outputs[0]);
#pragma omp parallel for schedule(static) if (rows.count() * size >= kParallelElements)
    for (int64_t row = 0; row < rows.count(); ++row) {
      int64_t base = rows.base(row);
      const T *in = x + base;
      T *out = y + base;
      T max = -std::numeric_limits<T>::infinity();
      for (int64_t k = 0; k < size; ++k)
        max = std::max(max, in[k * inner]);
      double sum = 0.0;
      for (int64_t k = 0; k < size; ++k)
        sum += static_cast<double>(std::exp(in[k * inner] - max));
      double logSum = std::log(sum);
      // Reads every element of the row before writing it (in place is fine).
      for (int64_t k = 0; k < size; ++k) {
        T shifted = in[k * inner] - max;
        out[k * inner] =
            logarithm
                ? static_cast<T>(static_cast<double>(shifted) - logSum)
                : static_cast<T>(static_cast<double>(std::exp(shifted)) / sum);
      }
    }
    return true;
  });
}

} // namespace

void registerReductionKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.reduce_sum", ref, reduceKernel<Reduce::Sum>);
  TRAINC_RT_REGISTER("graph.reduce_mean", ref, reduceKernel<Reduce::Mean>);
  TRAINC_RT_REGISTER("graph.reduce_max", ref, reduceKernel<Reduce::Max>);
  TRAINC_RT_REGISTER("graph.argmax", ref, argMaxKernel);
  TRAINC_RT_REGISTER("graph.softmax", ref, softmaxKernel<false>);
  TRAINC_RT_REGISTER("graph.log_softmax", ref, softmaxKernel<true>);
}

} // namespace trainc::rt
