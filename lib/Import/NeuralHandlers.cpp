//===- NeuralHandlers.cpp - ONNX matmul, conv, pooling, normalization -----===//
#include "lib/Import/ImportState.h"
#include "lib/Import/NodeImporter.h"

#include "dialects/graph/GraphOps.h"
#include "dialects/graph/ShapeInference.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// Collects inputs [0, count) that are present (optional ones may be absent
/// only at the end).
FailureOr<SmallVector<Value>> presentInputs(NodeImporter &n, unsigned count) {
  SmallVector<Value> values;
  for (unsigned i = 0; i < count; ++i) {
    if (!n.hasInput(i))
      break;
    auto value = n.input(i);
    if (failed(value))
      return failure();
    values.push_back(*value);
  }
  return values;
}

LogicalResult finish(NodeImporter &n, FailureOr<Value> result) {
  if (failed(result))
    return failure();
  n.setOutput(0, *result);
  return success();
}

LogicalResult importMatMul(NodeImporter &n) {
  auto operands = presentInputs(n, 2);
  if (failed(operands))
    return failure();
  if (operands->size() != 2)
    return n.error("MatMul needs two inputs");
  return finish(n, n.create<graph::MatMulOp>(*operands));
}

LogicalResult importGemm(NodeImporter &n) {
  auto operands = presentInputs(n, 3);
  if (failed(operands))
    return failure();
  if (operands->size() < 2)
    return n.error("Gemm needs at least two inputs");
  return finish(
      n, n.create<graph::GemmOp>(
             *operands, {n.f64Attr("alpha", n.getFloat("alpha", 1.0)),
                         n.f64Attr("beta", n.getFloat("beta", 1.0)),
                         n.boolAttr("trans_a", n.getBool("transA", false)),
                         n.boolAttr("trans_b", n.getBool("transB", false))}));
}

/// Window attributes shared by Conv and the pools, with ONNX defaults and
/// auto_pad resolved into explicit pads.
struct Window {
  SmallVector<int64_t> kernel, strides, pads, dilations;
};

FailureOr<Window> readWindow(NodeImporter &n, RankedTensorType input,
                             ArrayRef<int64_t> kernel) {
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1)
    return n.error("expected an [N, C, spatial...] input");
  Window window;
  window.kernel.assign(kernel.begin(), kernel.end());
  window.strides = n.getInts("strides");
  window.pads = n.getInts("pads");
  window.dilations = n.getInts("dilations");
  if (window.strides.empty())
    window.strides.assign(spatial, 1);
  if (window.dilations.empty())
    window.dilations.assign(spatial, 1);
  if (window.pads.empty())
    window.pads.assign(2 * spatial, 0);
  if (static_cast<int64_t>(window.kernel.size()) != spatial ||
      static_cast<int64_t>(window.strides.size()) != spatial ||
      static_cast<int64_t>(window.dilations.size()) != spatial ||
      static_cast<int64_t>(window.pads.size()) != 2 * spatial)
    return n.error("kernel_shape, strides, dilations or pads do not match " +
                   std::to_string(spatial) + " spatial dimensions");
  std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    window.pads.assign(2 * spatial, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t size = input.getDimSize(i + 2), stride = window.strides[i];
      int64_t effective = (window.kernel[i] - 1) * window.dilations[i] + 1;
      int64_t out = (size + stride - 1) / stride;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * stride + effective - size);
      int64_t small = total / 2, large = total - small;
      window.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      window.pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return n.error("unknown auto_pad '" + autoPad + "'");
  }
  return window;
}

LogicalResult importConv(NodeImporter &n) {
  auto operands = presentInputs(n, 3);
  if (failed(operands))
    return failure();
  if (operands->size() < 2)
    return n.error("Conv needs at least two inputs");
  auto input = cast<RankedTensorType>((*operands)[0].getType());
  auto weight = cast<RankedTensorType>((*operands)[1].getType());
  SmallVector<int64_t> kernel = n.getInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(weight.getShape().begin() +
                      std::min<int64_t>(2, weight.getRank()),
                  weight.getShape().end());
  auto window = readWindow(n, input, kernel);
  if (failed(window))
    return failure();
  return finish(n, n.create<graph::ConvOp>(
                       *operands, {n.arrayAttr("strides", window->strides),
                                   n.arrayAttr("pads", window->pads),
                                   n.arrayAttr("dilations", window->dilations),
                                   n.i64Attr("group", n.getInt("group", 1))}));
}

