//===- BackwardKernels.cpp - conv, normalization, gather, slice gradients -===//
//
// Reference kernels of the backward ops. Each walks the same windows,
// rows or indices as its forward kernel; a task owns a disjoint part of
// the result (an image, an output channel, a channel, a column block) and
// adds its contributions in the interpreter's order, in double.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/kernels/KernelSupport.h"

namespace trainc::rt {
namespace {

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

/// Calls body(n, m, position, outputFlat) for every element of the conv
/// output of image n and output channel m, row-major.
template <typename Body>
void forEachConvOutput(const ConvShape &conv, int64_t n, int64_t m, Body body) {
  int64_t position[kMaxSpatialRank] = {};
  int64_t base = (n * conv.outChannels + m) * conv.window.outputPlane;
  for (int64_t o = 0; o < conv.window.outputPlane;
       ++o, conv.window.nextOutput(position))
    body(position, base + o);
}

bool convBackwardInputKernel(const Launch &launch, void *const *inputs,
                             void *const *outputs, std::string &error) {
  ConvShape conv;
  if (!checkConvBackwardInput(launch, conv, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *w = static_cast<const T *>(inputs[1]);
    T *dx = static_cast<T *>(outputs[0]);
    const Window &win = conv.window;
    int64_t imageSize = conv.channels * win.inputPlane;
    std::vector<double> buffers(static_cast<size_t>(maxThreads()) * imageSize);
    int64_t work =
        product(conv.outputShape) * win.kernelSize * conv.groupChannels;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t n = 0; n < conv.batch; ++n) {
      double *acc = buffers.data() + threadIndex() * imageSize;
      std::fill(acc, acc + imageSize, 0.0);
      for (int64_t m = 0; m < conv.outChannels; ++m) {
        int64_t firstChannel = (m / conv.groupOutputs) * conv.groupChannels;
        const T *filter = w + m * conv.groupChannels * win.kernelSize;
        forEachConvOutput(conv, n, m, [&](const int64_t *position, int64_t at) {
          double gradient = dy[at];
          win.forEachTap(position, [&](int64_t kernel, int64_t in) {
            for (int64_t c = 0; c < conv.groupChannels; ++c)
              acc[(firstChannel + c) * win.inputPlane + in] +=
                  gradient * filter[c * win.kernelSize + kernel];
          });
        });
      }
      for (int64_t i = 0; i < imageSize; ++i)
        dx[n * imageSize + i] = static_cast<T>(acc[i]);
    }
    return true;
  });
}

bool convBackwardWeightKernel(const Launch &launch, void *const *inputs,
                              void *const *outputs, std::string &error) {
  ConvShape conv;
  if (!checkConvBackwardWeight(launch, conv, error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *x = static_cast<const T *>(inputs[1]);
    T *dw = static_cast<T *>(outputs[0]);
    const Window &win = conv.window;
    int64_t filterSize = conv.groupChannels * win.kernelSize;
    std::vector<double> buffers(static_cast<size_t>(maxThreads()) * filterSize);
    int64_t work = product(conv.outputShape) * filterSize;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t m = 0; m < conv.outChannels; ++m) {
      double *acc = buffers.data() + threadIndex() * filterSize;
      std::fill(acc, acc + filterSize, 0.0);
      int64_t firstChannel = (m / conv.groupOutputs) * conv.groupChannels;
      for (int64_t n = 0; n < conv.batch; ++n) {
        const T *image =
            x + (n * conv.channels + firstChannel) * win.inputPlane;
        forEachConvOutput(conv, n, m, [&](const int64_t *position, int64_t at) {
          double gradient = dy[at];
          win.forEachTap(position, [&](int64_t kernel, int64_t in) {
            for (int64_t c = 0; c < conv.groupChannels; ++c)
              acc[c * win.kernelSize + kernel] +=
                  gradient * image[c * win.inputPlane + in];
          });
        });
      }
      for (int64_t i = 0; i < filterSize; ++i)
        dw[m * filterSize + i] = static_cast<T>(acc[i]);
    }
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

bool batchNormBackwardKernel(const Launch &launch, void *const *inputs,
                             void *const *outputs, std::string &error) {
  BatchNormShape norm;
  if (!checkBatchNormBackward(launch, norm, error))
    return false;
  const OperandInfo &input = launch.inputs[1];
  double epsilon = norm.epsilon;
  int64_t batch = norm.batch, channels = norm.channels, inner = norm.inner;
  double count = static_cast<double>(batch * inner);
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *x = static_cast<const T *>(inputs[1]);
    const T *scale = static_cast<const T *>(inputs[2]);
    T *dx = static_cast<T *>(outputs[0]);
    T *gradScale = static_cast<T *>(outputs[1]);
    T *gradBias = static_cast<T *>(outputs[2]);
#pragma omp parallel for schedule(static) if (count * channels >=              \
                                              kParallelElements)
    for (int64_t c = 0; c < channels; ++c) {
      auto at = [&](int64_t n, int64_t i) {
        return (n * channels + c) * inner + i;
      };
      double mean = 0.0, variance = 0.0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          mean += static_cast<double>(x[at(n, i)]);
      mean /= count;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i)
          variance += (x[at(n, i)] - mean) * (x[at(n, i)] - mean);
      variance /= count;
      double inverseStd = 1.0 / std::sqrt(variance + epsilon);
      double sumGrad = 0.0, sumGradNormalized = 0.0;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          double g = dy[at(n, i)];
          sumGrad += g;
          sumGradNormalized += g * ((x[at(n, i)] - mean) * inverseStd);
        }
      // dx = scale * invstd / n * (n * g - sum(g) - xhat * sum(g * xhat)).
      double factor = scale[c] * inverseStd / count;
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t i = 0; i < inner; ++i) {
          double normalized = (x[at(n, i)] - mean) * inverseStd;
          dx[at(n, i)] =
              static_cast<T>(factor * (count * dy[at(n, i)] - sumGrad -
                                       normalized * sumGradNormalized));
        }
      gradScale[c] = static_cast<T>(sumGradNormalized);
      gradBias[c] = static_cast<T>(sumGrad);
    }
    return true;
  });
}

