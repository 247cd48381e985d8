//===- BackwardKernels.cpp - gradients that are computations of their own -===//
//
// Kernels of the backward ops: each walks the same windows / rows / indices
// as its forward kernel and sends every output gradient back to what the
// forward read, so the pair is visibly each other's adjoint.
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "dialects/graph/GraphOps.h"

#include <cmath>

using namespace mlir;
namespace graph = trainc::graph;

namespace trainc::interpreter {
namespace {

/// Checks that a gradient has the shape its forward op produced.
llvm::Error expectShape(const HostTensor &gradient, ArrayRef<int64_t> expected,
                        llvm::StringRef what) {
  if (ArrayRef<int64_t>(gradient.shape) == expected)
    return llvm::Error::success();
  return kernelError(what + " is " + formatShape(gradient.shape) +
                     " but the forward op produces " + formatShape(expected));
}

/// What both convolution gradients need to know about the forward conv.
struct ConvGeometry {
  Window window;
  int64_t batch, channels, outChannels, groupChannels, outputsPerGroup;
  llvm::SmallVector<int64_t> inputSpatial, outputSpatial;
  int64_t inputPlane, kernelSize;
};

llvm::Expected<ConvGeometry>
convGeometry(ArrayRef<int64_t> inputShape, ArrayRef<int64_t> weightShape,
             const HostTensor &gradOutput, ArrayRef<int64_t> strides,
             ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
             int64_t group) {
  if (inputShape.size() < 3 || weightShape.size() != inputShape.size())
    return kernelError("expected input [N, C, D...] and weight [M, C/g, K...]");
  ConvGeometry geometry;
  geometry.batch = inputShape[0];
  geometry.channels = inputShape[1];
  geometry.outChannels = weightShape[0];
  geometry.groupChannels = weightShape[1];
  if (group <= 0 || geometry.outChannels % group != 0 ||
      geometry.groupChannels * group != geometry.channels)
    return kernelError("weight " + formatShape(weightShape) + " with group " +
                       std::to_string(group) + " does not match input " +
                       formatShape(inputShape));
  geometry.outputsPerGroup = geometry.outChannels / group;
  ArrayRef<int64_t> kernel = weightShape.drop_front(2);
  auto window =
      makeWindow(inputShape.size() - 2, kernel, strides, pads, dilations);
  if (!window)
    return window.takeError();
  geometry.window = std::move(*window);
  auto outputShape =
      windowedShape(inputShape, geometry.outChannels, geometry.window, false);
  if (!outputShape)
    return outputShape.takeError();
  if (auto error = expectShape(gradOutput, *outputShape, "grad_output"))
    return std::move(error);
  geometry.inputSpatial.assign(inputShape.begin() + 2, inputShape.end());
  geometry.outputSpatial.assign(outputShape->begin() + 2, outputShape->end());
  geometry.inputPlane = product(geometry.inputSpatial);
  geometry.kernelSize = product(kernel);
  return geometry;
}

/// Calls `body(inputOffset, weightOffset, gradient)` for every product
/// x[inputOffset] * w[weightOffset] the forward conv summed into an output
/// element whose gradient is `gradient`.
template <typename Body>
void forEachConvProduct(const ConvGeometry &g, const HostTensor &gradOutput,
                        Body body) {
  int64_t flat = 0;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t m = 0; m < g.outChannels; ++m) {
      int64_t firstChannel = (m / g.outputsPerGroup) * g.groupChannels;
      forEachIndex(g.outputSpatial, [&](ArrayRef<int64_t> position) {
        double gradient = gradOutput.data[flat++];
        for (const WindowTap &tap :
             windowTaps(g.window, g.inputSpatial, position))
          for (int64_t c = 0; c < g.groupChannels; ++c)
            body((n * g.channels + firstChannel + c) * g.inputPlane + tap.input,
                 (m * g.groupChannels + c) * g.kernelSize + tap.kernel,
                 gradient);
      });
    }
}

KernelResult convBackwardInputKernel(graph::ConvBackwardInputOp op,
                                     const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &weight = values[op.getWeight()];
  auto geometry = convGeometry(op.getInputShape(), weight.shape, gradOutput,
                               op.getStrides(), op.getPads(), op.getDilations(),
                               op.getGroup());
  if (!geometry)
    return geometry.takeError();
  HostTensor gradInput = filled(op.getInputShape());
  forEachConvProduct(*geometry, gradOutput,
                     [&](int64_t input, int64_t weightIndex, double gradient) {
                       gradInput.data[input] +=
                           gradient * weight.data[weightIndex];
                     });
  return result(std::move(gradInput));
}

KernelResult convBackwardWeightKernel(graph::ConvBackwardWeightOp op,
                                      const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &input = values[op.getInput()];
  auto geometry = convGeometry(input.shape, op.getWeightShape(), gradOutput,
                               op.getStrides(), op.getPads(), op.getDilations(),
                               op.getGroup());
  if (!geometry)
    return geometry.takeError();
  HostTensor gradWeight = filled(op.getWeightShape());
  forEachConvProduct(*geometry, gradOutput,
                     [&](int64_t inputIndex, int64_t weight, double gradient) {
                       gradWeight.data[weight] +=
                           gradient * input.data[inputIndex];
                     });
  return result(std::move(gradWeight));
}

/// The window and output spatial shape of a pooling op, checked against
/// its gradient.
struct PoolGeometry {
  Window window;
  llvm::SmallVector<int64_t> inputSpatial, outputSpatial;
  int64_t planes, inputPlane;
};

llvm::Expected<PoolGeometry>
poolGeometry(ArrayRef<int64_t> inputShape, const HostTensor &gradOutput,
             ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
             ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
             bool ceilMode) {
  if (inputShape.size() < 3)
    return kernelError("expected an [N, C, D...] input");
  auto window =
      makeWindow(inputShape.size() - 2, kernel, strides, pads, dilations);
  if (!window)
    return window.takeError();
  auto outputShape =
      windowedShape(inputShape, inputShape[1], *window, ceilMode);
  if (!outputShape)
    return outputShape.takeError();
  if (auto error = expectShape(gradOutput, *outputShape, "grad_output"))
    return std::move(error);
  PoolGeometry geometry;
  geometry.window = std::move(*window);
  geometry.inputSpatial.assign(inputShape.begin() + 2, inputShape.end());
  geometry.outputSpatial.assign(outputShape->begin() + 2, outputShape->end());
  geometry.planes = inputShape[0] * inputShape[1];
  geometry.inputPlane = product(geometry.inputSpatial);
  return geometry;
}

KernelResult maxPoolBackwardKernel(graph::MaxPoolBackwardOp op,
                                   const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &input = values[op.getInput()];
  auto geometry = poolGeometry(input.shape, gradOutput, op.getKernelShape(),
                               op.getStrides(), op.getPads(), op.getDilations(),
                               op.getCeilMode());
  if (!geometry)
    return geometry.takeError();
  HostTensor gradInput = filled(input.shape);
  int64_t flat = 0, planeSize = geometry->inputPlane;
  for (int64_t plane = 0; plane < geometry->planes; ++plane) {
    ArrayRef<double> x(input.data.data() + plane * planeSize, planeSize);
    forEachIndex(geometry->outputSpatial, [&](ArrayRef<int64_t> position) {
      double gradient = gradOutput.data[flat++];
      int64_t best =
          maxPoolArgmax(geometry->window, geometry->inputSpatial, position, x);
      if (best >= 0)
        gradInput.data[plane * planeSize + best] += gradient;
    });
  }
  return result(std::move(gradInput));
}

KernelResult avgPoolBackwardKernel(graph::AvgPoolBackwardOp op,
                                   const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  ArrayRef<int64_t> inputShape = op.getInputShape();
  llvm::SmallVector<int64_t> dilations(
      inputShape.size() >= 2 ? inputShape.size() - 2 : 0, 1);
  auto geometry =
      poolGeometry(inputShape, gradOutput, op.getKernelShape(), op.getStrides(),
                   op.getPads(), dilations, op.getCeilMode());
  if (!geometry)
    return geometry.takeError();
  HostTensor gradInput = filled(inputShape);
  int64_t flat = 0, planeSize = geometry->inputPlane;
  for (int64_t plane = 0; plane < geometry->planes; ++plane)
    forEachIndex(geometry->outputSpatial, [&](ArrayRef<int64_t> position) {
      double share =
          gradOutput.data[flat++] /
          averagePoolDivisor(geometry->window, geometry->inputSpatial, position,
                             op.getCountIncludePad());
      for (const WindowTap &tap :
           windowTaps(geometry->window, geometry->inputSpatial, position))
        gradInput.data[plane * planeSize + tap.input] += share;
    });
  return result(std::move(gradInput));
}

KernelResult
batchNormTrainingBackwardKernel(graph::BatchNormTrainingBackwardOp op,
                                const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &input = values[op.getInput()];
  const HostTensor &scale = values[op.getScale()];
  if (input.shape.size() < 2 || gradOutput.shape != input.shape)
    return kernelError("expected grad_output and input of one [N, C, ...] "
                       "shape");
  ChannelStatistics stats = channelStatistics(input);
  double epsilon = op.getEpsilon().convertToDouble();
  int64_t channels = input.shape[1];
  std::vector<double> inverseStd(channels);
  for (int64_t c = 0; c < channels; ++c)
    inverseStd[c] = 1.0 / std::sqrt(stats.variance[c] + epsilon);
  auto channelOf = [&](int64_t i) { return (i / stats.inner) % channels; };
  auto normalized = [&](int64_t i) {
    int64_t c = channelOf(i);
    return (input.data[i] - stats.mean[c]) * inverseStd[c];
  };
  HostTensor gradScale = filled({channels}), gradBias = filled({channels});
  for (int64_t i = 0; i < input.numElements(); ++i) {
    gradBias.data[channelOf(i)] += gradOutput.data[i];
    gradScale.data[channelOf(i)] += gradOutput.data[i] * normalized(i);
  }
  // dx = scale * invstd / n * (n * g - sum(g) - xhat * sum(g * xhat)): the
  // batch mean and variance depend on x too.
  double count = static_cast<double>(stats.count);
  HostTensor gradInput = filled(input.shape);
  for (int64_t i = 0; i < input.numElements(); ++i) {
    int64_t c = channelOf(i);
    gradInput.data[i] = scale.data[c] * inverseStd[c] / count *
                        (count * gradOutput.data[i] - gradBias.data[c] -
                         normalized(i) * gradScale.data[c]);
  }
  std::vector<HostTensor> results;
  results.push_back(std::move(gradInput));
  results.push_back(std::move(gradScale));
  results.push_back(std::move(gradBias));
  return results;
}

KernelResult layerNormBackwardKernel(graph::LayerNormBackwardOp op,
                                     const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &input = values[op.getInput()];
  const HostTensor &scale = values[op.getScale()];
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(input.shape.size()) ||
      gradOutput.shape != input.shape)
    return kernelError("expected grad_output and input of one shape and an "
                       "axis in range");
  ArrayRef<int64_t> normalizedShape =
      ArrayRef<int64_t>(input.shape).drop_front(axis);
  int64_t size = product(normalizedShape);
  double epsilon = op.getEpsilon().convertToDouble();
  HostTensor gradInput = filled(input.shape);
  HostTensor gradScale = filled(normalizedShape);
  HostTensor gradBias = filled(normalizedShape);
  std::vector<double> normalized(size), gradNormalized(size);
  for (int64_t row = 0; row * size < input.numElements(); ++row) {
    RowStatistics stats = rowStatistics(input, row, size);
    double inverseStd = stats.inverseStd(epsilon);
    double sumGrad = 0.0, sumGradNormalized = 0.0;
    for (int64_t j = 0; j < size; ++j) {
      double g = gradOutput.data[row * size + j];
      normalized[j] = (input.data[row * size + j] - stats.mean) * inverseStd;
      gradNormalized[j] = g * scale.data[j];
      sumGrad += gradNormalized[j];
      sumGradNormalized += gradNormalized[j] * normalized[j];
      gradScale.data[j] += g * normalized[j];
      gradBias.data[j] += g;
    }
    for (int64_t j = 0; j < size; ++j)
      gradInput.data[row * size + j] =
          inverseStd / static_cast<double>(size) *
          (static_cast<double>(size) * gradNormalized[j] - sumGrad -
           normalized[j] * sumGradNormalized);
  }
  std::vector<HostTensor> results;
  results.push_back(std::move(gradInput));
  results.push_back(std::move(gradScale));
  results.push_back(std::move(gradBias));
  return results;
}

