//===- TensorKernels.cpp - data movement ----------------------------------===//
//
// Kernels of reshape, transpose, expand, concat, slice and gather. Each
// computes its result shape from its operands and attributes (the driver
// then checks it against the op's type).
//
//===----------------------------------------------------------------------===//
#include "lib/Interpreter/Kernels.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;
namespace graph = trainc::graph;

namespace trainc::interpreter {
namespace {

KernelResult reshapeKernel(graph::ReshapeOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  // ONNX Reshape (allowzero = 0): 0 copies the input dim at that index,
  // one -1 takes whatever count is left.
  llvm::SmallVector<int64_t> shape(op.getShape());
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) {
      if (i >= input.shape.size())
        return kernelError("entry 0 at index " + std::to_string(i) +
                           " has no input dim to copy");
      shape[i] = input.shape[i];
    }
    if (shape[i] == -1) {
      if (inferred)
        return kernelError("more than one -1 entry");
      inferred = i;
      continue;
    }
    if (shape[i] < 0)
      return kernelError("negative entry " + std::to_string(shape[i]));
    known *= shape[i];
  }
  if (inferred) {
    if (known == 0 || input.numElements() % known != 0)
      return kernelError("cannot infer the -1 entry for input " +
                         formatShape(input.shape));
    shape[*inferred] = input.numElements() / known;
  }
  if (product(shape) != input.numElements())
    return kernelError("cannot reshape " + formatShape(input.shape) + " into " +
                       formatShape(shape));
  HostTensor output = input;
  output.shape.assign(shape.begin(), shape.end());
  return result(std::move(output));
}

KernelResult transposeKernel(graph::TransposeOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  ArrayRef<int64_t> perm = op.getPerm();
  if (perm.size() != input.shape.size())
    return kernelError("the permutation does not match the input rank");
  llvm::SmallVector<int64_t> shape;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= static_cast<int64_t>(input.shape.size()))
      return kernelError("permutation entry out of range");
    shape.push_back(input.shape[axis]);
  }
  HostTensor output = filled(shape);
  llvm::SmallVector<int64_t> inputStrides = stridesOf(input.shape);
  llvm::SmallVector<int64_t> inputIndex(shape.size());
  int64_t flat = 0;
  forEachIndex(shape, [&](ArrayRef<int64_t> index) {
    // Output dim i walks input dim perm[i].
    for (size_t i = 0; i < perm.size(); ++i)
      inputIndex[perm[i]] = index[i];
    output.data[flat++] = input.data[ravel(inputIndex, inputStrides)];
  });
  return result(std::move(output));
}

KernelResult expandKernel(graph::ExpandOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  auto shape = broadcastShapes(input.shape, op.getShape());
  if (!shape)
    return kernelError("cannot expand " + formatShape(input.shape) + " to " +
                       formatShape(op.getShape()));
  HostTensor output = filled(*shape);
  BroadcastIndexer source(*shape, input.shape);
  for (int64_t i = 0; i < output.numElements(); ++i)
    output.data[i] = input.data[source(i)];
  return result(std::move(output));
}

KernelResult concatKernel(graph::ConcatOp op, const Values &values) {
  int64_t axis = op.getAxis();
  const HostTensor &first = values[op.getInputs().front()];
  if (axis < 0 || axis >= static_cast<int64_t>(first.shape.size()))
    return kernelError("concat axis is out of range");
  llvm::SmallVector<int64_t> shape(first.shape.begin(), first.shape.end());
  shape[axis] = 0;
  for (Value value : op.getInputs()) {
    const HostTensor &input = values[value];
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != axis &&
          (input.shape.size() != shape.size() || input.shape[d] != shape[d]))
        return kernelError("inputs " + formatShape(first.shape) + " and " +
                           formatShape(input.shape) + " differ off the axis");
    shape[axis] += input.shape[axis];
  }
  HostTensor output = filled(shape);
  llvm::SmallVector<int64_t> outputStrides = stridesOf(shape);
  int64_t offset = 0;
  for (Value value : op.getInputs()) {
    const HostTensor &input = values[value];
    int64_t flat = 0;
    forEachIndex(input.shape, [&](ArrayRef<int64_t> index) {
      llvm::SmallVector<int64_t> target(index);
      target[axis] += offset;
      output.data[ravel(target, outputStrides)] = input.data[flat++];
    });
    offset += input.shape[axis];
  }
  return result(std::move(output));
}

