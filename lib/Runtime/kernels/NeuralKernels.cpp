//===- NeuralKernels.cpp - matmul, gemm, conv, normalization (reference) --===//
//
// The naive, always-correct kernels: products and statistics accumulate
// in double in the interpreter's order. Work is split over rows, output
// planes or channels, each computed by one thread.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {
namespace {

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

/// One row of op(A) * op(B) in double: acc[j] = sum_l a(l) * b(l, j).
template <typename T, typename A, typename B>
void productRow(int64_t k, int64_t n, A a, B b, double *acc) {
  std::fill(acc, acc + n, 0.0);
  for (int64_t l = 0; l < k; ++l) {
    double x = static_cast<double>(a(l));
    for (int64_t j = 0; j < n; ++j)
      acc[j] += x * static_cast<double>(b(l, j));
  }
}

bool matmulKernel(const Launch &launch, void *const *inputs,
                  void *const *outputs, std::string &error) {
  MatmulShape mm;
  if (!makeMatmulShape(launch, mm, error))
    return false;
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *lhs = static_cast<const T *>(inputs[0]);
    const T *rhs = static_cast<const T *>(inputs[1]);
    T *out = static_cast<T *>(outputs[0]);
    std::vector<double> buffers(static_cast<size_t>(maxThreads()) * mm.n);
    int64_t rows = mm.batch * mm.m;
#pragma omp parallel for schedule(static) if (rows * mm.n * mm.k >=            \
                                              kParallelElements)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t p = row / mm.m, i = row % mm.m;
      const T *x = lhs + (mm.lhsIndex[p] * mm.m + i) * mm.k;
      const T *y = rhs + mm.rhsIndex[p] * mm.k * mm.n;
      double *acc = buffers.data() + threadIndex() * mm.n;
      int64_t n = mm.n;
      productRow<T>(
          mm.k, n, [&](int64_t l) { return x[l]; },
          [&](int64_t l, int64_t j) { return y[l * n + j]; }, acc);
      for (int64_t j = 0; j < n; ++j)
        out[row * n + j] = static_cast<T>(acc[j]);
    }
    return true;
  });
}

bool gemmKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  GemmShape g;
  if (!makeGemmShape(launch, g, error))
    return false;
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *a = static_cast<const T *>(inputs[0]);
    const T *b = static_cast<const T *>(inputs[1]);
    const T *c = g.hasC ? static_cast<const T *>(inputs[2]) : nullptr;
    T *out = static_cast<T *>(outputs[0]);
    std::vector<double> buffers(static_cast<size_t>(maxThreads()) * g.n);
    int64_t m = g.m, n = g.n, k = g.k;
#pragma omp parallel for schedule(static) if (m * n * k >= kParallelElements)
    for (int64_t i = 0; i < m; ++i) {
      double *acc = buffers.data() + threadIndex() * n;
      productRow<T>(
          k, n,
          [&](int64_t l) { return g.transA ? a[l * m + i] : a[i * k + l]; },
          [&](int64_t l, int64_t j) {
            return g.transB ? b[j * k + l] : b[l * n + j];
          },
          acc);
      for (int64_t j = 0; j < n; ++j) {
        double value = g.alpha * acc[j];
        if (c)
          value += g.beta * static_cast<double>(
                                c[i * g.cStrides[0] + j * g.cStrides[1]]);
        out[i * n + j] = static_cast<T>(value);
      }
    }
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

bool convKernel(const Launch &launch, void *const *inputs, void *const *outputs,
                std::string &error) {
  ConvShape conv;
  if (!checkConv(launch, conv, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  bool hasBias = launch.inputs.size() == 3;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *w = static_cast<const T *>(inputs[1]);
    const T *bias = hasBias ? static_cast<const T *>(inputs[2]) : nullptr;
    T *y = static_cast<T *>(outputs[0]);
    const Window &win = conv.window;
    int64_t planes = conv.batch * conv.outChannels;
    int64_t work =
        planes * win.outputPlane * win.kernelSize * conv.groupChannels;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
      int64_t n = plane / conv.outChannels, m = plane % conv.outChannels;
      int64_t firstChannel = (m / conv.groupOutputs) * conv.groupChannels;
      const T *image = x + (n * conv.channels + firstChannel) * win.inputPlane;
      const T *filter = w + m * conv.groupChannels * win.kernelSize;
      T *out = y + plane * win.outputPlane;
      int64_t position[kMaxSpatialRank] = {};
      for (int64_t o = 0; o < win.outputPlane; ++o, win.nextOutput(position)) {
        double sum = bias ? static_cast<double>(bias[m]) : 0.0;
        win.forEachTap(position, [&](int64_t kernel, int64_t in) {
          for (int64_t c = 0; c < conv.groupChannels; ++c)
            sum += static_cast<double>(image[c * win.inputPlane + in]) *
                   static_cast<double>(filter[c * win.kernelSize + kernel]);
        });
        out[o] = static_cast<T>(sum);
      }
    }
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

bool batchNormTrainingKernel(const Launch &launch, void *const *inputs,
                             void *const *outputs, std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormTraining(launch, norm, error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  double epsilon = norm.epsilon, momentum = norm.momentum;
  int64_t channels = norm.channels, inner = norm.inner;
  int64_t batch = norm.batch, count = batch * inner;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *scale = static_cast<const T *>(inputs[1]);
    const T *bias = static_cast<const T *>(inputs[2]);
    const T *runningMean = static_cast<const T *>(inputs[3]);
    const T *runningVar = static_cast<const T *>(inputs[4]);
    T *y = static_cast<T *>(outputs[0]);
    T *newMean = static_cast<T *>(outputs[1]);
    T *newVar = static_cast<T *>(outputs[2]);
    double correction = static_cast<double>(count) / (count - 1);
#pragma omp parallel for schedule(static) if (count * channels >=              \
                                              kParallelElements)
    for (int64_t c = 0; c < channels; ++c) {
      // Two passes: the textbook E[(x - mean)^2], free of cancellation.
      double mean = 0.0, variance = 0.0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          mean += static_cast<double>(x[(n * channels + c) * inner + i]);
      mean /= static_cast<double>(count);
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          double centered = x[(n * channels + c) * inner + i] - mean;
          variance += centered * centered;
        }
      variance /= static_cast<double>(count);
      double inverseStd = 1.0 / std::sqrt(variance + epsilon);
      double gamma = scale[c], beta = bias[c];
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = (n * channels + c) * inner + i;
          y[at] = static_cast<T>((x[at] - mean) * inverseStd * gamma + beta);
        }
      // ONNX's momentum; the running variance takes the unbiased variance.
      newMean[c] =
          static_cast<T>(momentum * runningMean[c] + (1.0 - momentum) * mean);
      newVar[c] = static_cast<T>(momentum * runningVar[c] +
                                 (1.0 - momentum) * variance * correction);
    }
    return true;
  });
}

