//===- NeuralOps.cpp - inference of matmul, conv, pooling, normalization --===//
#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

#include <string>

using namespace mlir;
using namespace trainc::graph;

static std::string str(int64_t value) { return std::to_string(value); }

static RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Two sizes that must agree (dynamic agrees with anything).
static bool compatible(int64_t a, int64_t b) {
  return a == b || isDynamic(a) || isDynamic(b);
}

static LogicalResult requireSameElementType(std::optional<Location> location,
                                            ValueRange values) {
  for (Value value : values)
    if (value && getElementTypeOrSelf(value.getType()) !=
                     getElementTypeOrSelf(values.front().getType()))
      return inferenceError(location, "operand element types differ");
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> location,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &types) {
  auto lhs = tensorType(adaptor.getLhs()), rhs = tensorType(adaptor.getRhs());
  if (failed(requireSameElementType(location,
                                    {adaptor.getLhs(), adaptor.getRhs()})))
    return failure();
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return inferenceError(location, "matmul operands must not be scalars");
  // numpy promotion: a 1-D lhs is a row, a 1-D rhs a column; both
  // promoted dims are dropped from the result.
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2],
          n = b.back();
  if (!compatible(k, k2))
    return inferenceError(location, "matmul contraction sizes differ: " +
                                        formatShape(lhs.getShape()) + " x " +
                                        formatShape(rhs.getShape()));
  auto batch = broadcastShapes(ArrayRef<int64_t>(a).drop_back(2),
                               ArrayRef<int64_t>(b).drop_back(2));
  if (!batch)
    return inferenceError(location, "matmul batch dims do not broadcast: " +
                                        formatShape(lhs.getShape()) + " x " +
                                        formatShape(rhs.getShape()));
  SmallVector<int64_t> shape(*batch);
  if (!lhsVector)
    shape.push_back(m);
  if (!rhsVector)
    shape.push_back(n);
  types.push_back(lhs.clone(shape));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  auto a = tensorType(adaptor.getA()), b = tensorType(adaptor.getB());
  if (failed(requireSameElementType(
          location, {adaptor.getA(), adaptor.getB(), adaptor.getC()})))
    return failure();
  if (a.getRank() != 2 || b.getRank() != 2)
    return inferenceError(location, "gemm operands must be 2-D, got " +
                                        formatShape(a.getShape()) + " and " +
                                        formatShape(b.getShape()));
  bool transA = adaptor.getTransA(), transB = adaptor.getTransB();
  int64_t m = a.getDimSize(transA ? 1 : 0), k = a.getDimSize(transA ? 0 : 1);
  int64_t k2 = b.getDimSize(transB ? 1 : 0), n = b.getDimSize(transB ? 0 : 1);
  if (!compatible(k, k2))
    return inferenceError(location, "gemm contraction sizes differ: " +
                                        str(k) + " vs " + str(k2));
  SmallVector<int64_t> shape = {m, n};
  if (Value c = adaptor.getC()) {
    // C broadcasts unidirectionally to [M, N].
    auto broadcast = broadcastShapes(tensorType(c).getShape(), shape);
    if (!broadcast || ArrayRef<int64_t>(*broadcast) != ArrayRef<int64_t>(shape))
      return inferenceError(location, "gemm bias " +
                                          formatShape(tensorType(c).getShape()) +
                                          " does not broadcast to " +
                                          formatShape(shape));
  }
  types.push_back(a.clone(shape));
  return success();
}

/// Checks per-spatial-dim attribute lengths of conv and pooling ops.
static LogicalResult verifyWindowAttrs(std::optional<Location> location,
                                       size_t spatial, ArrayRef<int64_t> kernel,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> pads,
                                       ArrayRef<int64_t> dilations) {
  if (kernel.size() != spatial || strides.size() != spatial ||
      pads.size() != 2 * spatial || dilations.size() != spatial)
    return inferenceError(location,
                          "window attributes need " + str(spatial) +
                              " kernel/stride/dilation entries and " +
                              str(2 * spatial) + " pads");
  for (size_t i = 0; i < spatial; ++i)
    if (kernel[i] <= 0 || strides[i] <= 0 || dilations[i] <= 0 ||
        pads[i] < 0 || pads[i + spatial] < 0)
      return inferenceError(location,
                            "kernel, stride and dilation must be positive "
                            "and pads non-negative");
  return success();
}

