//===- ElementwiseOps.cpp - inference of elementwise and reduction ops ----===//
//
// Result types of constants, elementwise (unary, broadcasting binary,
// comparison, select) and reduction ops.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace trainc::graph;

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> location,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &types) {
  auto type = dyn_cast_or_null<RankedTensorType>(
      adaptor.getValueAttr() ? adaptor.getValueAttr().getType() : Type());
  if (!type)
    return inferenceError(location, "constant value must be a ranked tensor");
  types.push_back(type);
  return success();
}

// Unary elementwise ops: the result has the operand's type.
#define TRAINC_SAME_TYPE_INFERENCE(OpName)                                     \
  LogicalResult OpName::inferReturnTypes(MLIRContext *,                        \
                                         std::optional<Location>,             \
                                         Adaptor adaptor,                      \
                                         SmallVectorImpl<Type> &types) {       \
    types.push_back(adaptor.getInput().getType());                            \
    return success();                                                          \
  }
TRAINC_SAME_TYPE_INFERENCE(IdentityOp)
TRAINC_SAME_TYPE_INFERENCE(NegOp)
TRAINC_SAME_TYPE_INFERENCE(AbsOp)
TRAINC_SAME_TYPE_INFERENCE(SqrtOp)
TRAINC_SAME_TYPE_INFERENCE(ExpOp)
TRAINC_SAME_TYPE_INFERENCE(LogOp)
TRAINC_SAME_TYPE_INFERENCE(TanhOp)
TRAINC_SAME_TYPE_INFERENCE(SigmoidOp)
TRAINC_SAME_TYPE_INFERENCE(ReluOp)
TRAINC_SAME_TYPE_INFERENCE(ErfOp)
TRAINC_SAME_TYPE_INFERENCE(SinOp)
TRAINC_SAME_TYPE_INFERENCE(CosOp)
TRAINC_SAME_TYPE_INFERENCE(SoftplusOp)
TRAINC_SAME_TYPE_INFERENCE(ReciprocalOp)
TRAINC_SAME_TYPE_INFERENCE(LeakyReluOp)
TRAINC_SAME_TYPE_INFERENCE(GeluOp)
TRAINC_SAME_TYPE_INFERENCE(NotOp)
#undef TRAINC_SAME_TYPE_INFERENCE

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  if (auto ratio = adaptor.getRatioAttr()) {
    double value = ratio.getValueAsDouble();
    if (value < 0.0 || value >= 1.0)
      return inferenceError(location, "dropout ratio " + std::to_string(value) +
                                          " is not in [0, 1)");
  }
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult ClipOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (adaptor.getMinAttr() && adaptor.getMaxAttr() &&
      adaptor.getMinAttr().getValueAsDouble() >
          adaptor.getMaxAttr().getValueAsDouble())
    return inferenceError(location, "clip min is greater than max");
  types.push_back(adaptor.getInput().getType());
  return success();
}

// Softmax and log-softmax keep the type; the axis must exist.
static LogicalResult inferSoftmaxLike(std::optional<Location> location,
                                      Value input, IntegerAttr axis,
                                      SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(input.getType());
  if (axis && (axis.getInt() < 0 || axis.getInt() >= type.getRank()))
    return inferenceError(location, "softmax axis " +
                                        std::to_string(axis.getInt()) +
                                        " is out of range for rank " +
                                        std::to_string(type.getRank()));
  types.push_back(type);
  return success();
}

LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferSoftmaxLike(location, adaptor.getInput(), adaptor.getAxisAttr(),
                          types);
}

LogicalResult LogSoftmaxOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  return inferSoftmaxLike(location, adaptor.getInput(), adaptor.getAxisAttr(),
                          types);
}

LogicalResult CastOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(adaptor.getInput().getType());
  Type to = adaptor.getTo();
  if (!to.isIntOrFloat())
    return inferenceError(location, "cast target must be an integer or float");
  types.push_back(type.clone(to));
  return success();
}

/// Broadcast result of `lhs` and `rhs` with the given element type.
static LogicalResult inferBroadcast(std::optional<Location> location,
                                    Value lhs, Value rhs, Type elementType,
                                    bool requireSameElementType,
                                    SmallVectorImpl<Type> &types) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  if (requireSameElementType &&
      lhsType.getElementType() != rhsType.getElementType())
    return inferenceError(location, "operand element types differ");
  auto shape = broadcastShapes(lhsType.getShape(), rhsType.getShape());
  if (!shape)
    return inferenceError(location,
                          "shapes " + formatShape(lhsType.getShape()) +
                              " and " + formatShape(rhsType.getShape()) +
                              " do not broadcast");
  types.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