/// ConvTranspose: graph.conv_backward_input of x with the weight (the
/// gradient of a convolution from the output's shape to the input's), plus
/// the bias per channel. The output's spatial sizes follow ONNX:
/// stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads,
/// or `output_shape` (pads then derived, SAME_UPPER putting the odd one at
/// the end as auto_pad does; an output longer than that ends in zeros, as
/// ONNX's test data and ONNX Runtime have it).
LogicalResult importConvTranspose(NodeImporter &n) {
  auto operands = presentInputs(n, 3);
  if (failed(operands))
    return failure();
  if (operands->size() < 2)
    return n.error("ConvTranspose needs at least two inputs");
  auto input = cast<RankedTensorType>((*operands)[0].getType());
  auto weight = cast<RankedTensorType>((*operands)[1].getType());
  int64_t spatial = input.getRank() - 2;
  if (spatial < 1 || weight.getRank() != input.getRank())
    return n.error("expected an [N, C, spatial...] input and a weight of the "
                   "same rank");
  int64_t group = n.getInt("group", 1);
  if (group <= 0 || group > weight.getDimSize(0) ||
      weight.getDimSize(0) % group != 0)
    return n.error("group " + std::to_string(group) +
                   " does not divide the weight's " +
                   std::to_string(weight.getDimSize(0)) + " input channels");
  if (input.getDimSize(1) != weight.getDimSize(0))
    return n.error("the input has " + std::to_string(input.getDimSize(1)) +
                   " channels; the weight " +
                   graph::formatShape(weight.getShape()) + " expects " +
                   std::to_string(weight.getDimSize(0)));
  SmallVector<int64_t> kernel = n.getInts("kernel_shape");
  if (kernel.empty())
    kernel.assign(weight.getShape().begin() + 2, weight.getShape().end());
  if (ArrayRef<int64_t>(kernel) != weight.getShape().drop_front(2))
    return n.error("kernel_shape does not match the weight " +
                   graph::formatShape(weight.getShape()));
  // auto_pad is applied below, from the output's size.
  std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return n.error("unknown auto_pad '" + autoPad + "'");
  SmallVector<int64_t> strides = n.getInts("strides"),
                       dilations = n.getInts("dilations"),
                       pads = n.getInts("pads"),
                       outputPadding = n.getInts("output_padding"),
                       outputShape = n.getInts("output_shape");
  if (strides.empty())
    strides.assign(spatial, 1);
  if (dilations.empty())
    dilations.assign(spatial, 1);
  if (pads.empty() || autoPad != "NOTSET")
    pads.assign(2 * spatial, 0);
  if (outputPadding.empty())
    outputPadding.assign(spatial, 0);
  if (outputShape.size() == static_cast<size_t>(spatial + 2))
    outputShape.erase(outputShape.begin(), outputShape.begin() + 2);
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial ||
      static_cast<int64_t>(outputPadding.size()) != spatial ||
      (!outputShape.empty() &&
       static_cast<int64_t>(outputShape.size()) != spatial))
    return n.error("strides, dilations, pads, output_padding or output_shape "
                   "do not match " +
                   std::to_string(spatial) + " spatial dimensions");
  SmallVector<int64_t> shape = {input.getDimSize(0),
                                weight.getDimSize(1) * group};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t stride = strides[i], dilation = dilations[i];
    if (stride <= 0 || stride > (int64_t(1) << 20) || dilation <= 0 ||
        dilation > (int64_t(1) << 20))
      return n.error("stride " + std::to_string(stride) + " and dilation " +
                     std::to_string(dilation) + " of axis " +
                     std::to_string(i) + " must be in [1, 2^20]");
    // ONNX also allows output_padding up to the dilation; rows past the
    // stride would need an explicit zero pad (not supported).
    if (outputPadding[i] < 0 || outputPadding[i] >= stride)
      return n.error("output_padding " + std::to_string(outputPadding[i]) +
                     " of axis " + std::to_string(i) +
                     " must be at least 0 and smaller than the stride " +
                     std::to_string(stride));
    // Every term is below 2^20 * 2^40: no overflow in 64 bits.
    int64_t full = stride * (input.getDimSize(i + 2) - 1) + outputPadding[i] +
                   (kernel[i] - 1) * dilation + 1;
    if (!outputShape.empty() || autoPad == "SAME_UPPER" ||
        autoPad == "SAME_LOWER") {
      int64_t size = outputShape.empty() ? input.getDimSize(i + 2) * stride
                                         : outputShape[i];
      // An output longer than the kernels reach (by less than a stride)
      // ends in zeros, as an output_padding would.
      int64_t total = full - size;
      if (size <= 0 || total <= -stride)
        return n.error("output size " + std::to_string(size) + " of axis " +
                       std::to_string(i) + " is not reachable (" +
                       std::to_string(full) + " and up to " +
                       std::to_string(stride - 1) + " more)");
      if (total < 0) {
        full = size;
        total = 0;
      }
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[i + spatial] = total - pads[i];
    }
    if (pads[i] < 0 || pads[i + spatial] < 0 ||
        full - pads[i] - pads[i + spatial] <= 0)
      return n.error("pads of axis " + std::to_string(i) + " leave no output");
    shape.push_back(full - pads[i] - pads[i + spatial]);
  }
  if (std::string bad = checkShape(shape, 8); !bad.empty())
    return n.error("the output would have " + bad);
  auto result = n.create<graph::ConvBackwardInputOp>(
      {(*operands)[0], (*operands)[1]},
      {n.arrayAttr("input_shape", shape), n.arrayAttr("strides", strides),
       n.arrayAttr("pads", pads), n.arrayAttr("dilations", dilations),
       n.i64Attr("group", group)});
  if (failed(result) || operands->size() < 3)
    return finish(n, result);
  // The bias, [C_out], as [C_out, 1...] against [N, C_out, spatial...].
  SmallVector<int64_t> biasShape(spatial + 1, 1);
  biasShape[0] = shape[1];
  auto bias = n.create<graph::ReshapeOp>({(*operands)[2]},
                                         {n.arrayAttr("shape", biasShape)});
  if (failed(bias))
    return failure();
  return finish(n, n.create<graph::AddOp>({*result, *bias}));
}