/// [N, C, spatial...] -> [N, channels, windowed spatial...].
static LogicalResult inferWindowed(std::optional<Location> location,
                                   RankedTensorType input, int64_t channels,
                                   ArrayRef<int64_t> kernel,
                                   ArrayRef<int64_t> strides,
                                   ArrayRef<int64_t> pads,
                                   ArrayRef<int64_t> dilations, bool ceilMode,
                                   SmallVectorImpl<Type> &types) {
  size_t spatial = input.getRank() - 2;
  if (failed(verifyWindowAttrs(location, spatial, kernel, strides, pads,
                               dilations)))
    return failure();
  SmallVector<int64_t> shape = {input.getDimSize(0), channels};
  for (size_t i = 0; i < spatial; ++i) {
    auto size = windowOutputSize(input.getDimSize(i + 2), kernel[i],
                                 strides[i], pads[i], pads[i + spatial],
                                 dilations[i], ceilMode);
    if (!size)
      return inferenceError(location, "window " + formatShape(kernel) +
                                          " does not fit input " +
                                          formatShape(input.getShape()));
    shape.push_back(*size);
  }
  types.push_back(input.clone(shape));
  return success();
}

static LogicalResult requireImage(std::optional<Location> location,
                                  RankedTensorType input) {
  if (input.getRank() < 3)
    return inferenceError(location, "expected an [N, C, spatial...] input, got " +
                                        formatShape(input.getShape()));
  return success();
}

LogicalResult trainc::graph::inferConvType(
    std::optional<Location> location, RankedTensorType input,
    RankedTensorType weight, RankedTensorType bias, ArrayRef<int64_t> strides,
    ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations, int64_t group,
    SmallVectorImpl<Type> &types) {
  if (failed(requireImage(location, input)))
    return failure();
  if (weight.getRank() != input.getRank())
    return inferenceError(location, "conv weight " +
                                        formatShape(weight.getShape()) +
                                        " does not match input rank " +
                                        str(input.getRank()));
  int64_t outChannels = weight.getDimSize(0);
  if (group <= 0 || (!isDynamic(outChannels) && outChannels % group != 0))
    return inferenceError(location, "conv group " + str(group) +
                                        " does not divide the " +
                                        str(outChannels) + " output channels");
  int64_t inChannels = input.getDimSize(1);
  if (!isDynamic(inChannels) && !weight.isDynamicDim(1) &&
      inChannels != weight.getDimSize(1) * group)
    return inferenceError(location,
                          "conv input has " + str(inChannels) +
                              " channels but weight " +
                              formatShape(weight.getShape()) + " with group " +
                              str(group) + " expects " +
                              str(weight.getDimSize(1) * group));
  if (bias &&
      (bias.getRank() != 1 || !compatible(bias.getDimSize(0), outChannels)))
    return inferenceError(location, "conv bias " +
                                        formatShape(bias.getShape()) +
                                        " must be [" + str(outChannels) + "]");
  SmallVector<int64_t> kernel(weight.getShape().drop_front(2));
  return inferWindowed(location, input, outChannels, kernel, strides, pads,
                       dilations, /*ceilMode=*/false, types);
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &types) {
  if (failed(requireSameElementType(
          location,
          {adaptor.getInput(), adaptor.getWeight(), adaptor.getBias()})))
    return failure();
  RankedTensorType bias =
      adaptor.getBias() ? tensorType(adaptor.getBias()) : RankedTensorType();
  int64_t group = adaptor.getGroupAttr() ? adaptor.getGroupAttr().getInt() : 1;
  return inferConvType(location, tensorType(adaptor.getInput()),
                       tensorType(adaptor.getWeight()), bias,
                       adaptor.getStrides(), adaptor.getPads(),
                       adaptor.getDilations(), group, types);
}

