//===- NeuralKernels.cpp - matmul, conv, pooling, normalization -----------===//
//
// Forward kernels of the neural-network ops. Products and statistics
// accumulate in double; the driver rounds each result once.
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "dialects/graph/GraphOps.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace graph = trainc::graph;

namespace trainc::interpreter {
namespace {

KernelResult matmulKernel(graph::MatMulOp op, const Values &values) {
  const HostTensor &lhs = values[op.getLhs()], &rhs = values[op.getRhs()];
  if (lhs.shape.empty() || rhs.shape.empty())
    return kernelError("matmul operands must not be scalars");
  // numpy: a 1-D lhs is a row [1, K], a 1-D rhs a column [K, 1]; the
  // promoted dims are dropped from the result.
  llvm::SmallVector<int64_t> a(lhs.shape.begin(), lhs.shape.end());
  llvm::SmallVector<int64_t> b(rhs.shape.begin(), rhs.shape.end());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k)
    return kernelError("contraction sizes differ: " + formatShape(lhs.shape) +
                       " x " + formatShape(rhs.shape));
  ArrayRef<int64_t> lhsBatch = ArrayRef<int64_t>(a).drop_back(2);
  ArrayRef<int64_t> rhsBatch = ArrayRef<int64_t>(b).drop_back(2);
  auto batch = broadcastShapes(lhsBatch, rhsBatch);
  if (!batch)
    return kernelError("batch dims do not broadcast");
  llvm::SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(m);
  if (!rhsVector)
    shape.push_back(n);
  HostTensor output = filled(shape);
  BroadcastIndexer lhsMatrix(*batch, lhsBatch), rhsMatrix(*batch, rhsBatch);
  for (int64_t p = 0; p < product(*batch); ++p) {
    const double *x = lhs.data.data() + lhsMatrix(p) * m * k;
    const double *y = rhs.data.data() + rhsMatrix(p) * k * n;
    double *z = output.data.data() + p * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t l = 0; l < k; ++l)
          sum += x[i * k + l] * y[l * n + j];
        z[i * n + j] = sum;
      }
  }
  return result(std::move(output));
}

KernelResult gemmKernel(graph::GemmOp op, const Values &values) {
  const HostTensor &a = values[op.getA()], &b = values[op.getB()];
  if (a.shape.size() != 2 || b.shape.size() != 2)
    return kernelError("gemm operands must be 2-D");
  bool transA = op.getTransA(), transB = op.getTransB();
  int64_t m = a.shape[transA ? 1 : 0], k = a.shape[transA ? 0 : 1];
  int64_t n = b.shape[transB ? 0 : 1];
  if (b.shape[transB ? 1 : 0] != k)
    return kernelError("contraction sizes differ");
  auto at = [](const HostTensor &t, bool transposed, int64_t i, int64_t j) {
    return transposed ? t.data[j * t.shape[1] + i] : t.data[i * t.shape[1] + j];
  };
  double alpha = op.getAlpha().convertToDouble();
  double beta = op.getBeta().convertToDouble();
  HostTensor output = filled({m, n});
  std::optional<BroadcastIndexer> cIndex;
  const HostTensor *c = op.getC() ? &values[op.getC()] : nullptr;
  if (c) {
    auto shape = broadcastShapes(c->shape, output.shape);
    if (!shape || *shape != ArrayRef<int64_t>(output.shape))
      return kernelError("c " + formatShape(c->shape) +
                         " does not broadcast to the result");
    cIndex.emplace(output.shape, c->shape);
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t l = 0; l < k; ++l)
        sum += at(a, transA, i, l) * at(b, transB, l, j);
      double value = alpha * sum;
      if (c)
        value += beta * c->data[(*cIndex)(i * n + j)];
      output.data[i * n + j] = value;
    }
  return result(std::move(output));
}

