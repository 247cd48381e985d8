//===- LossGradients.cpp - gradients of the loss ops ----------------------===//
#include "dialects/graph/GradientBuilder.h"

using namespace mlir;
using namespace trainc::graph;

LogicalResult SoftmaxCrossEntropyOp::buildGradients(
    OpBuilder &builder, ValueRange grads, SmallVectorImpl<Value> &out) {
  out.push_back(SoftmaxCrossEntropyBackwardOp::create(
      builder, getLoc(), grads[0], getLogits(), getLabels(), getReduction(),
      getLabelSmoothing(), getIgnoreIndexAttr()));
  out.push_back(Value()); // labels
  return success();
}

LogicalResult NllLossOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(NllLossBackwardOp::create(builder, getLoc(), grads[0],
                                          getLogProbs(), getLabels(),
                                          getReduction(), getIgnoreIndexAttr()));
  out.push_back(Value()); // labels
  return success();
}

/// g broadcast to the prediction's shape, divided by the element count for
/// "mean".
static Value spreadLossGradient(GradientBuilder &b, Value g, Value prediction,
                                StringRef reduction) {
  auto type = cast<RankedTensorType>(prediction.getType());
  Value spread = b.expand(g, type.getShape());
  if (reduction == "mean")
    spread = b.div(spread, b.scalar(static_cast<double>(type.getNumElements()),
                                    spread));
  return spread;
}

LogicalResult MseLossOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                        SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = spreadLossGradient(b, grads[0], getPrediction(), getReduction());
  Value difference = b.sub(getPrediction(), getTarget());
  Value gradient = b.mul(b.mul(g, b.scalar(2, g)), difference);
  out.push_back(gradient);
  out.push_back(b.neg(gradient));
  return success();
}

LogicalResult L1LossOp::buildGradients(OpBuilder &builder, ValueRange grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = spreadLossGradient(b, grads[0], getPrediction(), getReduction());
  Value difference = b.sub(getPrediction(), getTarget());
  Value zero = b.scalar(0, difference);
  Type element = getElementTypeOrSelf(difference.getType());
  Value sign = b.sub(b.cast(b.greater(difference, zero), element),
                     b.cast(b.less(difference, zero), element));
  Value gradient = b.mul(g, sign);
  out.push_back(gradient);
  out.push_back(b.neg(gradient));
  return success();
}

LogicalResult BceWithLogitsLossOp::buildGradients(OpBuilder &builder,
                                                  ValueRange grads,
                                                  SmallVectorImpl<Value> &out) {
  GradientBuilder b(builder, getLoc());
  Value g = spreadLossGradient(b, grads[0], getPrediction(), getReduction());
  Value x = getPrediction(), t = getTarget();
  out.push_back(b.mul(g, b.sub(b.sigmoid(x), t)));
  out.push_back(b.neg(b.mul(g, x)));
  return success();
}