KernelResult sliceKernel(graph::SliceOp op, const Values &values) {
  const HostTensor &input = values[op.getInput()];
  ArrayRef<int64_t> starts = op.getStarts(), ends = op.getEnds(),
                    steps = op.getSteps();
  size_t rank = input.shape.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return kernelError("slice needs one start, end and step per dim");
  llvm::SmallVector<int64_t> shape;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = input.shape[d], start = starts[d], end = ends[d],
            step = steps[d];
    // The normalized form the op's description promises.
    bool valid = step > 0 ? 0 <= start && start <= dim && 0 <= end && end <= dim
                 : step < 0
                     ? 0 <= start && start < dim && -1 <= end && end < dim
                     : false;
    if (!valid)
      return kernelError("slice (start " + std::to_string(start) + ", end " +
                         std::to_string(end) + ", step " +
                         std::to_string(step) + ") is not normalized for dim " +
                         std::to_string(d) + " of size " + std::to_string(dim));
    int64_t span = step > 0 ? end - start : start - end;
    int64_t stride = step > 0 ? step : -step;
    shape.push_back(std::max<int64_t>(0, (span + stride - 1) / stride));
  }
  HostTensor output = filled(shape);
  llvm::SmallVector<int64_t> inputStrides = stridesOf(input.shape);
  llvm::SmallVector<int64_t> inputIndex(rank);
  int64_t flat = 0;
  forEachIndex(shape, [&](ArrayRef<int64_t> index) {
    for (size_t d = 0; d < rank; ++d)
      inputIndex[d] = starts[d] + index[d] * steps[d];
    output.data[flat++] = input.data[ravel(inputIndex, inputStrides)];
  });
  return result(std::move(output));
}

KernelResult gatherKernel(graph::GatherOp op, const Values &values) {
  const HostTensor &data = values[op.getData()];
  const HostTensor &indices = values[op.getIndices()];
  int64_t axis = op.getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(data.shape.size()))
    return kernelError("gather axis is out of range");
  ArrayRef<int64_t> dataShape = data.shape;
  // data.shape[:axis] + indices.shape + data.shape[axis+1:]
  llvm::SmallVector<int64_t> shape(dataShape.take_front(axis));
  llvm::append_range(shape, indices.shape);
  llvm::append_range(shape, dataShape.drop_front(axis + 1));
  HostTensor output = filled(shape);
  if (auto error = forEachGathered(dataShape, indices, axis,
                                   [&](int64_t outputFlat, int64_t dataFlat) {
                                     output.data[outputFlat] = data.data[dataFlat];
                                   }))
    return std::move(error);
  return result(std::move(output));
}

KernelResult gatherElementsKernel(graph::GatherElementsOp op,
                                  const Values &values) {
  const HostTensor &data = values[op.getData()];
  const HostTensor &indices = values[op.getIndices()];
  HostTensor output = filled(indices.shape);
  if (auto error =
          forEachGatheredElement(data.shape, indices, op.getAxis(),
                                 [&](int64_t outputFlat, int64_t dataFlat) {
                                   output.data[outputFlat] =
                                       data.data[dataFlat];
                                 }))
    return std::move(error);
  return result(std::move(output));
}

} // namespace

void registerTensorKernels(KernelTable &table) {
  table.add<graph::ReshapeOp>(reshapeKernel);
  table.add<graph::TransposeOp>(transposeKernel);
  table.add<graph::ExpandOp>(expandKernel);
  table.add<graph::ConcatOp>(concatKernel);
  table.add<graph::SliceOp>(sliceKernel);
  table.add<graph::GatherOp>(gatherKernel);
  table.add<graph::GatherElementsOp>(gatherElementsKernel);
}

} // namespace trainc::interpreter