KernelResult convKernel(graph::ConvOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  const HostTensor &weight = values[op.getWeight()];
  const HostTensor *bias = op.getBias() ? &values[op.getBias()] : nullptr;
  if (input.shape.size() < 3 || weight.shape.size() != input.shape.size())
    return kernelError("expected input [N, C, D...] and weight [M, C/g, K...]");
  int64_t group = op.getGroup(), channels = input.shape[1];
  int64_t outChannels = weight.shape[0], groupChannels = weight.shape[1];
  if (group <= 0 || outChannels % group != 0 ||
      groupChannels * group != channels)
    return kernelError("weight " + formatShape(weight.shape) + " with group " +
                       std::to_string(group) + " does not match input " +
                       formatShape(input.shape));
  size_t spatial = input.shape.size() - 2;
  ArrayRef<int64_t> kernel = ArrayRef<int64_t>(weight.shape).drop_front(2);
  auto window = makeWindow(spatial, kernel, op.getStrides(), op.getPads(),
                           op.getDilations());
  if (!window)
    return window.takeError();
  auto shape = windowedShape(input.shape, outChannels, *window, false);
  if (!shape)
    return shape.takeError();
  ArrayRef<int64_t> inputSpatial = ArrayRef<int64_t>(input.shape).drop_front(2);
  ArrayRef<int64_t> outputSpatial = ArrayRef<int64_t>(*shape).drop_front(2);
  int64_t plane = product(inputSpatial), kernelSize = product(kernel);
  int64_t outputsPerGroup = outChannels / group;
  HostTensor output = filled(*shape);
  int64_t flat = 0;
  for (int64_t n = 0; n < input.shape[0]; ++n)
    for (int64_t m = 0; m < outChannels; ++m) {
      int64_t firstChannel = (m / outputsPerGroup) * groupChannels;
      forEachIndex(outputSpatial, [&](ArrayRef<int64_t> position) {
        double sum = bias ? bias->data[m] : 0.0;
        for (const WindowTap &tap : windowTaps(*window, inputSpatial, position))
          for (int64_t c = 0; c < groupChannels; ++c)
            sum +=
                input.data[(n * channels + firstChannel + c) * plane +
                           tap.input] *
                weight.data[(m * groupChannels + c) * kernelSize + tap.kernel];
        output.data[flat++] = sum;
      });
    }
  return result(std::move(output));
}

KernelResult convMatrixKernel(graph::ConvMatrixOp op, const Values &values) {
  const HostTensor &weight = values[op.getWeight()];
  auto shape = graph::convMatrixShape(
      std::nullopt, weight.shape, op.getInputSpatial(), op.getOutputSpatial(),
      op.getStrides(), op.getPads());
  if (failed(shape))
    return kernelError("conv_matrix: weight " + formatShape(weight.shape) +
                       " does not fit the planes");
  HostTensor matrix = filled(*shape);
  if (auto error = forEachConvMatrixEntry(
          weight.shape, op.getInputSpatial(), op.getOutputSpatial(),
          op.getStrides(), op.getPads(), [&](int64_t entry, int64_t tap) {
            matrix.data[entry] = weight.data[tap];
          }))
    return std::move(error);
  return result(std::move(matrix));
}

/// Runs `body(planeIndex, outputPosition, outputFlat)` over every output
/// element of a pooling op on [N, C, D...]; planes are (n, c) pairs.
template <typename Body>
void forEachPooledElement(ArrayRef<int64_t> outputShape, Body body) {
  int64_t planes = outputShape[0] * outputShape[1];
  int64_t flat = 0;
  for (int64_t plane = 0; plane < planes; ++plane)
    forEachIndex(outputShape.drop_front(2), [&](ArrayRef<int64_t> position) {
      body(plane, position, flat++);
    });
}

KernelResult maxPoolKernel(graph::MaxPoolOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  if (input.shape.size() < 3)
    return kernelError("expected an [N, C, D...] input");
  auto window = makeWindow(input.shape.size() - 2, op.getKernelShape(),
                           op.getStrides(), op.getPads(), op.getDilations());
  if (!window)
    return window.takeError();
  auto shape =
      windowedShape(input.shape, input.shape[1], *window, op.getCeilMode());
  if (!shape)
    return shape.takeError();
  ArrayRef<int64_t> inputSpatial = ArrayRef<int64_t>(input.shape).drop_front(2);
  int64_t planeSize = product(inputSpatial);
  HostTensor output = filled(*shape);
  forEachPooledElement(*shape, [&](int64_t plane, ArrayRef<int64_t> position,
                                   int64_t flat) {
    ArrayRef<double> values(input.data.data() + plane * planeSize, planeSize);
    int64_t best = maxPoolArgmax(*window, inputSpatial, position, values);
    // Padding is -inf: a window of padding only has no maximum above it.
    output.data[flat] =
        best < 0 ? -std::numeric_limits<double>::infinity() : values[best];
  });
  return result(std::move(output));
}

