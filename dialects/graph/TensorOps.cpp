//===- TensorOps.cpp - inference of data-movement ops ---------------------===//
//
// Result types of reshape, transpose, expand, concat, slice and gather.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include <string>

using namespace mlir;
using namespace trainc::graph;

static std::string str(int64_t value) { return std::to_string(value); }

LogicalResult ReshapeOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> requested = adaptor.getShape();
  SmallVector<int64_t> shape;
  std::optional<size_t> inferredIndex;
  int64_t knownProduct = 1;
  bool anyDynamic = false;
  for (auto [i, entry] : llvm::enumerate(requested)) {
    int64_t dim = entry;
    if (entry == 0) {
      if (static_cast<int64_t>(i) >= type.getRank())
        return inferenceError(location, "reshape entry 0 at index " + str(i) +
                                            " has no input dimension to copy");
      dim = type.getDimSize(i);
    } else if (entry == -1) {
      if (inferredIndex)
        return inferenceError(location,
                              "reshape has more than one -1 entry");
      inferredIndex = i;
    } else if (entry < -1) {
      return inferenceError(location, "reshape entry " + str(entry) +
                                          " is negative");
    }
    shape.push_back(dim);
    if (dim == -1)
      continue;
    if (isDynamic(dim))
      anyDynamic = true;
    else
      knownProduct *= dim;
  }
  bool inputDynamic = !type.hasStaticShape();
  int64_t inputElements = inputDynamic ? -1 : type.getNumElements();
  if (inferredIndex) {
    if (inputDynamic || anyDynamic) {
      shape[*inferredIndex] = ShapedType::kDynamic;
    } else {
      if (knownProduct == 0 || inputElements % knownProduct != 0)
        return inferenceError(location,
                              "cannot reshape " + formatShape(type.getShape()) +
                                  " into a shape with -1 and known product " +
                                  str(knownProduct));
      shape[*inferredIndex] = inputElements / knownProduct;
    }
  } else if (!inputDynamic && !anyDynamic && knownProduct != inputElements) {
    return inferenceError(location, "cannot reshape " +
                                        formatShape(type.getShape()) + " (" +
                                        str(inputElements) + " elements) into " +
                                        formatShape(shape));
  }
  types.push_back(type.clone(shape));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != type.getRank())
    return inferenceError(location, "transpose permutation has " +
                                        str(perm.size()) +
                                        " entries for rank " +
                                        str(type.getRank()));
  if (failed(verifyAxes(location, perm, type.getRank(), "permutation entry")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t axis : perm)
    shape.push_back(type.getDimSize(axis));
  types.push_back(type.clone(shape));
  return success();
}

LogicalResult ExpandOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  for (int64_t dim : adaptor.getShape())
    if (dim < 0)
      return inferenceError(location, "expand shape entry " + str(dim) +
                                          " is negative");
  auto shape = broadcastShapes(type.getShape(), adaptor.getShape());
  if (!shape)
    return inferenceError(location, "cannot expand " +
                                        formatShape(type.getShape()) + " to " +
                                        formatShape(adaptor.getShape()));
  types.push_back(type.clone(*shape));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return inferenceError(location, "concat needs at least one input");
  auto first = cast<RankedTensorType>(inputs.front().getType());
  int64_t axis = adaptor.getAxisAttr() ? adaptor.getAxisAttr().getInt() : 0;
  if (axis < 0 || axis >= first.getRank())
    return inferenceError(location, "concat axis " + str(axis) +
                                        " is out of range for rank " +
                                        str(first.getRank()));
  SmallVector<int64_t> shape(first.getShape());
  for (Value input : inputs.drop_front()) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return inferenceError(location,
                            "concat inputs differ in rank or element type");
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (i == axis) {
        shape[i] = isDynamic(shape[i]) || type.isDynamicDim(i)
                       ? ShapedType::kDynamic
                       : shape[i] + type.getDimSize(i);
      } else if (type.getDimSize(i) != shape[i] && !isDynamic(shape[i]) &&
                 !type.isDynamicDim(i)) {
        return inferenceError(location, "concat inputs " +
                                            formatShape(first.getShape()) +
                                            " and " +
                                            formatShape(type.getShape()) +
                                            " differ outside axis " + str(axis));
      }
    }
  }
  types.push_back(first.clone(shape));
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  ArrayRef<int64_t> starts = adaptor.getStarts(), ends = adaptor.getEnds(),
                    steps = adaptor.getSteps();
  size_t rank = type.getRank();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank)
    return inferenceError(location, "slice needs one start, end and step per "
                                    "dimension (rank " +
                                        str(rank) + ")");
  SmallVector<int64_t> shape;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = type.getDimSize(i), start = starts[i], end = ends[i],
            step = steps[i];
    if (step == 0)
      return inferenceError(location, "slice step is 0 in dimension " + str(i));
    if (isDynamic(dim)) {
      shape.push_back(ShapedType::kDynamic);
      continue;
    }
    bool inRange = step > 0 ? (0 <= start && start <= dim && 0 <= end &&
                               end <= dim)
                            : (0 <= start && start < dim && -1 <= end &&
                               end < dim);
    if (!inRange)
      return inferenceError(location,
                            "slice bounds [" + str(start) + ", " + str(end) +
                                ") with step " + str(step) +
                                " are not normalized for dimension " + str(i) +
                                " of size " + str(dim));
    int64_t span = step > 0 ? end - start : start - end;
    int64_t absStep = step > 0 ? step : -step;
    shape.push_back(std::max<int64_t>(0, (span + absStep - 1) / absStep));
  }
  types.push_back(type.clone(shape));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxisAttr() ? adaptor.getAxisAttr().getInt() : 0;
  if (axis < 0 || axis >= data.getRank())
    return inferenceError(location, "gather_elements axis " + str(axis) +
                                        " is out of range for rank " +
                                        str(data.getRank()));
  if (indices.getRank() != data.getRank())
    return inferenceError(
        location, "gather_elements indices of rank " + str(indices.getRank()) +
                      " for data of rank " + str(data.getRank()));
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return inferenceError(location, "gather_elements indices dim " + str(d) +
                                          " (" + str(indices.getDimSize(d)) +
                                          ") exceeds the data's (" +
                                          str(data.getDimSize(d)) + ")");
  types.push_back(data.clone(indices.getShape()));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto data = cast<RankedTensorType>(adaptor.getData().getType());
  auto indices = cast<RankedTensorType>(adaptor.getIndices().getType());
  int64_t axis = adaptor.getAxisAttr() ? adaptor.getAxisAttr().getInt() : 0;
  if (axis < 0 || axis >= data.getRank())
    return inferenceError(location, "gather axis " + str(axis) +
                                        " is out of range for rank " +
                                        str(data.getRank()));
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(data.clone(shape));
  return success();
}
