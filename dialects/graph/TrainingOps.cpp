//===- TrainingOps.cpp - inference of backward, loss, optimizer, RNG ops --===//
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include <string>

using namespace mlir;
using namespace trainc::graph;

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// A result of `shape` with the element type of `like`.
static LogicalResult shapedLike(std::optional<Location> location,
                                ArrayRef<int64_t> shape, Value like,
                                int64_t expectedRank,
                                SmallVectorImpl<Type> &types) {
  if (static_cast<int64_t>(shape.size()) != expectedRank)
    return inferenceError(location, "shape attribute has rank " +
                                        std::to_string(shape.size()) +
                                        ", expected " +
                                        std::to_string(expectedRank));
  types.push_back(RankedTensorType::get(shape, getElementTypeOrSelf(like)));
  return success();
}

LogicalResult ConvBackwardInputOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto gradOutput = tensorType(adaptor.getGradOutput());
  auto weight = tensorType(adaptor.getWeight());
  if (gradOutput.getElementType() != weight.getElementType())
    return inferenceError(location,
                          "grad_output and weight element types differ");
  if (failed(shapedLike(location, adaptor.getInputShape(),
                        adaptor.getGradOutput(), gradOutput.getRank(), types)))
    return failure();
  // The convolution of the input shape must give grad_output's shape (the
  // kernels index grad_output by it; ONNX ConvTranspose comes through here).
  SmallVector<Type> forward;
  if (failed(inferConvType(
          location, cast<RankedTensorType>(types.back()), weight,
          RankedTensorType(), adaptor.getStrides(), adaptor.getPads(),
          adaptor.getDilations(),
          adaptor.getGroupAttr() ? adaptor.getGroupAttr().getInt() : 1,
          forward)))
    return failure();
  auto expected = cast<RankedTensorType>(forward.front());
  for (auto [a, b] : llvm::zip(expected.getShape(), gradOutput.getShape()))
    if (a != b && !isDynamic(a) && !isDynamic(b))
      return inferenceError(
          location, "grad_output " + formatShape(gradOutput.getShape()) +
                        " is not the convolution's output " +
                        formatShape(expected.getShape()) + " for input shape " +
                        formatShape(adaptor.getInputShape()));
  return success();
}

LogicalResult ConvBackwardWeightOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return shapedLike(location, adaptor.getWeightShape(), adaptor.getGradOutput(),
                    tensorType(adaptor.getGradOutput()).getRank(), types);
}

LogicalResult MaxPoolBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  types.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult AvgPoolBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return shapedLike(location, adaptor.getInputShape(), adaptor.getGradOutput(),
                    tensorType(adaptor.getGradOutput()).getRank(), types);
}

LogicalResult BatchNormTrainingBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (adaptor.getGradOutput().getType() != adaptor.getInput().getType())
    return inferenceError(location, "grad_output and input types differ");
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getScale().getType());
  types.push_back(adaptor.getScale().getType());
  return success();
}

LogicalResult LayerNormBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  if (adaptor.getGradOutput().getType() != adaptor.getInput().getType())
    return inferenceError(location, "grad_output and input types differ");
  types.push_back(adaptor.getInput().getType());
  types.push_back(adaptor.getScale().getType());
  types.push_back(adaptor.getScale().getType());
  return success();
}

LogicalResult GatherBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> shape = adaptor.getDataShape();
  return shapedLike(location, shape, adaptor.getGradOutput(), shape.size(),
                    types);
}

LogicalResult GatherElementsBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  ArrayRef<int64_t> shape = adaptor.getDataShape();
  return shapedLike(location, shape, adaptor.getGradOutput(), shape.size(),
                    types);
}