KernelResult gatherBackwardKernel(graph::GatherBackwardOp op,
                                  const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &indices = values[op.getIndices()];
  ArrayRef<int64_t> dataShape = op.getDataShape();
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(dataShape.size()))
    return kernelError("gather axis is out of range");
  llvm::SmallVector<int64_t> outputShape(dataShape.take_front(axis));
  llvm::append_range(outputShape, indices.shape);
  llvm::append_range(outputShape, dataShape.drop_front(axis + 1));
  if (auto error = expectShape(gradOutput, outputShape, "grad_output"))
    return std::move(error);
  // Scatter-add: an index gathered twice receives both gradients.
  HostTensor gradData = filled(dataShape);
  if (auto error = forEachGathered(
          dataShape, indices, axis, [&](int64_t outputFlat, int64_t dataFlat) {
            gradData.data[dataFlat] += gradOutput.data[outputFlat];
          }))
    return std::move(error);
  return result(std::move(gradData));
}

KernelResult gatherElementsBackwardKernel(graph::GatherElementsBackwardOp op,
                                          const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  const HostTensor &indices = values[op.getIndices()];
  if (auto error = expectShape(gradOutput, indices.shape, "grad_output"))
    return std::move(error);
  // Scatter-add: an element picked twice receives both gradients.
  HostTensor gradData = filled(op.getDataShape());
  if (auto error =
          forEachGatheredElement(op.getDataShape(), indices, op.getAxis(),
                                 [&](int64_t outputFlat, int64_t dataFlat) {
                                   gradData.data[dataFlat] +=
                                       gradOutput.data[outputFlat];
                                 }))
    return std::move(error);
  return result(std::move(gradData));
}