LogicalResult importMaxPool(NodeImporter &n) {
  if (n.outputUsed(1))
    return n.error("the MaxPool indices output is not supported");
  if (n.getInt("storage_order", 0) != 0)
    return n.error("column-major storage_order is not supported");
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  bool ceilMode = n.getBool("ceil_mode", false);
  auto window = readWindow(n, *type, n.getInts("kernel_shape"));
  if (failed(window))
    return failure();
  return finish(n,
                n.create<graph::MaxPoolOp>(
                    {*n.input(0)}, {n.arrayAttr("kernel_shape", window->kernel),
                                    n.arrayAttr("strides", window->strides),
                                    n.arrayAttr("pads", window->pads),
                                    n.arrayAttr("dilations", window->dilations),
                                    n.boolAttr("ceil_mode", ceilMode)}));
}

LogicalResult importAveragePool(NodeImporter &n) {
  auto type = n.inputType(0);
  if (failed(type))
    return failure();
  bool ceilMode = n.getBool("ceil_mode", false);
  auto window = readWindow(n, *type, n.getInts("kernel_shape"));
  if (failed(window))
    return failure();
  if (llvm::any_of(window->dilations, [](int64_t d) { return d != 1; }))
    return n.error("dilated AveragePool is not supported");
  return finish(
      n, n.create<graph::AvgPoolOp>(
             {*n.input(0)}, {n.arrayAttr("kernel_shape", window->kernel),
                             n.arrayAttr("strides", window->strides),
                             n.arrayAttr("pads", window->pads),
                             n.boolAttr("count_include_pad",
                                        n.getBool("count_include_pad", false)),
                             n.boolAttr("ceil_mode", ceilMode)}));
}

LogicalResult importGlobalAveragePool(NodeImporter &n) {
  auto input = n.input(0);
  if (failed(input))
    return failure();
  return finish(n, n.create<graph::GlobalAvgPoolOp>({*input}));
}

/// BatchNormalization: training mode is BN-9's five-output form below
/// opset 14 and `training_mode = 1` from BN-14 on, or any form under
/// `--train-batch-norm` (ImportOptions::trainBatchNorm): its running
/// statistics are state either way (OnnxImporter.cpp), so the training op
/// updates them whether or not the node names its running-statistics
/// outputs.
LogicalResult importBatchNormalization(NodeImporter &n) {
  auto operands = presentInputs(n, 5);
  if (failed(operands))
    return failure();
  if (operands->size() != 5)
    return n.error("BatchNormalization needs five inputs");
  double epsilon = n.getFloat("epsilon", 1e-5);
  double momentum = n.getFloat("momentum", 0.9);
  bool written =
      n.opset() >= 14 ? n.getBool("training_mode", false) : n.numOutputs() > 1;
  bool training = written || n.options().trainBatchNorm;
  if (n.outputUsed(3) || n.outputUsed(4))
    return n.error("the saved mean / variance outputs are not supported");
  if (!written && (n.outputUsed(1) || n.outputUsed(2)))
    return n.error("inference-mode BatchNormalization has no running "
                   "statistics outputs");
  if (!training) {
    n.warnOnce("inference batch norm",
               "normalizes with its running statistics (training_mode 0), "
               "as does every other BatchNormalization of this kind in the "
               "model: trainc trains it so, with the statistics fixed, "
               "where a PyTorch module in train() mode normalizes with each "
               "batch's (--train-batch-norm trains them so; torch.onnx."
               "export's dynamo exporter writes every BatchNorm in this "
               "form)");
    return finish(n, n.create<graph::BatchNormInferenceOp>(
                         *operands, {n.f64Attr("epsilon", epsilon)}));
  }
  auto op = n.createOp(
      graph::BatchNormTrainingOp::getOperationName(), *operands,
      {n.f64Attr("epsilon", epsilon), n.f64Attr("momentum", momentum)});
  if (failed(op))
    return failure();
  for (unsigned i = 0; i < 3; ++i)
    n.setOutput(i, (*op)->getResult(i));
  return success();
}

