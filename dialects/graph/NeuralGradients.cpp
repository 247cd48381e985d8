//===- NeuralGradients.cpp - gradients of matmul, conv, pooling, norms ----===//
#include "dialects/graph/GradientBuilder.h"

using namespace mlir;
using namespace trainc::graph;

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

LogicalResult MatMulOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value lhs = getLhs(), rhs = getRhs(), g = grads[0];
  auto lhsType = typeOf(lhs), rhsType = typeOf(rhs);
  if (lhsType.getRank() >= 2 && rhsType.getRank() == 2) {
    // A linear layer, [..., M, K] x [K, N]: the batch dims are rows of one
    // matrix product. dB = A^T g is then one GEMM over all B*M rows, not a
    // transpose of A, a batched product and a sum over the batch; and
    // dA = g B^T needs no transposed copy of B.
    int64_t k = lhsType.getShape().back(), n = rhsType.getShape().back();
    int64_t rows = lhsType.getNumElements() / std::max<int64_t>(k, 1);
    Value lhsRows = b.reshape(lhs, {rows, k});
    Value gradientRows = b.reshape(g, {rows, n});
    out.push_back(b.reshape(b.gemm(gradientRows, rhs, false, true),
                            lhsType.getShape()));
    out.push_back(b.gemm(lhsRows, gradientRows, true, false));
    return success();
  }
  // Promote 1-D operands as numpy does ([K] -> [1, K] / [K, 1]), so the
  // formulas below only see batched matrices.
  SmallVector<int64_t> gradientShape(typeOf(g).getShape());
  if (lhsType.getRank() == 1) {
    lhs = b.reshape(lhs, {1, lhsType.getDimSize(0)});
    gradientShape.insert(gradientShape.end() - (rhsType.getRank() == 1 ? 0 : 1), 1);
  }
  if (rhsType.getRank() == 1) {
    rhs = b.reshape(rhs, {rhsType.getDimSize(0), 1});
    gradientShape.push_back(1);
  }
  g = b.reshape(g, gradientShape);
  // dA = g B^T, dB = A^T g, summed over broadcast batch dims.
  Value lhsGradient = b.reduceTo(b.matmul(g, b.transposeLastTwo(rhs)), lhs.getType());
  Value rhsGradient = b.reduceTo(b.matmul(b.transposeLastTwo(lhs), g), rhs.getType());
  out.push_back(b.reshape(lhsGradient, lhsType.getShape()));
  out.push_back(b.reshape(rhsGradient, rhsType.getShape()));
  return success();
}

LogicalResult GemmOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0], a = getA(), bMatrix = getB();
  bool transA = getTransA(), transB = getTransB();
  double alpha = getAlpha().convertToDouble();
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(builder, getLoc(), x, y, Value(), llvm::APFloat(alpha),
                          llvm::APFloat(1.0), tx, ty);
  };
  // Y = alpha op(A) op(B) + beta C
  Value aGradient = transA ? gemm(bMatrix, g, transB, true)   // (g op(B)^T)^T
                           : gemm(g, bMatrix, false, !transB); // g op(B)^T
  Value bGradient = transB ? gemm(g, a, true, transA)          // (op(A)^T g)^T
                           : gemm(a, g, !transA, false);       // op(A)^T g
  out.push_back(aGradient);
  out.push_back(bGradient);
  if (Value c = getC()) {
    Value cGradient = b.reduceTo(g, c.getType());
    double beta = getBeta().convertToDouble();
    out.push_back(beta == 1.0 ? cGradient : b.mul(cGradient, b.scalar(beta, g)));
  }
  return success();
}

/// Sum over every dim but the channel dim 1, giving [C].
static Value perChannelSum(GradientBuilder &b, Value value) {
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < typeOf(value).getRank(); ++i)
    if (i != 1)
      axes.push_back(i);
  return b.reduceSum(value, axes, /*keepdims=*/false);
}

LogicalResult ConvOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0];
  out.push_back(ConvBackwardInputOp::create(
      builder, getLoc(), g, getWeight(), typeOf(getInput()).getShape(),
      getStrides(), getPads(), getDilations(), getGroup()));
  out.push_back(ConvBackwardWeightOp::create(
      builder, getLoc(), g, getInput(), typeOf(getWeight()).getShape(),
      getStrides(), getPads(), getDilations(), getGroup()));
  if (getBias())
    out.push_back(perChannelSum(b, g));
  return success();
}

