//===- ElementwiseGradients.cpp - gradients of elementwise/reduction ops --===//
//
// Each buildGradients appends one gradient per operand (null for operands
// that get none). g is the gradient of the op's (first) result; x its
// input, y its output. Formulas follow PyTorch's derivatives.yaml where
// the choice matters (relu'(0) = 0, sign(0) = 0, clamp passes the bounds).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GradientBuilder.h"

#include <cmath>

using namespace mlir;
using namespace trainc::graph;

/// Shorthand for the common single-operand case.
static LogicalResult unaryGradient(SmallVectorImpl<Value> &out, Value gradient) {
  out.push_back(gradient);
  return success();
}

LogicalResult IdentityOp::buildGradients(OpBuilder &, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  return unaryGradient(out, grads[0]);
}

LogicalResult NegOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.neg(grads[0]));
}

LogicalResult AbsOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value x = getInput(), zero = b.scalar(0, x);
  Type element = getElementTypeOrSelf(x.getType());
  Value sign = b.sub(b.cast(b.greater(x, zero), element),
                     b.cast(b.less(x, zero), element));
  return unaryGradient(out, b.mul(grads[0], sign));
}

LogicalResult SqrtOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value y = getOutput();
  return unaryGradient(out, b.div(b.mul(grads[0], b.scalar(0.5, y)), y));
}

LogicalResult ExpOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.mul(grads[0], getOutput()));
}

LogicalResult LogOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.div(grads[0], getInput()));
}

LogicalResult TanhOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value y = getOutput();
  return unaryGradient(out,
                       b.mul(grads[0], b.sub(b.scalar(1, y), b.mul(y, y))));
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value y = getOutput();
  return unaryGradient(out,
                       b.mul(grads[0], b.mul(y, b.sub(b.scalar(1, y), y))));
}

LogicalResult ReluOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  // From the output: y > 0 exactly where x > 0 (NaN included), and a
  // gradient that does not read x lets the producer of x apply the ReLU
  // itself (a oneDNN post-op, --trainc-fuse-activations) without x ever
  // being stored.
  Value y = getResult();
  return unaryGradient(
      out, b.where(b.greater(y, b.scalar(0, y)), grads[0], b.scalar(0, y)));
}

LogicalResult LeakyReluOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value x = getInput(), g = grads[0];
  double alpha = getAlpha().convertToDouble();
  return unaryGradient(out, b.where(b.greater(x, b.scalar(0, x)), g,
                                    b.mul(g, b.scalar(alpha, x))));
}

LogicalResult ErfOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value x = getInput();
  // d erf(x) = 2 / sqrt(pi) * exp(-x^2)
  Value slope = b.mul(b.scalar(2.0 / std::sqrt(M_PI), x),
                      b.exp(b.neg(b.mul(x, x))));
  return unaryGradient(out, b.mul(grads[0], slope));
}

LogicalResult SinOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.mul(grads[0], b.cos(getInput())));
}

LogicalResult CosOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.neg(b.mul(grads[0], b.sin(getInput()))));
}

LogicalResult SoftplusOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                         SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, b.mul(grads[0], b.sigmoid(getInput())));
}

LogicalResult ReciprocalOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value y = getOutput();
  return unaryGradient(out, b.neg(b.mul(grads[0], b.mul(y, y))));
}

LogicalResult GeluOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value x = getInput(), g = grads[0];
  Value half = b.scalar(0.5, x), one = b.scalar(1, x);
  Value slope;
  if (getTanhApproximation()) {
    // t = tanh(k (x + c x^3)); d = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
    double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Value x2 = b.mul(x, x);
    Value inner = b.mul(b.scalar(k, x), b.add(x, b.mul(b.scalar(c, x), b.mul(x2, x))));
    Value t = b.tanh(inner);
    Value dInner = b.mul(b.scalar(k, x), b.add(one, b.mul(b.scalar(3 * c, x), x2)));
    slope = b.add(b.mul(half, b.add(one, t)),
                  b.mul(b.mul(half, x), b.mul(b.sub(one, b.mul(t, t)), dInner)));
  } else {
    // d = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
    Value cdf = b.mul(half, b.add(one, b.erf(b.mul(x, b.scalar(M_SQRT1_2, x)))));
    Value pdf = b.mul(b.scalar(1.0 / std::sqrt(2 * M_PI), x),
                      b.exp(b.mul(b.scalar(-0.5, x), b.mul(x, x))));
    slope = b.add(cdf, b.mul(x, pdf));
  }
  return unaryGradient(out, b.mul(g, slope));
}

