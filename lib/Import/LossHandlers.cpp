//===- LossHandlers.cpp - ONNX loss operators -----------------------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss (opset 13+), so a
// model whose ONNX graph already ends in its loss trains on it as is
// (--loss=auto picks the scalar output).
//
//===----------------------------------------------------------------------===//
#include "lib/Import/NodeImporter.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// Operands and attributes shared by both losses; per-class weights are not
/// supported.
FailureOr<SmallVector<NamedAttribute>> lossAttributes(NodeImporter &n,
                                                      SmallVectorImpl<Value> &operands) {
  if (n.hasInput(2))
    return n.error("per-class loss weights are not supported");
  for (unsigned i = 0; i < 2; ++i) {
    auto value = n.input(i);
    if (failed(value))
      return failure();
    operands.push_back(*value);
  }
  std::string reduction = n.getString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return n.error("unknown reduction '" + reduction + "'");
  SmallVector<NamedAttribute> attrs = {
      n.namedAttr("reduction", n.builder().getStringAttr(reduction))};
  if (n.attribute("ignore_index"))
    attrs.push_back(n.i64Attr("ignore_index", n.getInt("ignore_index", 0)));
  return attrs;
}

LogicalResult importSoftmaxCrossEntropyLoss(NodeImporter &n) {
  if (n.outputUsed(1))
    return n.error("the log_prob output is not supported");
  SmallVector<Value> operands;
  auto attrs = lossAttributes(n, operands);
  if (failed(attrs))
    return failure();
  auto loss = n.create<graph::SoftmaxCrossEntropyOp>(operands, *attrs);
  if (failed(loss))
    return failure();
  n.setOutput(0, *loss);
  return success();
}

LogicalResult importNegativeLogLikelihoodLoss(NodeImporter &n) {
  SmallVector<Value> operands;
  auto attrs = lossAttributes(n, operands);
  if (failed(attrs))
    return failure();
  auto loss = n.create<graph::NllLossOp>(operands, *attrs);
  if (failed(loss))
    return failure();
  n.setOutput(0, *loss);
  return success();
}

} // namespace

void registerLossHandlers(HandlerTable &table) {
  table["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropyLoss;
  table["NegativeLogLikelihoodLoss"] = importNegativeLogLikelihoodLoss;
}

} // namespace trainc::import