LogicalResult ConvMatrixOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> location,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &types) {
  RankedTensorType weight = tensorType(adaptor.getWeight());
  auto matrix = convMatrixShape(
      location, weight.getShape(), adaptor.getInputSpatial(),
      adaptor.getOutputSpatial(), adaptor.getStrides(), adaptor.getPads());
  if (failed(matrix))
    return failure();
  types.push_back(weight.clone(*matrix));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  if (failed(requireImage(location, input)))
    return failure();
  return inferWindowed(location, input, input.getDimSize(1),
                       adaptor.getKernelShape(), adaptor.getStrides(),
                       adaptor.getPads(), adaptor.getDilations(),
                       adaptor.getCeilMode(), types);
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> location,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  if (failed(requireImage(location, input)))
    return failure();
  SmallVector<int64_t> dilations(input.getRank() - 2, 1);
  return inferWindowed(location, input, input.getDimSize(1),
                       adaptor.getKernelShape(), adaptor.getStrides(),
                       adaptor.getPads(), dilations, adaptor.getCeilMode(),
                       types);
}

LogicalResult GlobalAvgPoolOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  if (failed(requireImage(location, input)))
    return failure();
  SmallVector<int64_t> shape(input.getRank(), 1);
  shape[0] = input.getDimSize(0);
  shape[1] = input.getDimSize(1);
  types.push_back(input.clone(shape));
  return success();
}

/// Whether a normalization's activations of element type `activation` go
/// with parameters of element type `parameter`: the same type, or bf16 or
/// f16 activations with f32 parameters (--amp: statistics in f32).
static bool normalizationTypesMatch(Type activation, Type parameter) {
  return activation == parameter ||
         ((activation.isBF16() || activation.isF16()) && parameter.isF32());
}

/// Every per-channel operand of a batch norm must be [C].
static LogicalResult verifyChannelOperands(std::optional<Location> location,
                                           RankedTensorType input,
                                           ValueRange perChannel) {
  if (input.getRank() < 2)
    return inferenceError(location, "batch norm input must be [N, C, ...], got " +
                                        formatShape(input.getShape()));
  for (Value value : perChannel) {
    auto type = tensorType(value);
    if (type.getRank() != 1 || !compatible(type.getDimSize(0),
                                           input.getDimSize(1)))
      return inferenceError(location, "batch norm per-channel operand " +
                                          formatShape(type.getShape()) +
                                          " must be [" +
                                          str(input.getDimSize(1)) + "]");
    if (!normalizationTypesMatch(input.getElementType(),
                                 type.getElementType()) ||
        type.getElementType() !=
            tensorType(perChannel.front()).getElementType())
      return inferenceError(location, "operand element types differ");
  }
  return success();
}

LogicalResult BatchNormTrainingOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  // The running variance uses the unbiased estimate n / (n - 1): one value
  // per channel has none (PyTorch refuses it too).
  if (input.hasStaticShape() && input.getRank() >= 2 &&
      input.getNumElements() == input.getDimSize(1))
    return inferenceError(location, "batch norm in training mode needs more "
                                    "than one value per channel, got " +
                                        formatShape(input.getShape()));
  if (failed(verifyChannelOperands(
          location, input,
          {adaptor.getScale(), adaptor.getBias(), adaptor.getRunningMean(),
           adaptor.getRunningVar()})))
    return failure();
  types.push_back(input);
  types.push_back(adaptor.getRunningMean().getType());
  types.push_back(adaptor.getRunningVar().getType());
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  if (failed(verifyChannelOperands(location, input,
                                   {adaptor.getScale(), adaptor.getBias(),
                                    adaptor.getMean(), adaptor.getVar()})))
    return failure();
  types.push_back(input);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> location,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &types) {
  auto input = tensorType(adaptor.getInput());
  int64_t axis = adaptor.getAxisAttr() ? adaptor.getAxisAttr().getInt() : 0;
  if (axis < 0 || axis >= input.getRank())
    return inferenceError(location, "layer norm axis " + str(axis) +
                                        " is out of range for rank " +
                                        str(input.getRank()));
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (Value value : {adaptor.getScale(), adaptor.getBias()}) {
    if (!value)
      continue;
    auto type = tensorType(value);
    if (type.getShape() != normalized)
      return inferenceError(location, "layer norm scale/bias " +
                                          formatShape(type.getShape()) +
                                          " must be " + formatShape(normalized));
    if (!normalizationTypesMatch(input.getElementType(), type.getElementType()))
      return inferenceError(location, "operand element types differ");
  }
  types.push_back(input);
  return success();
}
