//===- GatherHandlers.cpp - ONNX Gather and GatherElements ----------------===//
//
// Gather of values known at import time is evaluated here (shape
// subgraphs); with constant indices that pick one position or evenly
// spaced ones it is a strided slice; otherwise a graph.gather.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::import {
namespace {

LogicalResult importGather(NodeImporter &n) {
  const KnownTensor *data = n.known(0), *indices = n.known(1);
  auto axisValue = n.getInt("axis", 0);
  if (data && indices && !data->isFloat() && data->shape.size() == 1 &&
      axisValue == 0) {
    KnownTensor result;
    result.elementType = data->elementType;
    result.shape = indices->shape;
    int64_t size = data->shape[0];
    for (int64_t index : indices->ints) {
      if (index < -size || index >= size)
        return n.error("index " + std::to_string(index) +
                       " is out of range for size " + std::to_string(size));
      result.ints.push_back(data->ints[index < 0 ? index + size : index]);
    }
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(axisValue, type->getRank());
  if (failed(axis))
    return failure();
  // Constant indices that pick one position, or evenly spaced ones
  // (torch's qkv[0], x[:, 2], x[:, ::2] exports): a strided slice, which
  // moves the elements as a view does and differentiates to zeros plus a
  // copy, where a gather sums over every position of the axis.
  if (indices && (indices->shape.empty() || indices->shape.size() == 1)) {
    int64_t size = type->getDimSize(*axis);
    SmallVector<int64_t> positions;
    for (int64_t index : indices->ints)
      positions.push_back(index < 0 ? index + size : index);
    int64_t step = positions.size() > 1 ? positions[1] - positions[0] : 1;
    bool strided = !positions.empty() && type->hasStaticShape() && step >= 1;
    for (size_t i = 0; strided && i < positions.size(); ++i)
      strided = positions[i] >= 0 && positions[i] < size &&
                positions[i] == positions[0] + int64_t(i) * step;
    if (strided) {
      auto data = n.input(0);
      if (failed(data))
        return failure();
      auto slice = sliceAxis(n, *data, *axis, positions.front(),
                             positions.back() + 1, step);
      if (failed(slice))
        return failure();
      if (indices->shape.empty()) {
        SmallVector<int64_t> shape(type->getShape());
        shape.erase(shape.begin() + *axis);
        slice =
            n.create<graph::ReshapeOp>({*slice}, {n.arrayAttr("shape", shape)});
        if (failed(slice))
          return failure();
      }
      n.setOutput(0, *slice);
      return success();
    }
  }
  auto indexValue = n.input(1);
  if (failed(indexValue))
    return failure();
  auto result = n.create<graph::GatherOp>({*n.input(0), *indexValue},
                                          {n.i64Attr("axis", *axis)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importGatherElements(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axis = n.normalizeAxis(n.getInt("axis", 0), type->getRank());
  if (failed(axis))
    return failure();
  auto data = n.input(0);
  if (failed(data))
    return failure();
  auto indices = n.input(1);
  if (failed(indices))
    return failure();
  auto result = n.create<graph::GatherElementsOp>({*data, *indices},
                                                  {n.i64Attr("axis", *axis)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

} // namespace

void registerGatherHandlers(HandlerTable &table) {
  table["Gather"] = importGather;
  table["GatherElements"] = importGatherElements;
}

} // namespace trainc::import
