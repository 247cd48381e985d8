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
// A convolution's weight as a matrix (graph.conv_matrix) and its gradient
//===----------------------------------------------------------------------===//

/// The geometry of a graph.conv_matrix launch: weight [M, C, K...], the
/// matrix [M * O..., C * D...], and the kernel tap of each (o, i) pair.
struct ConvMatrix {
  Shape weight, matrix;
  int64_t outputs = 1, inputs = 1, taps = 1;
  std::vector<int64_t> tapOf; ///< [o * inputs + i], flat in the kernel
};

bool convMatrixGeometry(const Launch &launch, Shape weight, ConvMatrix &g,
                        std::string &error) {
  Attributes attributes(launch);
  Shape input = attributes.integers("input_spatial");
  Shape output = attributes.integers("output_spatial");
  Shape strides = attributes.integers("strides");
  Shape pads = attributes.integers("pads");
  if (!attributes.ok(error))
    return false;
  size_t spatial = input.size();
  if (spatial == 0 || weight.size() != spatial + 2 ||
      output.size() != spatial || strides.size() != spatial ||
      pads.size() != spatial)
    return fail(launch, error,
                "needs a weight [M, C, K...] and one input size, output "
                "size, stride and pad per spatial dim");
  g.weight = weight;
  g.outputs = product(output);
  g.inputs = product(input);
  g.taps = product(weight.data() + 2, weight.data() + weight.size());
  g.matrix = {weight[0] * g.outputs, weight[1] * g.inputs};
  for (int64_t o = 0; o < g.outputs; ++o)
    for (int64_t i = 0; i < g.inputs; ++i) {
      int64_t tap = 0, oRest = o, iRest = i, scale = 1;
      for (size_t d = spatial; d-- > 0;) {
        int64_t t = iRest % input[d] - oRest % output[d] * strides[d] + pads[d];
        if (t < 0 || t >= weight[d + 2])
          return fail(launch, error,
                      "an output position reads an input position outside "
                      "the kernel");
        tap += t * scale;
        scale *= weight[d + 2];
        oRest /= output[d];
        iRest /= input[d];
      }
      g.tapOf.push_back(tap);
    }
  return true;
}

/// The taps of 3x3 windows with padding 1 over 2x2 planes, [o][i] (the
/// geometry of ResNet's and DenseNet's last stages on small images):
/// with every index a constant, a channel's 9 weights or 9 sums stay in
/// registers.
constexpr int64_t kSmallPlaneTaps[16] = {4, 5, 7, 8, 3, 4, 6, 7,
                                         1, 2, 4, 5, 0, 1, 3, 4};
bool isSmallPlane(const ConvMatrix &g) {
  return g.outputs == 4 && g.inputs == 4 && g.taps == 9 &&
         std::equal(g.tapOf.begin(), g.tapOf.end(), kSmallPlaneTaps);
}

/// Row blocks (m, o) of the matrix, [C, inputs] each, from filter m's
/// taps: one output channel per task.
bool convMatrixKernel(const Launch &launch, void *const *inputs,
                      void *const *outputs, std::string &error) {
  ConvMatrix g;
  if (!checkArity(launch, 1, 1, 1, 1, error) ||
      !convMatrixGeometry(launch, launch.inputs[0].shape, g, error) ||
      !checkOutput(launch, 0, launch.inputs[0].dtype, g.matrix, error))
    return false;
  bool smallPlane = isSmallPlane(g);
  return withBits(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *w = static_cast<const T *>(inputs[0]);
    T *matrix = static_cast<T *>(outputs[0]);
    int64_t channels = g.weight[1], blockSize = channels * g.inputs;
    const int64_t *tapOf = g.tapOf.data();
#pragma omp parallel for schedule(static) if (g.matrix[0] * g.matrix[1] >=     \
                                              kParallelElements)
    for (int64_t m = 0; m < g.weight[0]; ++m) {
      const T *filters = w + m * channels * g.taps;
      T *blocks = matrix + m * g.outputs * blockSize;
      if (smallPlane) {
        for (int64_t c = 0; c < channels; ++c) {
          T taps[9];
          std::copy(filters + c * 9, filters + c * 9 + 9, taps);
          for (int64_t e = 0; e < 16; ++e)
            blocks[e / 4 * blockSize + c * 4 + e % 4] =
                taps[kSmallPlaneTaps[e]];
        }
        continue;
      }
      for (int64_t o = 0; o < g.outputs; ++o)
        for (int64_t c = 0; c < channels; ++c)
          for (int64_t i = 0; i < g.inputs; ++i)
            blocks[o * blockSize + c * g.inputs + i] =
                filters[c * g.taps + tapOf[o * g.inputs + i]];
    }
    return true;
  });
}

