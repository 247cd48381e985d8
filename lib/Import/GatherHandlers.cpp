//===- GatherHandlers.cpp - ONNX Gather, GatherElements, GatherND ---------===//
//
// Gather of values known at import time is evaluated here (shape
// subgraphs); with constant indices that pick one position or evenly
// spaced ones it is a strided slice; otherwise a graph.gather. GatherND
// is a graph.gather too, along the first axis of the data seen as one
// axis for the positions its indices name.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

#include "llvm/Support/MathExtras.h"

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
  if (indices && (indices->shape.empty() || indices->shape.size() == 1) &&
      type->hasStaticShape()) {
    int64_t size = type->getDimSize(*axis);
    SmallVector<int64_t> positions;
    for (int64_t index : indices->ints)
      positions.push_back(index < 0 ? index + size : index);
    // Every position on the axis first, so that the differences below
    // cannot overflow (a file may hold any int64 index).
    bool strided =
        !positions.empty() && llvm::all_of(positions, [&](int64_t position) {
          return position >= 0 && position < size;
        });
    int64_t step =
        strided && positions.size() > 1 ? positions[1] - positions[0] : 1;
    strided = strided && step >= 1;
    for (size_t i = 1; strided && i < positions.size(); ++i)
      strided = positions[i] - positions[i - 1] == step;
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

/// An i64 constant of `shape` holding `values`.
FailureOr<Value> indexConstant(NodeImporter &n, ArrayRef<int64_t> shape,
                               ArrayRef<int64_t> values) {
  KnownTensor tensor =
      KnownTensor::ofInts(n.builder().getI64Type(), shape, values);
  return n.create<graph::ConstantOp>({},
                                     {n.namedAttr("value", tensor.toAttr())});
}

/// The flat positions of GatherND's index tuples computed at run time:
/// for indices [..., k] into axes of sizes `sizes` (k of them), the
/// row-major position of each tuple among those axes, [...] + [1], each
/// entry made non-negative as ONNX's negative indices count from the end;
/// a tuple with an entry out of range gets the position one past the last,
/// which graph.gather refuses when it runs.
FailureOr<Value> flatPositions(NodeImporter &n, Value indices,
                               ArrayRef<int64_t> sizes) {
  int64_t last = cast<RankedTensorType>(indices.getType()).getRank() - 1;
  auto zero = indexConstant(n, {}, {0});
  if (failed(zero))
    return failure();
  Value flat, inRange;
  int64_t count = 1;
  for (auto [j, size] : llvm::enumerate(sizes)) {
    count *= size;
    auto entry = sliceAxis(n, indices, last, j, j + 1, 1);
    auto bound = indexConstant(n, {}, {size});
    if (failed(entry) || failed(bound))
      return failure();
    // entry < 0 ? entry + size : entry, then 0 <= entry < size.
    auto negative = n.create<graph::LessOp>({*entry, *zero});
    auto wrapped = n.create<graph::AddOp>({*entry, *bound});
    if (failed(negative) || failed(wrapped))
      return failure();
    entry = n.create<graph::WhereOp>({*negative, *wrapped, *entry});
    if (failed(entry))
      return failure();
    auto below = n.create<graph::LessOp>({*entry, *zero});
    auto inside = n.create<graph::LessOp>({*entry, *bound});
    if (failed(below) || failed(inside))
      return failure();
    auto notBelow = n.create<graph::NotOp>({*below});
    if (failed(notBelow))
      return failure();
    auto valid = n.create<graph::AndOp>({*notBelow, *inside});
    if (failed(valid))
      return failure();
    if (!flat) {
      flat = *entry;
      inRange = *valid;
      continue;
    }
    // Horner: flat * size + entry.
    auto scaled = n.create<graph::MulOp>({flat, *bound});
    if (failed(scaled))
      return failure();
    auto sum = n.create<graph::AddOp>({*scaled, *entry});
    auto both = n.create<graph::AndOp>({inRange, *valid});
    if (failed(sum) || failed(both))
      return failure();
    flat = *sum;
    inRange = *both;
  }
  auto pastEnd = indexConstant(n, {}, {count});
  if (failed(pastEnd))
    return failure();
  return n.create<graph::WhereOp>({inRange, flat, *pastEnd});
}

/// GatherND (batch_dims 0): indices [..., k] name positions among the
/// data's first k axes; the result is [...] + data.shape[k:]. The data is
/// reshaped to [d0 * ... * d(k-1)] + data.shape[k:] and gathered along
/// its first axis at each tuple's flat position: computed here when the
/// indices are known at import time (Swin-T's relative position index, as
/// torch 2.x's dynamo exporter writes it), by graph ops otherwise.
LogicalResult importGatherND(NodeImporter &n) {
  if (int64_t batchDims = n.getInt("batch_dims", 0))
    return n.error("batch_dims = " + std::to_string(batchDims) +
                   " is not supported (only 0)");
  auto dataType = n.inputType(0);
  auto indexType = n.inputType(1);
  if (failed(dataType) || failed(indexType))
    return failure();
  if (!indexType->getElementType().isInteger(64))
    return n.error("indices must be int64");
  ArrayRef<int64_t> indexShape = indexType->getShape();
  if (indexShape.empty() || !indexType->hasStaticShape())
    return n.error("indices of rank at least 1 and a static shape are "
                   "supported, got " +
                   std::to_string(indexShape.size()) + " dimensions");
  int64_t k = indexShape.back();
  ArrayRef<int64_t> dataShape = dataType->getShape();
  if (k < 1 || k > static_cast<int64_t>(dataShape.size()))
    return n.error("the indices' last dimension is " + std::to_string(k) +
                   ", the data has " + std::to_string(dataShape.size()) +
                   " dimensions");
  ArrayRef<int64_t> named = dataShape.take_front(k);
  // Flat positions need the sizes of the axes they span (a known index is
  // also checked against its axis here); the reshape needs all of them.
  const KnownTensor *known = n.known(1);
  if (k > 1 && !dataType->hasStaticShape())
    return n.error("the data's shape must be static");
  if (known && ShapedType::isDynamic(dataShape[0]))
    return n.error("the data's first dimension must be static");
  // graph.reshape reads a 0 entry as "keep the input's size".
  if (k > 1 && llvm::is_contained(dataShape, 0))
    return n.error("data with a dimension of size 0 is not supported with "
                   "index tuples of " +
                   std::to_string(k) + " entries");
  // The reshapes below write sizes: one that changes with the batch is
  // baked in.
  auto anyOf = [](ArrayRef<bool> flags) {
    return llvm::is_contained(flags, true);
  };
  if ((k > 1 || !known) &&
      (anyOf(n.batchDependence("gathernd-data", dataShape)) ||
       anyOf(n.batchDependence("gathernd-indices", indexShape))))
    n.warning("GatherND's shapes depend on the batch size; baking the "
              "current batch size into its reshapes");
  SmallVector<int64_t> tuples(indexShape.drop_back());
  int64_t count = 1;
  for (int64_t size : named)
    if (!ShapedType::isDynamic(size) && llvm::MulOverflow(count, size, count))
      return n.error("the data's first " + std::to_string(k) +
                     " dimensions hold more than 2^63 positions");

  FailureOr<Value> positions;
  if (known) {
    SmallVector<int64_t> flat;
    for (size_t t = 0; t < known->ints.size(); t += k) {
      int64_t position = 0;
      for (int64_t j = 0; j < k; ++j) {
        int64_t index = known->ints[t + j], size = named[j];
        if (index < -size || index >= size)
          return n.error("index " + std::to_string(index) + " of axis " +
                         std::to_string(j) + " is out of range for size " +
                         std::to_string(size));
        position = position * size + (index < 0 ? index + size : index);
      }
      flat.push_back(position);
    }
    positions = indexConstant(n, tuples, flat);
  } else {
    auto indices = n.input(1);
    if (failed(indices))
      return failure();
    positions = k == 1 ? *indices : flatPositions(n, *indices, named);
    if (succeeded(positions))
      positions = n.create<graph::ReshapeOp>({*positions},
                                             {n.arrayAttr("shape", tuples)});
  }
  auto data = n.input(0);
  if (failed(positions) || failed(data))
    return failure();
  if (k > 1) {
    SmallVector<int64_t> shape = {count};
    llvm::append_range(shape, dataShape.drop_front(k));
    data = n.create<graph::ReshapeOp>({*data}, {n.arrayAttr("shape", shape)});
    if (failed(data))
      return failure();
  }
  auto result =
      n.create<graph::GatherOp>({*data, *positions}, {n.i64Attr("axis", 0)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

} // namespace

void registerGatherHandlers(HandlerTable &table) {
  table["Gather"] = importGather;
  table["GatherElements"] = importGatherElements;
  table["GatherND"] = importGatherND;
}

} // namespace trainc::import