LogicalResult ClipOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value x = getInput(), g = grads[0];
  Type element = getElementTypeOrSelf(x.getType());
  // PyTorch's clamp passes the gradient where min <= x <= max.
  if (auto min = getMin())
    g = b.mul(g, b.cast(b.greaterEqual(x, b.scalar(min->convertToDouble(), x)),
                        element));
  if (auto max = getMax())
    g = b.mul(g, b.cast(b.lessEqual(x, b.scalar(max->convertToDouble(), x)),
                        element));
  return unaryGradient(out, g);
}

LogicalResult CastOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Type from = getElementTypeOrSelf(getInput().getType());
  bool floating = isa<FloatType>(from) && isa<FloatType>(getType().getElementType());
  return unaryGradient(out, floating ? b.cast(grads[0], from) : Value());
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

/// Appends both operand gradients, each reduced to its operand's shape.
static LogicalResult binaryGradients(GradientBuilder &b, Value lhs, Value rhs,
                                     Value lhsGradient, Value rhsGradient,
                                     SmallVectorImpl<Value> &out) {
  out.push_back(lhsGradient ? b.reduceTo(lhsGradient, lhs.getType()) : Value());
  out.push_back(rhsGradient ? b.reduceTo(rhsGradient, rhs.getType()) : Value());
  return success();
}

static bool isFloatValue(Value value) {
  return isa<FloatType>(getElementTypeOrSelf(value.getType()));
}

LogicalResult AddOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return binaryGradients(b, getLhs(), getRhs(), grads[0], grads[0], out);
}

LogicalResult SubOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return binaryGradients(b, getLhs(), getRhs(), grads[0], b.neg(grads[0]), out);
}

LogicalResult MulOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return binaryGradients(b, getLhs(), getRhs(), b.mul(grads[0], getRhs()),
                         b.mul(grads[0], getLhs()), out);
}

LogicalResult DivOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0], rhs = getRhs();
  // d(a / b)/db = -(a / b) / b
  return binaryGradients(b, getLhs(), rhs, b.div(g, rhs),
                         b.neg(b.div(b.mul(g, getOutput()), rhs)), out);
}

LogicalResult PowOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0], base = getLhs();
  Value exponent = b.cast(getRhs(), getElementTypeOrSelf(base.getType()));
  // d/da a^e = e a^(e-1);  d/de a^e = a^e log(a)
  Value lhsGradient = b.mul(
      g, b.mul(exponent, b.pow(base, b.sub(exponent, b.scalar(1, exponent)))));
  Value rhsGradient =
      isFloatValue(getRhs()) ? b.mul(g, b.mul(getOutput(), b.log(base))) : Value();
  return binaryGradients(b, base, getRhs(), lhsGradient, rhsGradient, out);
}

LogicalResult WhereOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                      SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0], zero = b.scalar(0, g);
  out.push_back(Value()); // the condition
  return binaryGradients(b, getLhs(), getRhs(),
                         b.where(getCondition(), g, zero),
                         b.where(getCondition(), zero, g), out);
}

//===----------------------------------------------------------------------===//
// Reductions and softmax
//===----------------------------------------------------------------------===//

/// The gradient of a reduction's result, broadcast back to the input shape.
static Value broadcastBack(GradientBuilder &b, Value gradient, Value input,
                           ArrayRef<int64_t> axes) {
  auto inputType = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t axis : axes)
    kept[axis] = 1;
  return b.expand(b.reshape(gradient, kept), inputType.getShape());
}

static int64_t reducedCount(Value input, ArrayRef<int64_t> axes) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= type.getDimSize(axis);
  return count;
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  return unaryGradient(out, broadcastBack(b, grads[0], getInput(), getAxes()));
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = broadcastBack(b, grads[0], getInput(), getAxes());
  double count = static_cast<double>(reducedCount(getInput(), getAxes()));
  return unaryGradient(out, b.div(g, b.scalar(count, g)));
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  // Ties share the gradient evenly (PyTorch's amax).
  Value x = getInput();
  Value maxima = broadcastBack(b, getOutput(), x, getAxes());
  Value mask = b.cast(b.equal(x, maxima), getElementTypeOrSelf(x.getType()));
  Value ties = broadcastBack(b, b.reduceSum(mask, getAxes(), getKeepdims()), x,
                             getAxes());
  Value g = broadcastBack(b, grads[0], x, getAxes());
  return unaryGradient(out, b.div(b.mul(g, mask), ties));
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value y = getOutput(), g = grads[0];
  int64_t axis = getAxis();
  // dx = y * (g - sum(g * y)), as PyTorch computes it: g * y is read only
  // by the sum, which --trainc-fuse-elementwise computes in one pass.
  Value sum = b.reduceSum(b.mul(g, y), {axis}, true);
  return unaryGradient(out, b.mul(y, b.sub(g, sum)));
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0];
  int64_t axis = getAxis();
  // dx = g - exp(y) * sum(g)
  return unaryGradient(
      out, b.sub(g, b.mul(b.exp(getOutput()), b.reduceSum(g, {axis}, true))));
}