/// LayerNormalization's optional Mean and InvStdDev outputs (kept
/// dimensions, in float32 for stash_type 1): reduce_mean(x) and
/// 1 / sqrt(reduce_mean((x - mean)^2) + epsilon) over the normalized axes,
/// composed of differentiable graph ops.
LogicalResult layerNormStatistics(NodeImporter &n, Value x, int64_t axis,
                                  double epsilon) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t stash = n.getInt("stash_type", 1);
  if (stash != 1)
    return n.error("stash_type " + std::to_string(stash) +
                   " is not supported (1: float32)");
  Type f32 = n.builder().getF32Type();
  if (!type.getElementType().isF32() && !type.getElementType().isF64()) {
    auto cast =
        n.create<graph::CastOp>({x}, {n.namedAttr("to", TypeAttr::get(f32))});
    if (failed(cast))
      return failure();
    x = *cast;
  }
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < type.getRank(); ++d)
    axes.push_back(d);
  auto reduce = [&](Value v) {
    return n.create<graph::ReduceMeanOp>(
        {v}, {n.arrayAttr("axes", axes), n.boolAttr("keepdims", true)});
  };
  auto mean = reduce(x);
  if (failed(mean))
    return failure();
  auto centered = n.create<graph::SubOp>({x, *mean});
  auto squared = succeeded(centered)
                     ? n.create<graph::MulOp>({*centered, *centered})
                     : FailureOr<Value>(failure());
  auto variance =
      succeeded(squared) ? reduce(*squared) : FailureOr<Value>(failure());
  auto eps = n.create<graph::ConstantOp>(
      {}, {n.namedAttr("value", DenseElementsAttr::get(
                                    RankedTensorType::get({}, element),
                                    FloatAttr::get(element, epsilon)))});
  if (failed(variance) || failed(eps))
    return failure();
  auto shifted = n.create<graph::AddOp>({*variance, *eps});
  auto root = succeeded(shifted) ? n.create<graph::SqrtOp>({*shifted})
                                 : FailureOr<Value>(failure());
  auto inverse = succeeded(root) ? n.create<graph::ReciprocalOp>({*root})
                                 : FailureOr<Value>(failure());
  if (failed(inverse))
    return failure();
  n.setOutput(1, *mean);
  n.setOutput(2, *inverse);
  return success();
}

LogicalResult importLayerNormalization(NodeImporter &n) {
  auto operands = presentInputs(n, 3);
  if (failed(operands))
    return failure();
  if (operands->size() < 2)
    return n.error("LayerNormalization needs at least two inputs");
  auto rank = cast<RankedTensorType>((*operands)[0].getType()).getRank();
  auto axis = n.normalizeAxis(n.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  double epsilon = n.getFloat("epsilon", 1e-5);
  if ((n.outputUsed(1) || n.outputUsed(2)) &&
      failed(layerNormStatistics(n, (*operands)[0], *axis, epsilon)))
    return failure();
  return finish(n, n.create<graph::LayerNormOp>(
                       *operands, {n.i64Attr("axis", *axis),
                                   n.f64Attr("epsilon", epsilon)}));
}

} // namespace

void registerNeuralHandlers(HandlerTable &table) {
  table["MatMul"] = importMatMul;
  table["Gemm"] = importGemm;
  table["Conv"] = importConv;
  table["ConvTranspose"] = importConvTranspose;
  table["MaxPool"] = importMaxPool;
  table["AveragePool"] = importAveragePool;
  table["GlobalAveragePool"] = importGlobalAveragePool;
  table["BatchNormalization"] = importBatchNormalization;
  table["LayerNormalization"] = importLayerNormalization;
}

const HandlerTable &handlerTable() {
  static const HandlerTable table = [] {
    HandlerTable t;
    registerElementwiseHandlers(t);
    registerShapeHandlers(t);
    registerPadHandler(t);
    registerResizeHandler(t);
    registerCompositeHandlers(t);
    registerSplitHandlers(t);
    registerEinsumHandler(t);
    registerNeuralHandlers(t);
    registerLossHandlers(t);
    registerTrainingHandlers(t);
    return t;
  }();
  return table;
}

} // namespace trainc::import