bool layerNormBackwardKernel(const Launch &launch, void *const *inputs,
                             void *const *outputs, std::string &error) {
  if (!checkArity(launch, 3, 3, 3, 3, error))
    return false;
  Attributes attributes(launch);
  int64_t axis = attributes.integer("axis");
  double epsilon = attributes.real("epsilon");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0], &input = launch.inputs[1];
  int64_t rank = static_cast<int64_t>(input.shape.size());
  if (axis < 0 || axis >= rank)
    return fail(launch, error, "layer norm axis is out of range");
  Shape normalizedShape(input.shape.begin() + axis, input.shape.end());
  if (!checkShape(launch, gradOutput, input.shape, "grad_output", error) ||
      !checkShape(launch, launch.inputs[2], normalizedShape, "scale", error) ||
      !checkOutput(launch, 0, input.dtype, input.shape, error) ||
      !checkOutput(launch, 1, input.dtype, normalizedShape, error) ||
      !checkOutput(launch, 2, input.dtype, normalizedShape, error))
    return false;
  if (gradOutput.dtype != input.dtype || launch.inputs[2].dtype != input.dtype)
    return fail(launch, error, "operands have different element types");
  int64_t size = product(normalizedShape);
  int64_t rows = size == 0 ? 0 : input.numElements() / size;
  return withFloat(launch, input.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    const T *x = static_cast<const T *>(inputs[1]);
    const T *scale = static_cast<const T *>(inputs[2]);
    T *dx = static_cast<T *>(outputs[0]);
    T *gradScale = static_cast<T *>(outputs[1]);
    T *gradBias = static_cast<T *>(outputs[2]);
    std::vector<double> means(rows), inverseStds(rows);
    bool parallel = rows * size >= kParallelElements;
    // Rows: statistics and the input gradient.
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t row = 0; row < rows; ++row) {
      const T *in = x + row * size;
      const T *g = dy + row * size;
      double mean = 0.0, variance = 0.0;
      for (int64_t j = 0; j < size; ++j)
        mean += static_cast<double>(in[j]);
      mean /= static_cast<double>(size);
      for (int64_t j = 0; j < size; ++j)
        variance += (in[j] - mean) * (in[j] - mean);
      variance /= static_cast<double>(size);
      double inverseStd = 1.0 / std::sqrt(variance + epsilon);
      means[row] = mean;
      inverseStds[row] = inverseStd;
      double sumGrad = 0.0, sumGradNormalized = 0.0;
      for (int64_t j = 0; j < size; ++j) {
        double gradNormalized = static_cast<double>(g[j]) * scale[j];
        sumGrad += gradNormalized;
        sumGradNormalized += gradNormalized * ((in[j] - mean) * inverseStd);
      }
      for (int64_t j = 0; j < size; ++j) {
        double normalized = (in[j] - mean) * inverseStd;
        double gradNormalized = static_cast<double>(g[j]) * scale[j];
        dx[row * size + j] =
            static_cast<T>(inverseStd / static_cast<double>(size) *
                           (static_cast<double>(size) * gradNormalized -
                            sumGrad - normalized * sumGradNormalized));
      }
    }
    // Column blocks: scale and bias gradients summed over rows in order.
    constexpr int64_t kBlock = 256;
    int64_t blocks = (size + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t begin = b * kBlock, end = std::min(size, begin + kBlock);
      double sumScale[kBlock] = {}, sumBias[kBlock] = {};
      for (int64_t row = 0; row < rows; ++row)
        for (int64_t j = begin; j < end; ++j) {
          double g = dy[row * size + j];
          sumScale[j - begin] +=
              g * ((x[row * size + j] - means[row]) * inverseStds[row]);
          sumBias[j - begin] += g;
        }
      for (int64_t j = begin; j < end; ++j) {
        gradScale[j] = static_cast<T>(sumScale[j - begin]);
        gradBias[j] = static_cast<T>(sumBias[j - begin]);
      }
    }
    return true;
  });
}