KernelResult avgPoolKernel(graph::AvgPoolOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  if (input.shape.size() < 3)
    return kernelError("expected an [N, C, D...] input");
  size_t spatial = input.shape.size() - 2;
  llvm::SmallVector<int64_t> dilations(spatial, 1);
  auto window = makeWindow(spatial, op.getKernelShape(), op.getStrides(),
                           op.getPads(), dilations);
  if (!window)
    return window.takeError();
  auto shape =
      windowedShape(input.shape, input.shape[1], *window, op.getCeilMode());
  if (!shape)
    return shape.takeError();
  ArrayRef<int64_t> inputSpatial = ArrayRef<int64_t>(input.shape).drop_front(2);
  int64_t planeSize = product(inputSpatial);
  HostTensor output = filled(*shape);
  forEachPooledElement(
      *shape, [&](int64_t plane, ArrayRef<int64_t> position, int64_t flat) {
        double sum = 0.0;
        for (const WindowTap &tap : windowTaps(*window, inputSpatial, position))
          sum += input.data[plane * planeSize + tap.input];
        output.data[flat] =
            sum / averagePoolDivisor(*window, inputSpatial, position,
                                     op.getCountIncludePad());
      });
  return result(std::move(output));
}

KernelResult globalAvgPoolKernel(graph::GlobalAvgPoolOp op,
                                 const Values &values) {
  const HostTensor &input = values[op.getInput()];
  if (input.shape.size() < 3)
    return kernelError("expected an [N, C, D...] input");
  llvm::SmallVector<int64_t> shape(input.shape.size(), 1);
  shape[0] = input.shape[0];
  shape[1] = input.shape[1];
  int64_t planeSize = product(ArrayRef<int64_t>(input.shape).drop_front(2));
  HostTensor output = filled(shape);
  for (int64_t plane = 0; plane < shape[0] * shape[1]; ++plane) {
    double sum = 0.0;
    for (int64_t i = 0; i < planeSize; ++i)
      sum += input.data[plane * planeSize + i];
    output.data[plane] = sum / static_cast<double>(planeSize);
  }
  return result(std::move(output));
}

} // namespace

/// Per-channel statistics of x: [N, C, ...] over every dim but C.
ChannelStatistics channelStatistics(const HostTensor &input) {
  ChannelStatistics stats;
  int64_t channels = input.shape[1];
  int64_t inner = product(ArrayRef<int64_t>(input.shape).drop_front(2));
  stats.count = input.shape[0] * inner;
  stats.mean.assign(channels, 0.0);
  stats.variance.assign(channels, 0.0);
  for (int64_t i = 0; i < input.numElements(); ++i)
    stats.mean[(i / inner) % channels] += input.data[i];
  for (double &mean : stats.mean)
    mean /= static_cast<double>(stats.count);
  // Two passes: the textbook E[(x - mean)^2], free of cancellation.
  for (int64_t i = 0; i < input.numElements(); ++i) {
    int64_t c = (i / inner) % channels;
    double centered = input.data[i] - stats.mean[c];
    stats.variance[c] += centered * centered;
  }
  for (double &variance : stats.variance)
    variance /= static_cast<double>(stats.count);
  stats.inner = inner;
  return stats;
}