LogicalResult ConvMatrixOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                           SmallVectorImpl<Value> &out) {
  out.push_back(ConvMatrixBackwardOp::create(
      builder, getLoc(), grads[0], typeOf(getWeight()).getShape(),
      getInputSpatial(), getOutputSpatial(), getStrides(), getPads()));
  return success();
}

/// z = conv_backward_input(d, w) is linear in d and in w: its adjoint in d
/// is the convolution itself, and <g, z> = <conv(g, w), d> makes w's
/// gradient the weight gradient of conv(g, w) against output gradient d.
LogicalResult ConvBackwardInputOp::buildGradients(OpBuilder &builder,
                                                  ValueRange grads,
                                                  SmallVectorImpl<Value> &out) {
  Value g = grads[0];
  out.push_back(ConvOp::create(builder, getLoc(), g, getWeight(), Value(),
                               getStrides(), getPads(), getDilations(),
                               getGroup()));
  out.push_back(ConvBackwardWeightOp::create(
      builder, getLoc(), getGradOutput(), g, typeOf(getWeight()).getShape(),
      getStrides(), getPads(), getDilations(), getGroup()));
  return success();
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(MaxPoolBackwardOp::create(
      builder, getLoc(), grads[0], getInput(), getKernelShape(), getStrides(),
      getPads(), getDilations(), getCeilMode()));
  return success();
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(AvgPoolBackwardOp::create(
      builder, getLoc(), grads[0], typeOf(getInput()).getShape(),
      getKernelShape(), getStrides(), getPads(), getCountIncludePad(),
      getCeilMode()));
  return success();
}

LogicalResult GlobalAvgPoolOp::buildGradients(OpBuilder &builder,
                                              ValueRange grads,
                                              SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  auto inputType = typeOf(getInput());
  double count = 1;
  for (int64_t i = 2; i < inputType.getRank(); ++i)
    count *= inputType.getDimSize(i);
  Value g = b.expand(grads[0], inputType.getShape());
  out.push_back(b.div(g, b.scalar(count, g)));
  return success();
}

LogicalResult BatchNormTrainingOp::buildGradients(OpBuilder &builder,
                                                  ValueRange grads,
                                                  SmallVectorImpl<Value> &out) {
  // Only the normalized output carries a gradient; the running statistics
  // are state.
  Value g = grads[0];
  if (!g) {
    out.append(5, Value());
    return success();
  }
  auto backward = BatchNormTrainingBackwardOp::create(
      builder, getLoc(), g, getInput(), getScale(), getEpsilon());
  out.push_back(backward.getGradInput());
  out.push_back(backward.getGradScale());
  out.push_back(backward.getGradBias());
  out.append(2, Value());
  return success();
}

LogicalResult BatchNormInferenceOp::buildGradients(OpBuilder &builder,
                                                   ValueRange grads,
                                                   SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = grads[0], x = getInput();
  auto type = typeOf(x);
  // Per-channel values broadcast as [C, 1, ...].
  SmallVector<int64_t> channelShape(type.getRank() - 1, 1);
  channelShape[0] = type.getDimSize(1);
  auto channel = [&](Value v) { return b.reshape(v, channelShape); };
  Value inverseStd = b.div(
      b.scalar(1, x),
      b.sqrt(b.add(getVar(), b.scalar(getEpsilon().convertToDouble(), x))));
  Value normalized =
      b.mul(b.sub(x, channel(getMean())), channel(inverseStd));
  out.push_back(b.mul(g, channel(b.mul(getScale(), inverseStd))));
  out.push_back(perChannelSum(b, b.mul(g, normalized)));
  out.push_back(perChannelSum(b, g));
  out.append(2, Value());
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                          SmallVectorImpl<Value> &out) {
  auto backward = LayerNormBackwardOp::create(builder, getLoc(), grads[0],
                                              getInput(), getScale(), getAxis(),
                                              getEpsilon());
  out.push_back(backward.getGradInput());
  out.push_back(backward.getGradScale());
  if (getBias())
    out.push_back(backward.getGradBias());
  return success();
}
