//===- PadHandler.cpp - ONNX Pad as slices, constants and concats --------===//
//
// Pad (opset 13; `axes` from 18, `wrap` from 19) becomes, for each padded
// axis in turn, graph ops the compiler already differentiates, fuses and
// runs on every target:
//
//   constant  concat(c, x, c)         c: a splat constant of the pad's shape
//   edge      concat(expand(x[0:1]), x, expand(x[n-1:n]))
//   reflect   concat(x[b:0:-1], x, x[n-2:n-2-e:-1])
//   wrap      concat(x[n-b:n], x, x[0:e])
//
// and a negative pad is a slice that removes elements. The gradient is the
// concat's (slices of the output gradient, summed where an input element
// was copied more than once). PyTorch exports avg_pool2d(padding=...) and
// reflection/replication padding this way.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// One axis of a Pad: what is added (positive) or removed (negative) at
/// each end.
struct AxisPad {
  int64_t axis, begin, end;
};

/// The `size` elements added at one end of `axis` (`atEnd`: after the
/// input), for `mode`.
FailureOr<Value> padBlock(NodeImporter &n, Value input, StringRef mode,
                          double value, int64_t axis, int64_t size,
                          bool atEnd) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t dim = type.getDimSize(axis);
  if (mode == "constant") {
    SmallVector<int64_t> shape(type.getShape());
    shape[axis] = size;
    auto blockType = RankedTensorType::get(shape, type.getElementType());
    Attribute element =
        isa<FloatType>(type.getElementType())
            ? Attribute(FloatAttr::get(type.getElementType(), value))
            : Attribute(IntegerAttr::get(type.getElementType(),
                                         static_cast<int64_t>(value)));
    return n.create<graph::ConstantOp>(
        {}, {n.namedAttr("value", DenseElementsAttr::get(blockType, element))});
  }
  if (mode == "edge") {
    auto edge = atEnd ? sliceAxis(n, input, axis, dim - 1, dim, 1)
                      : sliceAxis(n, input, axis, 0, 1, 1);
    if (failed(edge))
      return failure();
    // Entries 1 keep the input's dimensions (the batch stays relative).
    SmallVector<int64_t> shape(type.getRank(), 1);
    shape[axis] = size;
    return n.create<graph::ExpandOp>({*edge}, {n.arrayAttr("shape", shape)});
  }
  if (mode == "reflect")
    return atEnd ? sliceAxis(n, input, axis, dim - 2, dim - 2 - size, -1)
                 : sliceAxis(n, input, axis, size, 0, -1);
  // wrap
  return atEnd ? sliceAxis(n, input, axis, 0, size, 1)
               : sliceAxis(n, input, axis, dim - size, dim, 1);
}

LogicalResult importPad(NodeImporter &n) {
  std::string mode = n.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      !(mode == "wrap" && n.opset() >= 19))
    return n.error("mode '" + mode + "' is not a Pad mode of opset " +
                   std::to_string(n.opset()) + " (constant, reflect, edge" +
                   (n.opset() >= 19 ? ", wrap)" : ")"));
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  auto pads = n.knownInts(1, "Pad pads");
  if (failed(pads))
    return failure();
  double value = 0;
  if (n.hasInput(2) && mode == "constant") {
    auto scalar = n.knownScalar(2, "Pad constant_value");
    if (failed(scalar))
      return failure();
    value = *scalar;
  }
  SmallVector<int64_t> axes;
  if (n.hasInput(3)) {
    auto given = n.knownInts(3, "Pad axes");
    if (failed(given))
      return failure();
    for (int64_t axis : *given) {
      auto normalized = n.normalizeAxis(axis, rank);
      if (failed(normalized))
        return failure();
      if (llvm::is_contained(axes, *normalized))
        return n.error("axis " + std::to_string(axis) + " is listed twice");
      axes.push_back(*normalized);
    }
  } else {
    for (int64_t axis = 0; axis < rank; ++axis)
      axes.push_back(axis);
  }
  if (pads->size() != 2 * axes.size())
    return n.error("pads has " + std::to_string(pads->size()) +
                   " entries; expected 2 per axis (" +
                   std::to_string(2 * axes.size()) + ")");

  // Every tensor built below is at most, along each axis, the larger of
  // the input's and the result's extent: bound that before building (pads
  // from a hostile file must not overflow a shape).
  SmallVector<int64_t> envelope(type->getShape());
  for (auto [k, axis] : llvm::enumerate(axes)) {
    int64_t begin = (*pads)[k], end = (*pads)[k + axes.size()], extent;
    // (Compared, not std::abs'ed: -INT64_MIN overflows.)
    if (begin < -kMaxTensorBytes || begin > kMaxTensorBytes ||
        end < -kMaxTensorBytes || end > kMaxTensorBytes ||
        __builtin_add_overflow(envelope[axis], std::max<int64_t>(0, begin),
                               &extent) ||
        __builtin_add_overflow(extent, std::max<int64_t>(0, end), &extent))
      return n.error("pads (" + std::to_string(begin) + ", " +
                     std::to_string(end) + ") of axis " + std::to_string(axis) +
                     " are out of range");
    envelope[axis] = extent;
  }
  if (std::string bad = checkShape(envelope, 8); !bad.empty())
    return n.error("the padded tensor would have " + bad);

  auto value0 = n.input(0);
  if (failed(value0))
    return failure();
  Value result = *value0;
  for (auto [k, axis] : llvm::enumerate(axes)) {
    AxisPad pad{axis, (*pads)[k], (*pads)[k + axes.size()]};
    int64_t dim = type->getDimSize(axis);
    // Negative pads remove elements first.
    if (pad.begin < 0 || pad.end < 0) {
      int64_t start = std::max<int64_t>(0, -pad.begin);
      int64_t end = dim - std::max<int64_t>(0, -pad.end);
      if (start >= end)
        return n.error("pads remove all " + std::to_string(dim) +
                       " elements of axis " + std::to_string(axis));
      auto sliced = sliceAxis(n, result, axis, start, end, 1);
      if (failed(sliced))
        return failure();
      result = *sliced;
      dim = end - start;
    }
    int64_t begin = std::max<int64_t>(0, pad.begin);
    int64_t end = std::max<int64_t>(0, pad.end);
    if (begin == 0 && end == 0)
      continue;
    if ((mode == "reflect" && (begin >= dim || end >= dim)) ||
        (mode == "wrap" && (begin > dim || end > dim)))
      return n.error(mode + " pads (" + std::to_string(begin) + ", " +
                     std::to_string(end) + ") of axis " + std::to_string(axis) +
                     " must be " +
                     (mode == "reflect" ? "smaller than" : "at most") +
                     " its size " + std::to_string(dim));
    SmallVector<Value> parts;
    if (begin > 0) {
      auto block = padBlock(n, result, mode, value, axis, begin, false);
      if (failed(block))
        return failure();
      parts.push_back(*block);
    }
    parts.push_back(result);
    if (end > 0) {
      auto block = padBlock(n, result, mode, value, axis, end, true);
      if (failed(block))
        return failure();
      parts.push_back(*block);
    }
    auto concat = n.create<graph::ConcatOp>(parts, {n.i64Attr("axis", axis)});
    if (failed(concat))
      return failure();
    result = *concat;
  }
  n.setOutput(0, result);
  return success();
}

} // namespace

void registerPadHandler(HandlerTable &table) { table["Pad"] = importPad; }

} // namespace trainc::import
