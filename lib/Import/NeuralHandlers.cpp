//===- NeuralHandlers.cpp - ONNX matmul, conv, pooling, normalization -----===//
#include "lib/Import/NodeImporter.h"

#include "dialects/graph/GraphOps.h"

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
      int64_t total = std::max<int64_t>(0, (out - 1) * stride + effective - size);
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
    kernel.assign(weight.getShape().begin() + std::min<int64_t>(2, weight.getRank()),
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
  return finish(n, n.create<graph::MaxPoolOp>(
                       {*n.input(0)},
                       {n.arrayAttr("kernel_shape", window->kernel),
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
/// opset 14 and `training_mode = 1` from BN-14 on.
LogicalResult importBatchNormalization(NodeImporter &n) {
  auto operands = presentInputs(n, 5);
  if (failed(operands))
    return failure();
  if (operands->size() != 5)
    return n.error("BatchNormalization needs five inputs");
  double epsilon = n.getFloat("epsilon", 1e-5);
  double momentum = n.getFloat("momentum", 0.9);
  bool training =
      n.opset() >= 14 ? n.getBool("training_mode", false) : n.numOutputs() > 1;
  if (n.outputUsed(3) || n.outputUsed(4))
    return n.error("the saved mean / variance outputs are not supported");
  if (!training) {
    if (n.outputUsed(1) || n.outputUsed(2))
      return n.error("inference-mode BatchNormalization has no running "
                     "statistics outputs");
    return finish(n, n.create<graph::BatchNormInferenceOp>(
                         *operands, {n.f64Attr("epsilon", epsilon)}));
  }
  auto op = n.createOp(graph::BatchNormTrainingOp::getOperationName(),
                       *operands,
                       {n.f64Attr("epsilon", epsilon),
                        n.f64Attr("momentum", momentum)});
  if (failed(op))
    return failure();
  for (unsigned i = 0; i < 3; ++i)
    n.setOutput(i, (*op)->getResult(i));
  return success();
}

LogicalResult importLayerNormalization(NodeImporter &n) {
  if (n.outputUsed(1) || n.outputUsed(2))
    return n.error("the mean / inverse standard deviation outputs are not "
                   "supported");
  auto operands = presentInputs(n, 3);
  if (failed(operands))
    return failure();
  if (operands->size() < 2)
    return n.error("LayerNormalization needs at least two inputs");
  auto rank = cast<RankedTensorType>((*operands)[0].getType()).getRank();
  auto axis = n.normalizeAxis(n.getInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  return finish(n, n.create<graph::LayerNormOp>(
                       *operands, {n.i64Attr("axis", *axis),
                                   n.f64Attr("epsilon",
                                             n.getFloat("epsilon", 1e-5))}));
}

} // namespace

void registerNeuralHandlers(HandlerTable &table) {
  table["MatMul"] = importMatMul;
  table["Gemm"] = importGemm;
  table["Conv"] = importConv;
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
    registerCompositeHandlers(t);
    registerEinsumHandler(t);
    registerNeuralHandlers(t);
    registerLossHandlers(t);
    registerTrainingHandlers(t);
    return t;
  }();
  return table;
}

} // namespace trainc::import