LogicalResult ConvMatrixBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto matrix = convMatrixShape(
      location, adaptor.getWeightShape(), adaptor.getInputSpatial(),
      adaptor.getOutputSpatial(), adaptor.getStrides(), adaptor.getPads());
  if (failed(matrix))
    return failure();
  if (tensorType(adaptor.getGradOutput()).getShape() != ArrayRef(*matrix))
    return inferenceError(location,
                          "conv_matrix_backward: grad_output must be " +
                              formatShape(*matrix));
  ArrayRef<int64_t> shape = adaptor.getWeightShape();
  return shapedLike(location, shape, adaptor.getGradOutput(), shape.size(),
                    types);
}

LogicalResult SliceBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return shapedLike(location, adaptor.getInputShape(), adaptor.getGradOutput(),
                    tensorType(adaptor.getGradOutput()).getRank(), types);
}

LogicalResult RandomMaskOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  if (tensorType(adaptor.getSeed()).getRank() != 0 ||
      tensorType(adaptor.getStep()).getRank() != 0)
    return inferenceError(location, "seed and step must be scalars");
  double ratio = adaptor.getRatioAttr().getValueAsDouble();
  if (ratio < 0.0 || ratio >= 1.0)
    return inferenceError(location, "ratio must be in [0, 1)");
  Type elementType = adaptor.getElementType();
  if (!isa<FloatType>(elementType))
    return inferenceError(location, "mask element type must be a float");
  types.push_back(RankedTensorType::get(adaptor.getShape(), elementType));
  return success();
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

static LogicalResult verifyReduction(std::optional<Location> location,
                                     StringRef reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return inferenceError(location, "reduction must be mean, sum or none, "
                                    "not '" +
                                        reduction + "'");
  return success();
}

/// Class-index losses: scores [N, C, d...] against labels [N, d...].
static LogicalResult inferClassLoss(std::optional<Location> location,
                                    Value scores, Value labels,
                                    StringRef reduction,
                                    SmallVectorImpl<Type> &types) {
  if (failed(verifyReduction(location, reduction)))
    return failure();
  auto scoresType = tensorType(scores), labelsType = tensorType(labels);
  SmallVector<int64_t> expected;
  if (scoresType.getRank() >= 2) {
    expected.push_back(scoresType.getDimSize(0));
    llvm::append_range(expected, scoresType.getShape().drop_front(2));
  }
  if (scoresType.getRank() < 2 || labelsType.getShape() != ArrayRef(expected))
    return inferenceError(location,
                          "labels " + formatShape(labelsType.getShape()) +
                              " do not match scores " +
                              formatShape(scoresType.getShape()) +
                              " (expected [N, C, d...] and [N, d...])");
  ArrayRef<int64_t> shape =
      reduction == "none" ? labelsType.getShape() : ArrayRef<int64_t>();
  types.push_back(RankedTensorType::get(shape, scoresType.getElementType()));
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  double smoothing = adaptor.getLabelSmoothingAttr()
                         ? adaptor.getLabelSmoothingAttr().getValueAsDouble()
                         : 0.0;
  if (smoothing < 0.0 || smoothing > 1.0)
    return inferenceError(location, "label smoothing must be in [0, 1]");
  return inferClassLoss(location, adaptor.getLogits(), adaptor.getLabels(),
                        adaptor.getReduction(), types);
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  return inferClassLoss(location, adaptor.getLogProbs(), adaptor.getLabels(),
                        adaptor.getReduction(), types);
}

/// The backward of a loss: the gradient has the scores' type, and the
/// incoming loss gradient has the loss's type.
static LogicalResult inferClassLossBackward(std::optional<Location> location,
                                            Value gradLoss, Value scores,
                                            Value labels, StringRef reduction,
                                            SmallVectorImpl<Type> &types) {
  SmallVector<Type, 1> lossType;
  if (failed(inferClassLoss(location, scores, labels, reduction, lossType)))
    return failure();
  if (gradLoss.getType() != lossType.front())
    return inferenceError(location, "grad_loss must have the loss's type");
  types.push_back(scores.getType());
  return success();
}

LogicalResult SoftmaxCrossEntropyBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferClassLossBackward(location, adaptor.getGradLoss(),
                                adaptor.getLogits(), adaptor.getLabels(),
                                adaptor.getReduction(), types);
}