bool batchNormInferenceKernel(const Launch &launch, void *const *inputs,
                              void *const *outputs, std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormInference(launch, norm, error))
    return false;
  double epsilon = norm.epsilon;
  int64_t channels = norm.channels, inner = norm.inner;
  int64_t planes = launch.inputs[0].shape[0] * channels;
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *scale = static_cast<const T *>(inputs[1]);
    const T *bias = static_cast<const T *>(inputs[2]);
    const T *mean = static_cast<const T *>(inputs[3]);
    const T *var = static_cast<const T *>(inputs[4]);
    T *y = static_cast<T *>(outputs[0]);
#pragma omp parallel for schedule(static) if (planes * inner >=                \
                                              kParallelElements)
    for (int64_t plane = 0; plane < planes; ++plane) {
      int64_t c = plane % channels;
      double inverseStd =
          1.0 / std::sqrt(static_cast<double>(var[c]) + epsilon);
      for (int64_t i = 0; i < inner; ++i) {
        int64_t at = plane * inner + i;
        y[at] = static_cast<T>((x[at] - static_cast<double>(mean[c])) *
                                   inverseStd * scale[c] +
                               bias[c]);
      }
    }
    return true;
  });
}

bool layerNormKernel(const Launch &launch, void *const *inputs,
                     void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 3, 1, 1, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  double epsilon = attributes.real("epsilon");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &input = launch.inputs[0];
  int64_t rank = static_cast<int64_t>(input.shape.size());
  if (axis < 0 || axis >= rank)
    return fail(launch, error, "layer norm axis is out of range");
  Shape normalized(input.shape.begin() + axis, input.shape.end());
  for (size_t i = 1; i < launch.inputs.size(); ++i) {
    if (launch.inputs[i].dtype != input.dtype)
      return fail(launch, error, "operands have different element types");
    if (!checkShape(launch, launch.inputs[i], normalized,
                    i == 1 ? "scale" : "bias", error))
      return false;
  }
  if (!checkOutput(launch, 0, input.dtype, input.shape, error))
    return false;
  int64_t size = product(normalized);
  int64_t rows = size == 0 ? 0 : input.numElements() / size;
  bool hasBias = launch.inputs.size() == 3;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *x = static_cast<const T *>(inputs[0]);
    const T *scale = static_cast<const T *>(inputs[1]);
    const T *bias = hasBias ? static_cast<const T *>(inputs[2]) : nullptr;
    T *y = static_cast<T *>(outputs[0]);
#pragma omp parallel for schedule(static) if (rows * size >= kParallelElements)
    for (int64_t row = 0; row < rows; ++row) {
      const T *in = x + row * size;
      double mean = 0.0, variance = 0.0;
      for (int64_t j = 0; j < size; ++j)
        mean += static_cast<double>(in[j]);
      mean /= static_cast<double>(size);
      for (int64_t j = 0; j < size; ++j)
        variance += (in[j] - mean) * (in[j] - mean);
      variance /= static_cast<double>(size);
      double inverseStd = 1.0 / std::sqrt(variance + epsilon);
      for (int64_t j = 0; j < size; ++j)
        y[row * size + j] = static_cast<T>(
            (in[j] - mean) * inverseStd * scale[j] + (bias ? bias[j] : 0.0));
    }
    return true;
  });
}

} // namespace

void registerNeuralKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.matmul", ref, matmulKernel);
  TRAINC_RT_REGISTER("graph.gemm", ref, gemmKernel);
  TRAINC_RT_REGISTER("graph.conv", ref, convKernel);
  TRAINC_RT_REGISTER("graph.batch_norm_training", ref, batchNormTrainingKernel);
  TRAINC_RT_REGISTER("graph.batch_norm_inference", ref,
                     batchNormInferenceKernel);
  TRAINC_RT_REGISTER("graph.layer_norm", ref, layerNormKernel);
}

} // namespace trainc::rt
