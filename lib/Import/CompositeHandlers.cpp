//===- CompositeHandlers.cpp - ONNX ops as compositions of graph ops -----===//
//
// Ops real exports use whose math is a short composition of graph ops the
// compiler already differentiates and runs on every target, with the same
// gradient PyTorch computes (the boundaries included):
//
//   HardSigmoid  clip(x * alpha + beta, 0, 1)
//   HardSwish    x * clip(x / 6 + 1/2, 0, 1)
//   Sum, Mean    a chain of broadcasting adds (Mean: then / n)
//   Max, Min     reduce_max over the float inputs, each broadcast to the
//                result and stacked on a new axis (Min: -max(-x)): NaN
//                wins and ties share the gradient evenly, as in PyTorch's
//                maximum and minimum; integers: a chain of selects
//   CumSum       log2(n) steps of y[i] += y[i - 2^k] (Hillis-Steele: a
//                concat of a slice and a sum of slices), in reverse through
//                reversed slices, exclusive after a one-step shift
//   Tile         reshape, expand, reshape per repeated axis
//   Trilu        where(mask, x, 0), the mask a constant
//   InstanceNormalization, GroupNormalization
//                layer_norm over each (sample, group) of x reshaped to
//                [N, groups, rest], then a per-channel scale and shift
//                (an instance is a group of one channel)
//   Range        evaluated at import time (its inputs must be known)
//   ScatterND    evaluated at import time (Swin's shifted-window mask is
//                built with slice assignments on shape-derived tensors)
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include <cmath>

using namespace mlir;