#define TRAINC_ARITH_INFERENCE(OpName)                                         \
  LogicalResult OpName::inferReturnTypes(MLIRContext *,                        \
                                         std::optional<Location> location,    \
                                         Adaptor adaptor,                      \
                                         SmallVectorImpl<Type> &types) {       \
    return inferBroadcast(                                                     \
        location, adaptor.getLhs(), adaptor.getRhs(),                          \
        getElementTypeOrSelf(adaptor.getLhs().getType()), true, types);        \
  }
TRAINC_ARITH_INFERENCE(AddOp)
TRAINC_ARITH_INFERENCE(SubOp)
TRAINC_ARITH_INFERENCE(MulOp)
TRAINC_ARITH_INFERENCE(DivOp)
#undef TRAINC_ARITH_INFERENCE

LogicalResult PowOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> location,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  // ONNX Pow allows a different exponent type; the result follows the base.
  return inferBroadcast(location, adaptor.getLhs(), adaptor.getRhs(),
                        getElementTypeOrSelf(adaptor.getLhs().getType()),
                        false, types);
}

#define TRAINC_COMPARE_INFERENCE(OpName)                                       \
  LogicalResult OpName::inferReturnTypes(MLIRContext *context,                 \
                                         std::optional<Location> location,    \
                                         Adaptor adaptor,                      \
                                         SmallVectorImpl<Type> &types) {       \
    return inferBroadcast(location, adaptor.getLhs(), adaptor.getRhs(),        \
                          IntegerType::get(context, 1), true, types);          \
  }
TRAINC_COMPARE_INFERENCE(EqualOp)
TRAINC_COMPARE_INFERENCE(LessOp)
TRAINC_COMPARE_INFERENCE(GreaterOp)
TRAINC_COMPARE_INFERENCE(LessEqualOp)
TRAINC_COMPARE_INFERENCE(GreaterEqualOp)
TRAINC_COMPARE_INFERENCE(AndOp)
#undef TRAINC_COMPARE_INFERENCE

LogicalResult IsNaNOp::inferReturnTypes(MLIRContext *context,
                                        std::optional<Location>,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  auto input = cast<RankedTensorType>(adaptor.getInput().getType());
  types.push_back(
      RankedTensorType::get(input.getShape(), IntegerType::get(context, 1)));
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> location,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  SmallVector<Type, 1> values;
  if (failed(inferBroadcast(location, adaptor.getLhs(), adaptor.getRhs(),
                            getElementTypeOrSelf(adaptor.getLhs().getType()),
                            true, values)))
    return failure();
  auto valueType = cast<RankedTensorType>(values.front());
  auto conditionType = cast<RankedTensorType>(adaptor.getCondition().getType());
  auto shape = broadcastShapes(conditionType.getShape(), valueType.getShape());
  if (!shape)
    return inferenceError(location, "condition shape " +
                                        formatShape(conditionType.getShape()) +
                                        " does not broadcast with " +
                                        formatShape(valueType.getShape()));
  types.push_back(valueType.clone(*shape));
  return success();
}

/// Reduced shape of `input` over `axes`.
static LogicalResult inferReduce(std::optional<Location> location, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &types) {
  auto type = cast<RankedTensorType>(input.getType());
  if (failed(verifyAxes(location, axes, type.getRank(), "reduction axis")))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!llvm::is_contained(axes, i))
      shape.push_back(type.getDimSize(i));
    else if (keepdims)
      shape.push_back(1);
  }
  types.push_back(type.clone(shape));
  return success();
}

#define TRAINC_REDUCE_INFERENCE(OpName)                                        \
  LogicalResult OpName::inferReturnTypes(MLIRContext *,                        \
                                         std::optional<Location> location,    \
                                         Adaptor adaptor,                      \
                                         SmallVectorImpl<Type> &types) {       \
    return inferReduce(location, adaptor.getInput(), adaptor.getAxes(),        \
                       adaptor.getKeepdims(), types);                          \
  }
TRAINC_REDUCE_INFERENCE(ReduceSumOp)
TRAINC_REDUCE_INFERENCE(ReduceMeanOp)
TRAINC_REDUCE_INFERENCE(ReduceMaxOp)
#undef TRAINC_REDUCE_INFERENCE

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *context,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  int64_t axis = adaptor.getAxis();
  SmallVector<Type> reduced;
  if (failed(inferReduce(location, adaptor.getInput(), {axis},
                         adaptor.getKeepdims(), reduced)))
    return failure();
  types.push_back(cast<RankedTensorType>(reduced.front())
                      .clone(IntegerType::get(context, 64)));
  return success();
}