//===----------------------------------------------------------------------===//
// Gather and slice
//===----------------------------------------------------------------------===//

bool gatherElementsBackwardKernel(const Launch &launch, void *const *inputs,
                                  void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape dataShape = attributes.integers("data_shape");
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0], &indices = launch.inputs[1];
  std::vector<int64_t> sources;
  if (!gatherElementsSources(launch, dataShape, indices, inputs[1], axis,
                             sources, error) ||
      !checkShape(launch, gradOutput, indices.shape, "grad_output", error) ||
      !checkOutput(launch, 0, gradOutput.dtype, dataShape, error))
    return false;
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    T *dx = static_cast<T *>(outputs[0]);
    std::fill(
        dx, dx + product(dataShape.data(), dataShape.data() + dataShape.size()),
        T(0));
    // Scatter-add in index order: an element picked twice gets both.
    for (size_t j = 0; j < sources.size(); ++j)
      dx[sources[j]] += dy[j];
    return true;
  });
}

bool gatherBackwardKernel(const Launch &launch, void *const *inputs,
                          void *const *outputs, std::string &error) {
  if (!checkArity(launch, 2, 2, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape dataShape = attributes.integers("data_shape");
  int64_t axis = attributes.integer("axis");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0], &indices = launch.inputs[1];
  GatherShape gather;
  if (!makeGatherShape(launch, dataShape, indices, inputs[1], axis, gather,
                       error) ||
      !checkShape(launch, gradOutput, gather.outputShape, "grad_output",
                  error) ||
      !checkOutput(launch, 0, gradOutput.dtype, dataShape, error))
    return false;
  return withFloat(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    T *dx = static_cast<T *>(outputs[0]);
    // Scatter-add: an index gathered twice receives both gradients, in
    // index order. Tasks own (outer, range of rows, block of inner) slices
    // of the result, and each reads every index, taking those in its rows:
    // an embedding's gradient (one outer, 128 floats a row) splits by rows.
    constexpr int64_t kBlock = 512;
    int64_t blocks = (gather.inner + kBlock - 1) / kBlock;
    int64_t work =
        gather.outer * (gather.axisSize + gather.count) * gather.inner;
    int64_t ranges = std::clamp<int64_t>(
        4 * omp_get_max_threads() / std::max<int64_t>(1, gather.outer * blocks),
        1, std::max<int64_t>(1, gather.axisSize));
    int64_t rowsPerRange = (gather.axisSize + ranges - 1) / ranges;
    int64_t tasks = gather.outer * ranges * blocks;
#pragma omp parallel for schedule(static) if (work >= kParallelElements)
    for (int64_t task = 0; task < tasks; ++task) {
      int64_t o = task / (ranges * blocks);
      int64_t first = (task / blocks % ranges) * rowsPerRange;
      int64_t last = std::min(gather.axisSize, first + rowsPerRange);
      int64_t begin = (task % blocks) * kBlock;
      int64_t end = std::min(gather.inner, begin + kBlock);
      for (int64_t r = first; r < last; ++r)
        std::fill(dx + (o * gather.axisSize + r) * gather.inner + begin,
                  dx + (o * gather.axisSize + r) * gather.inner + end, T(0));
      for (int64_t j = 0; j < gather.count; ++j) {
        int64_t r = gather.position(inputs[1], indices.dtype, j);
        if (r < first || r >= last)
          continue;
        T *to = dx + (o * gather.axisSize + r) * gather.inner;
        const T *from = dy + (o * gather.count + j) * gather.inner;
        for (int64_t i = begin; i < end; ++i)
          to[i] += from[i];
      }
    }
    return true;
  });
}