namespace trainc::import {
namespace {

/// A scalar constant of `element` type (a float).
FailureOr<Value> scalar(NodeImporter &n, double value, Type element) {
  auto type = RankedTensorType::get({}, element);
  return n.create<graph::ConstantOp>(
      {}, {n.namedAttr("value", DenseElementsAttr::get(
                                    type, FloatAttr::get(element, value)))});
}

/// clip(x * alpha + beta, 0, 1).
FailureOr<Value> hardSigmoid(NodeImporter &n, Value x, double alpha,
                             double beta) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  auto a = scalar(n, alpha, element);
  auto b = scalar(n, beta, element);
  if (failed(a) || failed(b))
    return failure();
  auto scaled = n.create<graph::MulOp>({x, *a});
  if (failed(scaled))
    return failure();
  auto shifted = n.create<graph::AddOp>({*scaled, *b});
  if (failed(shifted))
    return failure();
  return n.create<graph::ClipOp>(
      {*shifted}, {n.f64Attr("min", 0.0), n.f64Attr("max", 1.0)});
}

LogicalResult importHardSigmoid(NodeImporter &n) {
  auto x = n.input(0);
  if (failed(x))
    return failure();
  auto result =
      hardSigmoid(n, *x, n.getFloat("alpha", 0.2), n.getFloat("beta", 0.5));
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importHardSwish(NodeImporter &n) {
  auto x = n.input(0);
  if (failed(x))
    return failure();
  auto gate = hardSigmoid(n, *x, 1.0 / 6.0, 0.5);
  if (failed(gate))
    return failure();
  auto result = n.create<graph::MulOp>({*x, *gate});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

/// Sum of every input, broadcasting; Mean divides it by their number.
LogicalResult importSum(NodeImporter &n, bool mean) {
  if (n.node().input_size() == 0)
    return n.error("needs at least one input");
  auto total = n.input(0);
  if (failed(total))
    return failure();
  Value result = *total;
  for (int i = 1; i < n.node().input_size(); ++i) {
    auto next = n.input(i);
    if (failed(next))
      return failure();
    auto sum = n.create<graph::AddOp>({result, *next});
    if (failed(sum))
      return failure();
    result = *sum;
  }
  if (mean && n.node().input_size() > 1) {
    auto count =
        scalar(n, n.node().input_size(),
               cast<RankedTensorType>(result.getType()).getElementType());
    if (failed(count))
      return failure();
    auto divided = n.create<graph::DivOp>({result, *count});
    if (failed(divided))
      return failure();
    result = *divided;
  }
  n.setOutput(0, result);
  return success();
}

/// Max or Min of every input, broadcasting (numpy's maximum: NaN wins).
LogicalResult importExtremum(NodeImporter &n, bool min) {
  if (n.node().input_size() == 0)
    return n.error("needs at least one input");
  SmallVector<Value> inputs;
  SmallVector<int64_t> shape;
  for (int i = 0; i < n.node().input_size(); ++i) {
    auto next = n.input(i);
    if (failed(next))
      return failure();
    ArrayRef<int64_t> nextShape =
        cast<RankedTensorType>(next->getType()).getShape();
    auto broadcast = i == 0 ? SmallVector<int64_t>(nextShape)
                            : graph::broadcastShapes(shape, nextShape);
    if (!broadcast)
      return n.error("input " + std::to_string(i) +
                     " does not broadcast with the ones before it");
    shape = *broadcast;
    inputs.push_back(*next);
  }
  if (inputs.size() == 1) {
    n.setOutput(0, inputs.front());
    return success();
  }
  Type element =
      cast<RankedTensorType>(inputs.front().getType()).getElementType();
  if (!isa<FloatType>(element)) {
    // Integers (no NaN, no gradient): exact selects, one input at a time.
    Value result = inputs.front();
    for (Value next : ArrayRef<Value>(inputs).drop_front()) {
      auto wins = min ? n.create<graph::LessOp>({next, result})
                      : n.create<graph::GreaterOp>({next, result});
      if (failed(wins))
        return failure();
      auto selected = n.create<graph::WhereOp>({*wins, next, result});
      if (failed(selected))
        return failure();
      result = *selected;
    }
    n.setOutput(0, result);
    return success();
  }
  // Each input as [1, shape...]; Min negated (max(-x) = -min(x), NaN kept).
  SmallVector<int64_t> stacked(shape);
  stacked.insert(stacked.begin(), 1);
  SmallVector<Value> rows;
  for (Value input : inputs) {
    Value row = input;
    if (cast<RankedTensorType>(row.getType()).getShape() !=
        ArrayRef<int64_t>(shape)) {
      auto expanded =
          n.create<graph::ExpandOp>({row}, {n.arrayAttr("shape", shape)});
      if (failed(expanded))
        return failure();
      row = *expanded;
    }
    if (min) {
      auto negated = n.create<graph::NegOp>({row});
      if (failed(negated))
        return failure();
      row = *negated;
    }
    auto reshaped =
        n.create<graph::ReshapeOp>({row}, {n.arrayAttr("shape", stacked)});
    if (failed(reshaped))
      return failure();
    rows.push_back(*reshaped);
  }
  auto all = n.create<graph::ConcatOp>(rows, {n.i64Attr("axis", 0)});
  if (failed(all))
    return failure();
  auto result = n.create<graph::ReduceMaxOp>(
      {*all}, {n.arrayAttr("axes", {0}), n.boolAttr("keepdims", false)});
  if (failed(result))
    return failure();
  if (min)
    result = n.create<graph::NegOp>({*result});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

/// Inclusive prefix sums of `x` along `axis`: after step k, y[i] holds the
/// sum of x[i - 2^k + 1 .. i]; the first 2^k entries are final.
FailureOr<Value> prefixSums(NodeImporter &n, Value x, int64_t axis) {
  int64_t length = cast<RankedTensorType>(x.getType()).getDimSize(axis);
  for (int64_t offset = 1; offset < length; offset *= 2) {
    auto head = sliceAxis(n, x, axis, 0, offset);
    auto tail = sliceAxis(n, x, axis, offset, length);
    auto earlier = sliceAxis(n, x, axis, 0, length - offset);
    if (failed(head) || failed(tail) || failed(earlier))
      return failure();
    auto sum = n.create<graph::AddOp>({*tail, *earlier});
    if (failed(sum))
      return failure();
    auto next =
        n.create<graph::ConcatOp>({*head, *sum}, {n.i64Attr("axis", axis)});
    if (failed(next))
      return failure();
    x = *next;
  }
  return x;
}

/// `x` reversed along `axis`.
FailureOr<Value> reverseAxis(NodeImporter &n, Value x, int64_t axis) {
  int64_t length = cast<RankedTensorType>(x.getType()).getDimSize(axis);
  return sliceAxis(n, x, axis, length - 1, -1, -1);
}

LogicalResult importCumSum(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto axes = n.knownInts(1, "CumSum axis");
  if (failed(axes))
    return failure();
  if (axes->size() != 1)
    return n.error("axis must be a scalar");
  auto axis = n.normalizeAxis(axes->front(), type->getRank());
  if (failed(axis))
    return failure();
  int64_t length = type->getDimSize(*axis);
  Value x = *n.input(0);
  if (length == 0) {
    n.setOutput(0, x);
    return success();
  }
  bool reverse = n.getBool("reverse", false);
  FailureOr<Value> result = x;
  if (reverse)
    result = reverseAxis(n, x, *axis);
  if (succeeded(result) && n.getBool("exclusive", false)) {
    // y[0] = 0, y[i] = x[i - 1]: a zero block, then x without its last.
    SmallVector<int64_t> blockShape(type->getShape());
    blockShape[*axis] = 1;
    auto blockType = RankedTensorType::get(blockShape, type->getElementType());
    Attribute zero =
        isa<FloatType>(type->getElementType())
            ? Attribute(FloatAttr::get(type->getElementType(), 0))
            : Attribute(IntegerAttr::get(type->getElementType(), 0));
    auto block = n.create<graph::ConstantOp>(
        {}, {n.namedAttr("value", DenseElementsAttr::get(blockType, zero))});
    auto kept = sliceAxis(n, *result, *axis, 0, length - 1);
    if (failed(block) || failed(kept))
      return failure();
    result =
        n.create<graph::ConcatOp>({*block, *kept}, {n.i64Attr("axis", *axis)});
  }
  if (succeeded(result))
    result = prefixSums(n, *result, *axis);
  if (succeeded(result) && reverse)
    result = reverseAxis(n, *result, *axis);
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importTile(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  auto repeats = n.knownInts(1, "Tile repeats");
  if (failed(repeats))
    return failure();
  if (static_cast<int64_t>(repeats->size()) != type->getRank())
    return n.error("repeats has " + std::to_string(repeats->size()) +
                   " entries for a tensor of rank " +
                   std::to_string(type->getRank()));
  SmallVector<int64_t> shape(type->getShape());
  for (auto [axis, count] : llvm::enumerate(*repeats)) {
    if (count <= 0 || __builtin_mul_overflow(shape[axis], count, &shape[axis]))
      return n.error("repeat " + std::to_string(count) + " of axis " +
                     std::to_string(axis) + " is out of range");
  }
  if (std::string bad = checkShape(shape, 8); !bad.empty())
    return n.error("the tiled tensor would have " + bad);
  // Per repeated axis: a new axis of size 1 before it, expanded to the
  // count, merged with it (the copies follow one another, as Tile's do).
  Value result = *n.input(0);
  for (auto [axis, count] : llvm::enumerate(*repeats)) {
    if (count == 1)
      continue;
    SmallVector<int64_t> current(
        cast<RankedTensorType>(result.getType()).getShape());
    SmallVector<int64_t> split(current), broadcast(current.size() + 1, 1),
        merged(current);
    split.insert(split.begin() + axis, 1);
    broadcast[axis] = count;
    merged[axis] *= count;
    auto inserted =
        n.create<graph::ReshapeOp>({result}, {n.arrayAttr("shape", split)});
    if (failed(inserted))
      return failure();
    auto expanded = n.create<graph::ExpandOp>(
        {*inserted}, {n.arrayAttr("shape", broadcast)});
    if (failed(expanded))
      return failure();
    auto tiled =
        n.create<graph::ReshapeOp>({*expanded}, {n.arrayAttr("shape", merged)});
    if (failed(tiled))
      return failure();
    result = *tiled;
  }
  n.setOutput(0, result);
  return success();
}

LogicalResult importTrilu(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() < 2)
    return n.error("needs a tensor of rank 2 or more");
  int64_t k = 0;
  if (n.hasInput(1)) {
    auto given = n.knownInts(1, "Trilu k");
    if (failed(given))
      return failure();
    if (given->size() != 1)
      return n.error("k must be a scalar");
    k = given->front();
  }
  bool upper = n.getBool("upper", true);
  int64_t rows = type->getDimSize(type->getRank() - 2);
  int64_t columns = type->getDimSize(type->getRank() - 1);
  int64_t plane;
  if (__builtin_mul_overflow(rows, columns, &plane) ||
      plane > (int64_t(1) << 24))
    return n.error("a plane of " + std::to_string(rows) + "x" +
                   std::to_string(columns) +
                   ": more than 2^24 elements for its mask");
  // Kept: j - i >= k (upper) or j - i <= k (lower).
  SmallVector<bool> keep;
  keep.reserve(plane);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < columns; ++j)
      keep.push_back(upper ? j - i >= k : j - i <= k);
  auto maskType =
      RankedTensorType::get({rows, columns}, n.builder().getI1Type());
  auto mask = n.create<graph::ConstantOp>(
      {}, {n.namedAttr("value", DenseElementsAttr::get(maskType, keep))});
  auto zero = scalar(n, 0.0, type->getElementType());
  if (failed(mask) || failed(zero))
    return failure();
  auto result = n.create<graph::WhereOp>({*mask, *n.input(0), *zero});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

/// x: [N, C, D...] normalized over each of `groups` groups of C / groups
/// channels (and all of D), then scaled and shifted per channel: `scale`
/// and `bias` have one value per channel, or per group when `perGroup`
/// (GroupNormalization-18).
LogicalResult normalizeGroups(NodeImporter &n, int64_t groups, bool perGroup) {
  auto type = n.inputType(0);
  auto x = n.input(0), scale = n.input(1), bias = n.input(2);
  if (failed(type) || failed(x) || failed(scale) || failed(bias))
    return failure();
  if (type->getRank() < 3)
    return n.error("needs an input of rank 3 or more ([N, C, D...]), got " +
                   graph::formatShape(type->getShape()));
  if (!type->hasStaticShape())
    return n.error("needs a static input shape, got " +
                   graph::formatShape(type->getShape()));
  ArrayRef<int64_t> shape = type->getShape();
  int64_t channels = shape[1];
  if (groups <= 0 || channels % groups != 0)
    return n.error(std::to_string(channels) + " channels do not split into " +
                   std::to_string(groups) + " groups");
  int64_t rest = type->getNumElements() / (shape[0] * groups);
  int64_t affineSize = perGroup ? groups : channels;
  for (Value value : {*scale, *bias}) {
    auto affine = cast<RankedTensorType>(value.getType());
    if (affine.getShape() != ArrayRef<int64_t>{affineSize})
      return n.error(
          std::string("scale and bias must have shape ") +
          std::to_string(affineSize) +
          (perGroup ? " (a value per group)" : " (a value per channel)") +
          ", got " + graph::formatShape(affine.getShape()));
  }
  Type element = type->getElementType();
  auto grouped = n.create<graph::ReshapeOp>(
      {*x}, {n.arrayAttr("shape", {shape[0], groups, rest})});
  auto onesType = RankedTensorType::get({rest}, element);
  auto ones = n.create<graph::ConstantOp>(
      {}, {n.namedAttr("value", DenseElementsAttr::get(
                                    onesType, FloatAttr::get(element, 1.0)))});
  if (failed(grouped) || failed(ones))
    return failure();
  auto normalized = n.create<graph::LayerNormOp>(
      {*grouped, *ones}, {n.i64Attr("axis", 2),
                          n.f64Attr("epsilon", n.getFloat("epsilon", 1e-5))});
  if (failed(normalized))
    return failure();
  auto result =
      n.create<graph::ReshapeOp>({*normalized}, {n.arrayAttr("shape", shape)});
  if (failed(result))
    return failure();
  // scale and bias as [C, 1, ...] (a group's value repeated over its
  // channels first).
  SmallVector<int64_t> perChannel(shape.size() - 1, 1);
  perChannel[0] = channels;
  for (Value value : {*scale, *bias}) {
    Value affine = value;
    if (perGroup && groups != channels) {
      auto column = n.create<graph::ReshapeOp>(
          {affine}, {n.arrayAttr("shape", {groups, 1})});
      if (failed(column))
        return failure();
      auto repeated = n.create<graph::ExpandOp>(
          {*column}, {n.arrayAttr("shape", {groups, channels / groups})});
      if (failed(repeated))
        return failure();
      affine = *repeated;
    }
    auto reshaped = n.create<graph::ReshapeOp>(
        {affine}, {n.arrayAttr("shape", perChannel)});
    if (failed(reshaped))
      return failure();
    result = value == *scale ? n.create<graph::MulOp>({*result, *reshaped})
                             : n.create<graph::AddOp>({*result, *reshaped});
    if (failed(result))
      return failure();
  }
  n.setOutput(0, *result);
  return success();
}

LogicalResult importInstanceNormalization(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  if (type->getRank() < 2)
    return n.error("needs an input of rank 3 or more ([N, C, D...])");
  return normalizeGroups(n, type->getDimSize(1), /*perGroup=*/false);
}

/// GroupNormalization-18 scales and shifts per group, -21 per channel.
LogicalResult importGroupNormalization(NodeImporter &n) {
  if (n.getInt("stash_type", 1) != 1)
    return n.error("stash_type other than 1 (float statistics) is not "
                   "supported");
  return normalizeGroups(n, n.getInt("num_groups", 0),
                         /*perGroup=*/n.opset() < 21);
}

LogicalResult importRange(NodeImporter &n) {
  const KnownTensor *bounds[3] = {n.known(0), n.known(1), n.known(2)};
  for (unsigned i = 0; i < 3; ++i)
    if (!bounds[i] || bounds[i]->numElements() != 1)
      return n.error("Range's start, limit and delta must be scalars known "
                     "at import time (input " +
                     std::to_string(i) + ")");
  KnownTensor result;
  result.elementType = bounds[0]->elementType;
  auto value = [](const KnownTensor *t) {
    return t->isFloat() ? t->floats.front()
                        : static_cast<double>(t->ints.front());
  };
  double start = value(bounds[0]), limit = value(bounds[1]),
         delta = value(bounds[2]);
  if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) ||
      !std::isfinite(delta))
    return n.error("Range needs finite bounds and a delta that is not 0");
  double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (count > kMaxKnownElements)
    return n.error("Range of " + std::to_string(count) +
                   " elements: more than trainc evaluates at import time");
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) {
    if (result.isFloat())
      result.floats.push_back(start + i * delta);
    else if (int64_t step, next;
             __builtin_mul_overflow(i, bounds[2]->ints.front(), &step) ||
             __builtin_add_overflow(bounds[0]->ints.front(), step, &next))
      return n.error("Range overflows 64-bit integers");
    else
      result.ints.push_back(next);
  }
  result.shape = {static_cast<int64_t>(count)};
  n.setKnownOutput(0, std::move(result));
  return success();
}

LogicalResult importScatterND(NodeImporter &n) {
  const KnownTensor *data = n.known(0), *indices = n.known(1),
                    *updates = n.known(2);
  // A small float initializer is known but is a weight: never folded.
  if (n.isWeight(0) || n.isWeight(2))
    return n.error("ScatterND into or from a model weight is not supported "
                   "(it is evaluated at import time, on constants only)");
  if (!data || !indices || !updates)
    return n.error("ScatterND is supported on tensors known at import time "
                   "only (a mask built from shapes); input " +
                   std::to_string(!data      ? 0
                                  : !indices ? 1
                                             : 2) +
                   " is computed at run time");
  std::string reduction = n.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul")
    return n.error("ScatterND reduction '" + reduction +
                   "' is not supported (none, add, mul)");
  if (data->isFloat() != updates->isFloat() || indices->isFloat() ||
      indices->shape.empty())
    return n.error("ScatterND: the data and updates must have one element "
                   "type and the indices must be integers of rank >= 1");
  int64_t rank = data->shape.size(), k = indices->shape.back();
  if (k < 1 || k > rank)
    return n.error("ScatterND: index tuples of " + std::to_string(k) +
                   " entries for data of rank " + std::to_string(rank));
  // updates.shape = indices.shape[:-1] + data.shape[k:]
  SmallVector<int64_t> expected(indices->shape.begin(),
                                indices->shape.end() - 1);
  expected.append(data->shape.begin() + k, data->shape.end());
  if (ArrayRef<int64_t>(updates->shape) != ArrayRef<int64_t>(expected))
    return n.error("ScatterND: updates have the wrong shape");
  int64_t slice = 1;
  for (int64_t d = k; d < rank; ++d)
    slice *= data->shape[d];
  int64_t tuples = indices->numElements() / k;
  KnownTensor result = *data;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t index = indices->ints[t * k + d], size = data->shape[d];
      if (index < -size || index >= size)
        return n.error("ScatterND: index " + std::to_string(index) +
                       " is out of range for a dimension of " +
                       std::to_string(size));
      offset = offset * size + (index < 0 ? index + size : index);
    }
    offset *= slice;
    for (int64_t e = 0; e < slice; ++e) {
      int64_t from = t * slice + e, to = offset + e;
      if (result.isFloat()) {
        double u = updates->floats[from], &v = result.floats[to];
        v = reduction == "add" ? v + u : reduction == "mul" ? v * u : u;
      } else {
        int64_t u = updates->ints[from], &v = result.ints[to];
        if (reduction == "none")
          v = u;
        else if (reduction == "add" ? __builtin_add_overflow(v, u, &v)
                                    : __builtin_mul_overflow(v, u, &v))
          return n.error("ScatterND overflows 64-bit integers");
      }
    }
  }
  n.setKnownOutput(0, std::move(result));
  return success();
}

} // namespace

void registerCompositeHandlers(HandlerTable &table) {
  table["HardSigmoid"] = importHardSigmoid;
  table["HardSwish"] = importHardSwish;
  table["Sum"] = [](NodeImporter &n) { return importSum(n, false); };
  table["Mean"] = [](NodeImporter &n) { return importSum(n, true); };
  table["Max"] = [](NodeImporter &n) { return importExtremum(n, false); };
  table["Min"] = [](NodeImporter &n) { return importExtremum(n, true); };
  table["CumSum"] = importCumSum;
  table["Tile"] = importTile;
  table["Trilu"] = importTrilu;
  table["Range"] = importRange;
  table["InstanceNormalization"] = importInstanceNormalization;
  table["GroupNormalization"] = importGroupNormalization;
  table["ScatterND"] = importScatterND;
}

} // namespace trainc::import