/// Each tap's sum, in double, over the entries that hold it, in the
/// order of the output positions: one output channel per task; its sums
/// kept as [taps, C] rows that a block's strided columns are added to,
/// transposed into the filters at the end.
bool convMatrixBackwardKernel(const Launch &launch, void *const *inputs,
                              void *const *outputs, std::string &error) {
  ConvMatrix g;
  Attributes attributes(launch);
  Shape weight = attributes.integers("weight_shape");
  if (!checkArity(launch, 1, 1, 1, 1, error) || !attributes.ok(error) ||
      !convMatrixGeometry(launch, weight, g, error) ||
      !checkShape(launch, launch.inputs[0], g.matrix, "grad_output", error) ||
      !checkOutput(launch, 0, launch.inputs[0].dtype, weight, error))
    return false;
  bool smallPlane = isSmallPlane(g);
  return withFloat(launch, launch.inputs[0].dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *gradMatrix = static_cast<const T *>(inputs[0]);
    T *gradWeight = static_cast<T *>(outputs[0]);
    int64_t channels = g.weight[1], blockSize = channels * g.inputs;
    int64_t filters = channels * g.taps;
    const int64_t *tapOf = g.tapOf.data();
#pragma omp parallel for schedule(static) if (g.matrix[0] * g.matrix[1] >=     \
                                              kParallelElements)
    for (int64_t m = 0; m < g.weight[0]; ++m) {
      const T *blocks = gradMatrix + m * g.outputs * blockSize;
      T *filter = gradWeight + m * filters;
      if (smallPlane) {
        for (int64_t c = 0; c < channels; ++c) {
          double taps[9] = {};
          for (int64_t e = 0; e < 16; ++e)
            taps[kSmallPlaneTaps[e]] +=
                static_cast<double>(blocks[e / 4 * blockSize + c * 4 + e % 4]);
          for (int64_t t = 0; t < 9; ++t)
            filter[c * 9 + t] = static_cast<T>(taps[t]);
        }
        continue;
      }
      std::vector<double> sums(filters, 0.0);
      for (int64_t o = 0; o < g.outputs; ++o)
        for (int64_t i = 0; i < g.inputs; ++i) {
          double *row = sums.data() + tapOf[o * g.inputs + i] * channels;
          const T *column = blocks + o * blockSize + i;
          for (int64_t c = 0; c < channels; ++c)
            row[c] += static_cast<double>(column[c * g.inputs]);
        }
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t t = 0; t < g.taps; ++t)
          filter[c * g.taps + t] = static_cast<T>(sums[t * channels + c]);
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
  TRAINC_RT_REGISTER("graph.conv_matrix", ref, convMatrixKernel);
  TRAINC_RT_REGISTER("graph.conv_matrix_backward", ref,
                     convMatrixBackwardKernel);
  TRAINC_RT_REGISTER("graph.batch_norm_training", ref, batchNormTrainingKernel);
  TRAINC_RT_REGISTER("graph.batch_norm_inference", ref,
                     batchNormInferenceKernel);
  TRAINC_RT_REGISTER("graph.layer_norm", ref, layerNormKernel);
}

} // namespace trainc::rt
