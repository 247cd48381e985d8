//===- ShapeHandlers.cpp - ONNX shape and data-movement ops ---------------===//
//
// Shape, Unsqueeze, Concat, Slice, ... on values known at import
// time are evaluated here, so ONNX shape subgraphs disappear. The shapes
// they produce reach graph.reshape / graph.expand as batch-relative
// entries (0 = copy the input dim, -1 = infer), never as a baked-in batch.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// Calls `body` with every index of `shape`, row-major.
void forEachIndex(ArrayRef<int64_t> shape,
                  llvm::function_ref<void(ArrayRef<int64_t>)> body) {
  for (int64_t extent : shape)
    if (extent == 0)
      return;
  SmallVector<int64_t> index(shape.size(), 0);
  while (true) {
    body(index);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    for (; d >= 0 && ++index[d] == shape[d]; --d)
      index[d] = 0;
    if (d < 0)
      return;
  }
}

/// Emits graph.reshape of `input` to `target`, writing 0 or -1 for the
/// entries that depend on the batch size.
LogicalResult reshapeBatchRelative(NodeImporter &n, Value input,
                                   ArrayRef<int64_t> target) {
  auto inputType = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> inputShape = inputType.getShape();
  SmallVector<bool> inputDependent =
      n.batchDependence("reshape-input", inputShape);
  SmallVector<bool> targetDependent =
      n.batchDependence("reshape-target", target);
  SmallVector<int64_t> shape(target);
  SmallVector<size_t> inferred;
  for (size_t i = 0; i < target.size(); ++i) {
    if (!targetDependent[i])
      continue;
    if (i < inputShape.size() && inputDependent[i] &&
        inputShape[i] == target[i])
      shape[i] = 0;
    else
      inferred.push_back(i);
  }
  if (inferred.size() == 1) {
    shape[inferred.front()] = -1;
  } else if (inferred.size() > 1) {
    n.warning("the reshape target depends on the batch size in " +
              std::to_string(inferred.size()) +
              " dimensions; baking the current batch size into it");
  }
  auto result =
      n.create<graph::ReshapeOp>({input}, {n.arrayAttr("shape", shape)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importConstant(NodeImporter &n) {
  if (n.node().attribute_size() != 1)
    return n.error("expected exactly one value attribute");
  const onnx::AttributeProto &attr = n.node().attribute(0);
  KnownTensor value;
  Builder b(n.context());
  if (attr.name() == "value") {
    std::string error;
    auto decoded = decodeKnown(attr.t(), *n.context(), error);
    if (failed(decoded))
      return n.error(error);
    value = std::move(*decoded);
  } else if (attr.name() == "value_float") {
    value.elementType = b.getF32Type();
    value.floats = {attr.f()};
  } else if (attr.name() == "value_floats") {
    value.elementType = b.getF32Type();
    value.shape = {attr.floats_size()};
    value.floats.assign(attr.floats().begin(), attr.floats().end());
  } else if (attr.name() == "value_int") {
    value = KnownTensor::ofInts(b.getI64Type(), {}, {attr.i()});
  } else if (attr.name() == "value_ints") {
    value = KnownTensor::ofInts(
        b.getI64Type(), {attr.ints_size()},
        SmallVector<int64_t>(attr.ints().begin(), attr.ints().end()));
  } else {
    return n.error("unsupported Constant attribute '" + attr.name() + "'");
  }
  n.setKnownOutput(0, std::move(value));
  return success();
}

LogicalResult importConstantOfShape(NodeImporter &n) {
  auto shape = n.knownInts(0, "ConstantOfShape shape");
  if (failed(shape))
    return failure();
  KnownTensor fill;
  fill.elementType = n.builder().getF32Type();
  fill.floats = {0.0};
  if (const auto *attr = n.attribute("value")) {
    std::string error;
    auto decoded = decodeKnown(attr->t(), *n.context(), error);
    if (failed(decoded))
      return n.error(error);
    if (decoded->numElements() != 1)
      return n.error("the fill value must have one element");
    fill = std::move(*decoded);
  }
  if (llvm::any_of(n.batchDependence("shape", *shape),
                   [](bool b) { return b; }))
    n.warning("the constant's shape depends on the batch size; baking the "
              "current batch size into it");
  KnownTensor result;
  result.elementType = fill.elementType;
  result.shape = *shape;
  int64_t count = result.numElements();
  if (count < 0 || count > kMaxKnownElements)
    return n.error("constant of " + std::to_string(count) +
                   " elements is too large");
  if (fill.isFloat())
    result.floats.assign(count, fill.floats[0]);
  else
    result.ints.assign(count, fill.ints[0]);
  n.setKnownOutput(0, std::move(result));
  return success();
}

LogicalResult importShape(NodeImporter &n) {
  SmallVector<int64_t> dims;
  if (const KnownTensor *value = n.known(0)) {
    dims = value->shape;
  } else {
    auto type = n.inputType(0);
    if (failed(type))
      return failure();
    dims.assign(type->getShape().begin(), type->getShape().end());
  }
  int64_t rank = dims.size();
  // Shape-15 slices the shape with start/end, clamped like Slice.
  int64_t start = n.getInt("start", 0), end = n.getInt("end", rank);
  auto clamp = [rank](int64_t v) {
    v = v < 0 ? v + rank : v;
    return std::clamp<int64_t>(v, 0, rank);
  };
  start = clamp(start);
  end = std::max(clamp(end), start);
  SmallVector<int64_t> values(dims.begin() + start, dims.begin() + end);
  n.setKnownOutput(
      0, KnownTensor::ofInts(n.builder().getI64Type(), {end - start}, values));
  return success();
}

/// The shape of input `i`, whether its value is known or only its type.
FailureOr<SmallVector<int64_t>> shapeOf(NodeImporter &n, unsigned i) {
  if (const KnownTensor *value = n.known(i))
    return value->shape;
  auto type = n.inputType(i);
  if (failed(type))
    return failure();
  return SmallVector<int64_t>(type->getShape().begin(), type->getShape().end());
}

/// Axes of Unsqueeze / Squeeze: an input from opset 13, an attribute before.
FailureOr<SmallVector<int64_t>> squeezeAxes(NodeImporter &n) {
  if (n.opset() >= 13) {
    if (!n.hasInput(1))
      return SmallVector<int64_t>();
    return n.knownInts(1, "axes");
  }
  return n.getInts("axes");
}

LogicalResult importUnsqueeze(NodeImporter &n) {
  auto axes = squeezeAxes(n);
  if (failed(axes))
    return failure();
  const KnownTensor *value = n.foldable(0);
  auto knownShape = shapeOf(n, 0);
  if (failed(knownShape))
    return failure();
  SmallVector<int64_t> inputShape = *knownShape;
  int64_t rank = inputShape.size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    auto normalized = n.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    if (inserted[*normalized])
      return n.error("axis " + std::to_string(axis) + " appears twice");
    inserted[*normalized] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0, j = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : inputShape[j++]);
  if (value) {
    KnownTensor result = *value;
    result.shape = shape;
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  return reshapeBatchRelative(n, *n.input(0), shape);
}

LogicalResult importSqueeze(NodeImporter &n) {
  auto axes = squeezeAxes(n);
  if (failed(axes))
    return failure();
  const KnownTensor *value = n.foldable(0);
  auto knownShape = shapeOf(n, 0);
  if (failed(knownShape))
    return failure();
  SmallVector<int64_t> inputShape = *knownShape;
  int64_t rank = inputShape.size();
  SmallVector<bool> removed(rank, false);
  if (axes->empty()) {
    for (int64_t i = 0; i < rank; ++i)
      removed[i] = inputShape[i] == 1;
  }
  for (int64_t axis : *axes) {
    auto normalized = n.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    if (inputShape[*normalized] != 1)
      return n.error("cannot squeeze dimension " + std::to_string(axis) +
                     " of size " + std::to_string(inputShape[*normalized]));
    removed[*normalized] = true;
  }
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < rank; ++i)
    if (!removed[i])
      shape.push_back(inputShape[i]);
  if (value) {
    KnownTensor result = *value;
    result.shape = shape;
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  return reshapeBatchRelative(n, *n.input(0), shape);
}

LogicalResult importConcat(NodeImporter &n) {
  if (n.node().input_size() == 0)
    return n.error("Concat needs at least one input");
  int64_t axisValue = n.getInt("axis", 0);
  // Concatenation of known integer tensors: shape arithmetic (1-D shape
  // vectors; Swin's mask indices are 14x14x1 pieces).
  const KnownTensor *first = n.known(0);
  bool allKnown = first && !first->isFloat() && !first->shape.empty();
  int64_t knownRank = allKnown ? first->shape.size() : 0;
  int64_t knownAxis = axisValue < 0 ? axisValue + knownRank : axisValue;
  allKnown &= knownAxis >= 0 && knownAxis < knownRank;
  int64_t total = 0;
  for (int i = 0; allKnown && i < n.node().input_size(); ++i) {
    const KnownTensor *value = n.known(i);
    allKnown = value && !value->isFloat() &&
               value->elementType == first->elementType &&
               static_cast<int64_t>(value->shape.size()) == knownRank;
    for (int64_t d = 0; allKnown && d < knownRank; ++d)
      allKnown = d == knownAxis || value->shape[d] == first->shape[d];
    allKnown = allKnown && value->numElements() >= 0 &&
               !__builtin_add_overflow(total, value->numElements(), &total) &&
               total <= kMaxKnownElements;
  }
  if (allKnown) {
    KnownTensor result;
    result.elementType = first->elementType;
    result.shape = first->shape;
    result.shape[knownAxis] = 0;
    int64_t outer = 1;
    for (int64_t d = 0; d < knownAxis; ++d)
      outer *= first->shape[d];
    for (int i = 0; i < n.node().input_size(); ++i)
      result.shape[knownAxis] += n.known(i)->shape[knownAxis];
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < n.node().input_size(); ++i) {
        const KnownTensor *value = n.known(i);
        int64_t chunk = outer ? value->numElements() / outer : 0;
        llvm::append_range(
            result.ints,
            ArrayRef<int64_t>(value->ints).slice(o * chunk, chunk));
      }
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  SmallVector<Value> inputs;
  for (int i = 0; i < n.node().input_size(); ++i) {
    auto value = n.input(i);
    if (failed(value))
      return failure();
    inputs.push_back(*value);
  }
  auto rank = cast<RankedTensorType>(inputs.front().getType()).getRank();
  auto axis = n.normalizeAxis(axisValue, rank);
  if (failed(axis))
    return failure();
  auto result = n.create<graph::ConcatOp>(inputs, {n.i64Attr("axis", *axis)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importReshape(NodeImporter &n) {
  auto requested = n.knownInts(1, "Reshape shape");
  if (failed(requested))
    return failure();
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  bool allowZero = n.getBool("allowzero", false);
  // Resolve ONNX's 0 / -1 entries against the input to get the concrete
  // target; batch-relative entries are re-derived from the probe run.
  SmallVector<int64_t> target(*requested);
  int64_t known = 1, inferIndex = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (i >= static_cast<size_t>(type->getRank()))
        return n.error("shape entry 0 at index " + std::to_string(i) +
                       " has no input dimension to copy");
      target[i] = type->getDimSize(i);
    }
    if (target[i] == -1) {
      if (inferIndex >= 0)
        return n.error("shape has more than one -1 entry");
      inferIndex = i;
      continue;
    }
    if (target[i] < 0)
      return n.error("shape entry " + std::to_string(target[i]) +
                     " is negative");
    if (__builtin_mul_overflow(known, target[i], &known))
      return n.error("shape " + graph::formatShape(*requested) +
                     " has more than 2^63 elements");
  }
  int64_t total = type->getNumElements();
  if (inferIndex >= 0) {
    if (known == 0 || total % known != 0)
      return n.error("cannot reshape " + graph::formatShape(type->getShape()) +
                     " into " + graph::formatShape(*requested));
    target[inferIndex] = total / known;
  } else if (known != total) {
    // A known value keeps its elements: a target of another size would
    // leave its shape and its elements apart (fuzz-onnx_import).
    return n.error("cannot reshape " + graph::formatShape(type->getShape()) +
                   " into " + graph::formatShape(*requested) +
                   ": the element counts differ");
  }
  if (const KnownTensor *value = n.foldable(0)) {
    KnownTensor result = *value;
    result.shape = target;
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  return reshapeBatchRelative(n, *n.input(0), target);
}

LogicalResult importFlatten(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  int64_t axis = n.getInt("axis", 1);
  if (axis < -rank || axis > rank)
    return n.error("axis " + std::to_string(axis) +
                   " is out of range for rank " + std::to_string(rank));
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) *= type->getDimSize(i);
  return reshapeBatchRelative(n, *n.input(0), {outer, inner});
}

LogicalResult importSlice(NodeImporter &n) {
  auto starts = n.knownInts(1, "Slice starts");
  if (failed(starts))
    return failure();
  auto ends = n.knownInts(2, "Slice ends");
  if (failed(ends))
    return failure();
  SmallVector<int64_t> inputShape;
  const KnownTensor *value = n.foldable(0);
  if (value) {
    inputShape = value->shape;
  } else {
    auto type = n.inputType(0);
    if (failed(type))
      return failure();
    inputShape.assign(type->getShape().begin(), type->getShape().end());
  }
  int64_t rank = inputShape.size();
  SmallVector<int64_t> axes, steps;
  if (n.hasInput(3)) {
    auto values = n.knownInts(3, "Slice axes");
    if (failed(values))
      return failure();
    axes = *values;
  } else {
    for (size_t i = 0; i < starts->size(); ++i)
      axes.push_back(i);
  }
  if (n.hasInput(4)) {
    auto values = n.knownInts(4, "Slice steps");
    if (failed(values))
      return failure();
    steps = *values;
  } else {
    steps.assign(starts->size(), 1);
  }
  if (ends->size() != starts->size() || axes.size() != starts->size() ||
      steps.size() != starts->size())
    return n.error("starts, ends, axes and steps differ in length");

  // One normalized (start, end, step) per dimension; ONNX's clamping.
  SmallVector<int64_t> allStarts(rank, 0), allEnds(inputShape),
      allSteps(rank, 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto axis = n.normalizeAxis(axes[k], rank);
    if (failed(axis))
      return failure();
    int64_t dim = inputShape[*axis], step = steps[k];
    if (step == 0)
      return n.error("slice step is 0");
    int64_t start = (*starts)[k], end = (*ends)[k];
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    allStarts[*axis] = start;
    allEnds[*axis] = end;
    allSteps[*axis] = step;
  }
  if (value) {
    // Shape arithmetic (torch's pads: a [-1, 2] table reversed by a
    // slice) and masks (Swin's shifted-window mask as torch 2.x's dynamo
    // exporter writes it): evaluated, any rank.
    SmallVector<SmallVector<int64_t>> picked(rank);
    KnownTensor result;
    result.elementType = value->elementType;
    // An empty value may have a huge axis beside its zero one (a hostile
    // file): its slice is counted, not walked.
    bool empty = value->numElements() == 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t step = allSteps[d];
      int64_t span =
          step > 0 ? allEnds[d] - allStarts[d] : allStarts[d] - allEnds[d];
      int64_t count =
          span > 0 ? (span + std::abs(step) - 1) / std::abs(step) : 0;
      for (int64_t i = 0; !empty && i < count; ++i)
        picked[d].push_back(allStarts[d] + i * step);
      result.shape.push_back(count);
    }
    forEachIndex(result.shape, [&](ArrayRef<int64_t> index) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d)
        offset = offset * inputShape[d] + picked[d][index[d]];
      result.appendElementOf(*value, offset);
    });
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  auto input = n.input(0);
  if (failed(input))
    return failure();
  auto result = n.create<graph::SliceOp>(
      {*input}, {n.arrayAttr("starts", allStarts), n.arrayAttr("ends", allEnds),
                 n.arrayAttr("steps", allSteps)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importExpand(NodeImporter &n) {
  auto shape = n.knownInts(1, "Expand shape");
  if (failed(shape))
    return failure();
  if (const KnownTensor *known = n.foldable(0)) {
    // Shape arithmetic and masks (Swin's shifted-window mask): broadcast at
    // import time.
    auto broadcast = graph::broadcastShapes(known->shape, *shape);
    KnownTensor result;
    result.elementType = known->elementType;
    if (broadcast)
      result.shape = *broadcast;
    int64_t count = broadcast ? result.numElements() : -1;
    if (count >= 0 && count <= kMaxKnownElements) {
      int64_t rank = result.shape.size();
      int64_t offset = rank - static_cast<int64_t>(known->shape.size());
      for (int64_t flat = 0; flat < count; ++flat) {
        int64_t index = 0, stride = 1, rest = flat;
        for (int64_t d = rank - 1; d >= 0; --d) {
          int64_t coordinate = rest % result.shape[d];
          rest /= result.shape[d];
          if (d >= offset) {
            int64_t size = known->shape[d - offset];
            index += (size == 1 ? 0 : coordinate) * stride;
            stride *= size;
          }
        }
        if (known->isFloat())
          result.floats.push_back(known->floats[index]);
        else
          result.ints.push_back(known->ints[index]);
      }
      n.setKnownOutput(0, std::move(result));
      return success();
    }
  }
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  // A batch-dependent entry that meets a batch-dependent input dimension
  // becomes 1 (broadcast keeps the input's size); others bake the batch.
  SmallVector<bool> dependent = n.batchDependence("shape", *shape);
  SmallVector<bool> inputDependent =
      n.batchDependence("input", type->getShape());
  SmallVector<int64_t> entries(*shape);
  int64_t offset = static_cast<int64_t>(entries.size()) - type->getRank();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!dependent[i])
      continue;
    int64_t inputIndex = static_cast<int64_t>(i) - offset;
    if (inputIndex >= 0 && inputDependent[inputIndex] &&
        type->getDimSize(inputIndex) == entries[i])
      entries[i] = 1;
    else
      n.warning("the expanded shape depends on the batch size; baking the "
                "current batch size into it");
  }
  auto result =
      n.create<graph::ExpandOp>({*n.input(0)}, {n.arrayAttr("shape", entries)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importTranspose(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  SmallVector<int64_t> perm = n.getInts("perm");
  if (perm.empty())
    for (int64_t i = type->getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  for (int64_t &axis : perm) {
    auto normalized = n.normalizeAxis(axis, type->getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (static_cast<int64_t>(perm.size()) != type->getRank() ||
      llvm::adjacent_find(sorted) != sorted.end())
    return n.error(
        "perm [" +
        llvm::join(llvm::map_range(
                       perm, [](int64_t axis) { return std::to_string(axis); }),
                   ", ") +
        "] is not a permutation of the " + std::to_string(type->getRank()) +
        " axes");
  // Evaluated (shape arithmetic, masks).
  if (const KnownTensor *value = n.foldable(0)) {
    KnownTensor result;
    result.elementType = value->elementType;
    for (int64_t axis : perm)
      result.shape.push_back(value->shape[axis]);
    forEachIndex(result.shape, [&](ArrayRef<int64_t> index) {
      int64_t offset = 0;
      for (int64_t d = 0; d < type->getRank(); ++d) {
        auto it = llvm::find(perm, d);
        offset = offset * value->shape[d] + index[it - perm.begin()];
      }
      result.appendElementOf(*value, offset);
    });
    n.setKnownOutput(0, std::move(result));
    return success();
  }
  auto result =
      n.create<graph::TransposeOp>({*n.input(0)}, {n.arrayAttr("perm", perm)});
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

} // namespace

void registerShapeHandlers(HandlerTable &table) {
  table["Constant"] = importConstant;
  table["ConstantOfShape"] = importConstantOfShape;
  table["Shape"] = importShape;
  registerGatherHandlers(table);
  table["Unsqueeze"] = importUnsqueeze;
  table["Squeeze"] = importSqueeze;
  table["Concat"] = importConcat;
  table["Reshape"] = importReshape;
  table["Flatten"] = importFlatten;
  table["Slice"] = importSlice;
  table["Expand"] = importExpand;
  table["Transpose"] = importTranspose;
}

} // namespace trainc::import