namespace {

KernelResult batchNormTrainingKernel(graph::BatchNormTrainingOp op,
                                     const Values &values) {
  const HostTensor &input = values[op.getInput()];
  const HostTensor &scale = values[op.getScale()], &bias = values[op.getBias()];
  const HostTensor &runningMean = values[op.getRunningMean()];
  const HostTensor &runningVar = values[op.getRunningVar()];
  if (input.shape.size() < 2)
    return kernelError("expected an [N, C, ...] input");
  ChannelStatistics stats = channelStatistics(input);
  if (stats.count <= 1)
    return kernelError("batch statistics need more than one value per "
                       "channel (PyTorch refuses too)");
  double epsilon = op.getEpsilon().convertToDouble();
  double momentum = op.getMomentum().convertToDouble();
  int64_t channels = input.shape[1];
  HostTensor output = filled(input.shape);
  for (int64_t i = 0; i < input.numElements(); ++i) {
    int64_t c = (i / stats.inner) % channels;
    output.data[i] = (input.data[i] - stats.mean[c]) /
                         std::sqrt(stats.variance[c] + epsilon) *
                         scale.data[c] +
                     bias.data[c];
  }
  // ONNX's momentum convention; the running variance takes the unbiased
  // batch variance, as PyTorch does (docs/ARCHITECTURE.md).
  HostTensor newMean = filled({channels}), newVar = filled({channels});
  double correction = static_cast<double>(stats.count) / (stats.count - 1);
  for (int64_t c = 0; c < channels; ++c) {
    newMean.data[c] =
        momentum * runningMean.data[c] + (1.0 - momentum) * stats.mean[c];
    newVar.data[c] = momentum * runningVar.data[c] +
                     (1.0 - momentum) * stats.variance[c] * correction;
  }
  std::vector<HostTensor> results;
  results.push_back(std::move(output));
  results.push_back(std::move(newMean));
  results.push_back(std::move(newVar));
  return results;
}

KernelResult batchNormInferenceKernel(graph::BatchNormInferenceOp op,
                                      const Values &values) {
  const HostTensor &input = values[op.getInput()];
  const HostTensor &scale = values[op.getScale()], &bias = values[op.getBias()];
  const HostTensor &mean = values[op.getMean()], &var = values[op.getVar()];
  if (input.shape.size() < 2)
    return kernelError("expected an [N, C, ...] input");
  double epsilon = op.getEpsilon().convertToDouble();
  int64_t channels = input.shape[1];
  int64_t inner = product(ArrayRef<int64_t>(input.shape).drop_front(2));
  HostTensor output = filled(input.shape);
  for (int64_t i = 0; i < input.numElements(); ++i) {
    int64_t c = (i / inner) % channels;
    output.data[i] = (input.data[i] - mean.data[c]) /
                         std::sqrt(var.data[c] + epsilon) * scale.data[c] +
                     bias.data[c];
  }
  return result(std::move(output));
}

KernelResult layerNormKernel(graph::LayerNormOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  const HostTensor &scale = values[op.getScale()];
  const HostTensor *bias = op.getBias() ? &values[op.getBias()] : nullptr;
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(input.shape.size()))
    return kernelError("layer norm axis is out of range");
  int64_t size = product(ArrayRef<int64_t>(input.shape).drop_front(axis));
  double epsilon = op.getEpsilon().convertToDouble();
  HostTensor output = filled(input.shape);
  for (int64_t row = 0; row * size < input.numElements(); ++row) {
    RowStatistics stats = rowStatistics(input, row, size);
    for (int64_t j = 0; j < size; ++j) {
      double normalized =
          (input.data[row * size + j] - stats.mean) * stats.inverseStd(epsilon);
      output.data[row * size + j] =
          normalized * scale.data[j] + (bias ? bias->data[j] : 0.0);
    }
  }
  return result(std::move(output));
}

} // namespace

RowStatistics rowStatistics(const HostTensor &input, int64_t row,
                            int64_t size) {
  RowStatistics stats;
  const double *x = input.data.data() + row * size;
  for (int64_t j = 0; j < size; ++j)
    stats.mean += x[j];
  stats.mean /= static_cast<double>(size);
  for (int64_t j = 0; j < size; ++j)
    stats.variance += (x[j] - stats.mean) * (x[j] - stats.mean);
  stats.variance /= static_cast<double>(size);
  return stats;
}

void registerNeuralKernels(KernelTable &table) {
  table.add<graph::MatMulOp>(matmulKernel);
  table.add<graph::GemmOp>(gemmKernel);
  table.add<graph::ConvOp>(convKernel);
  table.add<graph::ConvMatrixOp>(convMatrixKernel);
  table.add<graph::MaxPoolOp>(maxPoolKernel);
  table.add<graph::AvgPoolOp>(avgPoolKernel);
  table.add<graph::GlobalAvgPoolOp>(globalAvgPoolKernel);
  table.add<graph::BatchNormTrainingOp>(batchNormTrainingKernel);
  table.add<graph::BatchNormInferenceOp>(batchNormInferenceKernel);
  table.add<graph::LayerNormOp>(layerNormKernel);
}

} // namespace trainc::interpreter
