//===- PoolingKernels.cpp - max/avg/global pooling and their gradients ----===//
//
// Every kernel works one (n, c) plane per task. Max pooling selects the
// first maximal tap in row-major window order (a NaN wins), the element
// PyTorch's indices name; its gradient goes there. Average pooling divides
// by the interpreter's divisor (count_include_pad, ceil_mode). Backward
// kernels accumulate each plane in double, in the forward's window order.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

#include <limits>

namespace trainc::rt {
namespace {

// Max pooling runs on every training step: the loops below keep NaNs
// aside and select with max/cmov so that random data costs no branch
// mispredictions.

/// The input plane element max pooling selects at `position`: the first
/// maximal tap in row-major window order, a NaN winning (the last one, as
/// the interpreter's scan leaves it); -1 when every tap is padding.
template <typename T>
int64_t argmax(const Window &window, const int64_t *position, const T *plane) {
  int64_t first = -1, best = -1, nan = -1;
  T bestValue = -std::numeric_limits<T>::infinity();
  window.forEachTap(position, [&](int64_t, int64_t in) {
    T value = plane[in];
    first = first < 0 ? in : first; // predictable
    // Arithmetic, not a select the compiler could turn into a branch.
    best += (in - best) & -static_cast<int64_t>(bestValue < value);
    bestValue = std::max(bestValue, value); // NaN never wins here
    nan += (in - nan) & -static_cast<int64_t>(value != value);
  });
  // Every tap -inf: the first one.
  return nan >= 0 ? nan : best >= 0 ? best : first;
}

/// The value max pooling outputs at `position` (-inf for padding only).
template <typename T>
T maximum(const Window &window, const int64_t *position, const T *plane) {
  T best = -std::numeric_limits<T>::infinity();
  bool nan = false;
  window.forEachTap(position, [&](int64_t, int64_t in) {
    T value = plane[in];
    best = std::max(best, value);
    nan |= value != value;
  });
  return nan ? std::numeric_limits<T>::quiet_NaN() : best;
}

template <bool isMax>
bool poolKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  PoolShape pool;
  if (!checkPool(launch, isMax, /*backward=*/false, pool, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  const Window &window = pool.window;
  int64_t planes = input.shape[0] * input.shape[1];
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    T *y = static_cast<T *>(outputs[0]);
    int64_t work = planes * window.outputPlane * window.kernelSize;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t p = 0; p < planes; ++p) {
      const T *plane = x + p * window.inputPlane;
      T *out = y + p * window.outputPlane;
      int64_t position[kMaxSpatialRank] = {};
      for (int64_t o = 0; o < window.outputPlane;
           ++o, window.nextOutput(position)) {
        if constexpr (isMax) {
          // Padding is -inf: a window of padding only has no maximum above.
          out[o] = maximum(window, position, plane);
        } else {
          double sum = 0.0;
          window.forEachTap(position, [&](int64_t, int64_t in) {
            sum += static_cast<double>(plane[in]);
          });
          out[o] = static_cast<T>(
              sum / averagePoolDivisor(window, position, pool.countIncludePad));
        }
      }
    }
    return true;
  });
}

bool globalAvgPoolKernel(const Launch &launch, void *const *inputs,
                         void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  if (input.shape.size() < 3)
    return fail(launch, error,
                "expected an [N, C, D...] input, got " +
                    formatShape(input.shape));
  Shape shape(input.shape.size(), 1);
  shape[0] = input.shape[0];
  shape[1] = input.shape[1];
  if (!checkOutput(launch, 0, input.dtype, shape, error))
    return false;
  int64_t planes = shape[0] * shape[1];
  int64_t size =
      product(input.shape.data() + 2, input.shape.data() + input.shape.size());
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    T *y = static_cast<T *>(outputs[0]);
#pragma omp parallel for schedule(static) if (planes * size >=                 \
                                              kParallelElements)
    for (int64_t p = 0; p < planes; ++p) {
      double sum = 0.0;
      for (int64_t i = 0; i < size; ++i)
        sum += static_cast<double>(x[p * size + i]);
      y[p] = static_cast<T>(sum / static_cast<double>(size));
    }
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// Runs `body(plane, position, gradient, accumulator)` for every element of
/// grad_output, one input plane per task, then stores each plane's double
/// accumulator into grad_input.
template <typename T, typename Body>
void scatterPlanes(const Window &window, int64_t planes, const T *gradOutput,
                   T *gradInput, Body body) {
  std::vector<double> buffers(static_cast<size_t>(maxThreads()) *
                              window.inputPlane);
  int64_t work = planes * window.outputPlane * window.kernelSize;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
  for (int64_t p = 0; p < planes; ++p) {
    double *acc = buffers.data() + threadIndex() * window.inputPlane;
    std::fill(acc, acc + window.inputPlane, 0.0);
    const T *gradient = gradOutput + p * window.outputPlane;
    int64_t position[kMaxSpatialRank] = {};
    for (int64_t o = 0; o < window.outputPlane;
         ++o, window.nextOutput(position))
      body(p, position, static_cast<double>(gradient[o]), acc);
    T *out = gradInput + p * window.inputPlane;
    for (int64_t i = 0; i < window.inputPlane; ++i)
      out[i] = static_cast<T>(acc[i]);
  }
}

bool maxPoolBackwardKernel(const Launch &launch, void *const *inputs,
                           void *const *outputs, std::string &error) {
  PoolShape pool;
  if (!checkPool(launch, /*isMax=*/true, /*backward=*/true, pool, error))
    return false;
  const OperandInfo &input = launch.inputs[1];
  const Window &window = pool.window;
  int64_t planes = input.shape[0] * input.shape[1];
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[1]);
    scatterPlanes(
        window, planes, static_cast<const T *>(inputs[0]),
        static_cast<T *>(outputs[0]),
        [&](int64_t p, const int64_t *position, double gradient, double *acc) {
          int64_t best = argmax(window, position, x + p * window.inputPlane);
          if (best >= 0)
            acc[best] += gradient;
        });
    return true;
  });
}

bool avgPoolBackwardKernel(const Launch &launch, void *const *inputs,
                           void *const *outputs, std::string &error) {
  PoolShape pool;
  if (!checkPool(launch, /*isMax=*/false, /*backward=*/true, pool, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  const Window &window = pool.window;
  int64_t planes = pool.inputShape[0] * pool.inputShape[1];
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    scatterPlanes(
        window, planes, static_cast<const T *>(inputs[0]),
        static_cast<T *>(outputs[0]),
        [&](int64_t, const int64_t *position, double gradient, double *acc) {
          double share = gradient / averagePoolDivisor(window, position,
                                                       pool.countIncludePad);
          window.forEachTap(position,
                            [&](int64_t, int64_t in) { acc[in] += share; });
        });
    return true;
  });
}

} // namespace

void registerPoolingKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.max_pool", ref, poolKernel<true>);
  TRAINC_RT_REGISTER("graph.avg_pool", ref, poolKernel<false>);
  TRAINC_RT_REGISTER("graph.global_avg_pool", ref, globalAvgPoolKernel);
  TRAINC_RT_REGISTER("graph.max_pool_backward", ref, maxPoolBackwardKernel);
  TRAINC_RT_REGISTER("graph.avg_pool_backward", ref, avgPoolBackwardKernel);
}

} // namespace trainc::rt