bool sliceBackwardKernel(const Launch &launch, void *const *inputs,
                         void *const *outputs, std::string &error) {
  if (!checkArity(launch, 1, 1, 1, 1, error))
    return false;
  Attributes attributes(launch);
  Shape inputShape = attributes.integers("input_shape");
  Shape starts = attributes.integers("starts");
  Shape ends = attributes.integers("ends");
  Shape steps = attributes.integers("steps");
  if (!attributes.ok(error))
    return false;
  const OperandInfo &gradOutput = launch.inputs[0];
  Shape shape;
  if (!sliceGeometry(launch, inputShape, starts, ends, steps, shape, error) ||
      !checkShape(launch, gradOutput, shape, "grad_output", error) ||
      !checkOutput(launch, 0, gradOutput.dtype, inputShape, error))
    return false;
  StridedLoop loop = sliceWalk(shape, inputShape, starts, steps);
  return withBits(launch, gradOutput.dtype, error, [&](auto tag) {
    using T = decltype(tag);
    const T *dy = static_cast<const T *>(inputs[0]);
    T *dx = static_cast<T *>(outputs[0]);
    std::memset(dx, 0, launch.outputs[0].bytes());
    loop.run([&](const StridedLoop::Offsets &at,
                 const StridedLoop::Offsets &step, int64_t count) {
      for (int64_t i = 0; i < count; ++i)
        dx[at[1] + i * step[1]] = dy[at[0] + i * step[0]];
    });
    return true;
  });
}

} // namespace

void registerBackwardKernels() {
  const char *ref = "reference";
  TRAINC_RT_REGISTER("graph.conv_backward_input", ref, convBackwardInputKernel);
  TRAINC_RT_REGISTER("graph.conv_backward_weight", ref,
                     convBackwardWeightKernel);
  TRAINC_RT_REGISTER("graph.batch_norm_training_backward", ref,
                     batchNormBackwardKernel);
  TRAINC_RT_REGISTER("graph.layer_norm_backward", ref, layerNormBackwardKernel);
  TRAINC_RT_REGISTER("graph.gather_backward", ref, gatherBackwardKernel);
  TRAINC_RT_REGISTER("graph.gather_elements_backward", ref,
                     gatherElementsBackwardKernel);
  TRAINC_RT_REGISTER("graph.slice_backward", ref, sliceBackwardKernel);
}

} // namespace trainc::rt