KernelResult convMatrixBackwardKernel(graph::ConvMatrixBackwardOp op,
                                      const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  ArrayRef<int64_t> weightShape = op.getWeightShape();
  auto shape = graph::convMatrixShape(
      std::nullopt, weightShape, op.getInputSpatial(), op.getOutputSpatial(),
      op.getStrides(), op.getPads());
  if (failed(shape))
    return kernelError("conv_matrix_backward: weight shape " +
                       formatShape(weightShape) + " does not fit the planes");
  if (auto error = expectShape(gradOutput, *shape, "grad_output"))
    return std::move(error);
  HostTensor gradWeight = filled(weightShape);
  if (auto error = forEachConvMatrixEntry(
          weightShape, op.getInputSpatial(), op.getOutputSpatial(),
          op.getStrides(), op.getPads(), [&](int64_t entry, int64_t tap) {
            gradWeight.data[tap] += gradOutput.data[entry];
          }))
    return std::move(error);
  return result(std::move(gradWeight));
}

KernelResult sliceBackwardKernel(graph::SliceBackwardOp op,
                                 const Values &values) {
  const HostTensor &gradOutput = values[op.getGradOutput()];
  ArrayRef<int64_t> inputShape = op.getInputShape();
  ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps(),
                    ends = op.getEnds();
  size_t rank = inputShape.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return kernelError("slice needs one start, end and step per dim");
  llvm::SmallVector<int64_t> outputShape;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0)
      return kernelError("slice step is 0");
    int64_t span = steps[d] > 0 ? ends[d] - starts[d] : starts[d] - ends[d];
    int64_t stride = std::abs(steps[d]);
    outputShape.push_back(std::max<int64_t>(0, (span + stride - 1) / stride));
  }
  if (auto error = expectShape(gradOutput, outputShape, "grad_output"))
    return std::move(error);
  HostTensor gradInput = filled(inputShape);
  llvm::SmallVector<int64_t> inputStrides = stridesOf(inputShape);
  llvm::SmallVector<int64_t> inputIndex(rank);
  int64_t flat = 0;
  bool inside = true;
  forEachIndex(outputShape, [&](ArrayRef<int64_t> index) {
    for (size_t d = 0; d < rank; ++d) {
      inputIndex[d] = starts[d] + index[d] * steps[d];
      inside &= inputIndex[d] >= 0 && inputIndex[d] < inputShape[d];
    }
    if (inside)
      gradInput.data[ravel(inputIndex, inputStrides)] = gradOutput.data[flat];
    ++flat;
  });
  if (!inside)
    return kernelError("the slice reaches outside input_shape " +
                       formatShape(inputShape));
  return result(std::move(gradInput));
}

} // namespace

void registerBackwardKernels(KernelTable &table) {
  table.add<graph::ConvBackwardInputOp>(convBackwardInputKernel);
  table.add<graph::ConvBackwardWeightOp>(convBackwardWeightKernel);
  table.add<graph::MaxPoolBackwardOp>(maxPoolBackwardKernel);
  table.add<graph::AvgPoolBackwardOp>(avgPoolBackwardKernel);
  table.add<graph::BatchNormTrainingBackwardOp>(
      batchNormTrainingBackwardKernel);
  table.add<graph::LayerNormBackwardOp>(layerNormBackwardKernel);
  table.add<graph::GatherBackwardOp>(gatherBackwardKernel);
  table.add<graph::GatherElementsBackwardOp>(gatherElementsBackwardKernel);
  table.add<graph::SliceBackwardOp>(sliceBackwardKernel);
  table.add<graph::ConvMatrixBackwardOp>(convMatrixBackwardKernel);
}

} // namespace trainc::interpreter