LogicalResult NllLossBackwardOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  return inferClassLossBackward(location, adaptor.getGradLoss(),
                                adaptor.getLogProbs(), adaptor.getLabels(),
                                adaptor.getReduction(), types);
}

static LogicalResult inferPointwiseLoss(std::optional<Location> location,
                                        Value prediction, Value target,
                                        StringRef reduction,
                                        SmallVectorImpl<Type> &types) {
  if (failed(verifyReduction(location, reduction)))
    return failure();
  if (prediction.getType() != target.getType())
    return inferenceError(location, "prediction and target types differ");
  auto type = tensorType(prediction);
  types.push_back(reduction == "none" ? type : type.clone(ArrayRef<int64_t>()));
  return success();
}

#define TRAINC_POINTWISE_LOSS_INFERENCE(OpName)                                \
  LogicalResult OpName::inferReturnTypes(MLIRContext *,                        \
                                         std::optional<Location> location,    \
                                         Adaptor adaptor,                      \
                                         SmallVectorImpl<Type> &types) {       \
    return inferPointwiseLoss(location, adaptor.getPrediction(),               \
                              adaptor.getTarget(), adaptor.getReduction(),     \
                              types);                                          \
  }
TRAINC_POINTWISE_LOSS_INFERENCE(MseLossOp)
TRAINC_POINTWISE_LOSS_INFERENCE(L1LossOp)
TRAINC_POINTWISE_LOSS_INFERENCE(BceWithLogitsLossOp)
#undef TRAINC_POINTWISE_LOSS_INFERENCE

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// Every per-parameter operand has the parameter's type; the learning rate
/// and step are scalars.
static LogicalResult verifyUpdate(std::optional<Location> location,
                                  Value param, ValueRange sameType,
                                  Value learningRate, Value step) {
  for (Value value : sameType)
    if (value && value.getType() != param.getType())
      return inferenceError(location,
                            "gradient and optimizer state must have the "
                            "parameter's type");
  if (tensorType(learningRate).getRank() != 0 || tensorType(step).getRank() != 0)
    return inferenceError(location, "learning rate and step must be scalars");
  return success();
}

LogicalResult SgdUpdateOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (failed(verifyUpdate(location, adaptor.getParam(),
                          {adaptor.getGrad(), adaptor.getMomentumBuffer()},
                          adaptor.getLearningRate(), adaptor.getStep())))
    return failure();
  bool hasMomentum = adaptor.getMomentumAttr() &&
                     adaptor.getMomentumAttr().getValueAsDouble() != 0.0;
  if (hasMomentum != static_cast<bool>(adaptor.getMomentumBuffer()))
    return inferenceError(location, "a momentum buffer is needed exactly when "
                                    "momentum is non-zero");
  types.push_back(adaptor.getParam().getType());
  if (adaptor.getMomentumBuffer())
    types.push_back(adaptor.getParam().getType());
  return success();
}

LogicalResult AdamUpdateOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  if (failed(verifyUpdate(
          location, adaptor.getParam(),
          {adaptor.getGrad(), adaptor.getExpAvg(), adaptor.getExpAvgSq()},
          adaptor.getLearningRate(), adaptor.getStep())))
    return failure();
  types.append(3, adaptor.getParam().getType());
  return success();
}

LogicalResult AdagradUpdateOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> location,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &types) {
  if (failed(verifyUpdate(location, adaptor.getParam(),
                          {adaptor.getGrad(), adaptor.getSum()},
                          adaptor.getLearningRate(), adaptor.getStep())))
    return failure();
  types.append(2, adaptor.getParam().getType());
  return success();
}

LogicalResult AllReduceOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  if (adaptor.getReduction() != "mean")
    return inferenceError(location, "unknown all-reduce reduction '" +
                                        adaptor.getReduction().str() +
                                        "' (mean)");
  types.push_back(adaptor.getInput().getType());
  return success();
}
