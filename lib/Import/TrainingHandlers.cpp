//===- TrainingHandlers.cpp - ONNX ai.onnx.preview.training optimizers ----===//
//
// Adam, Adagrad and Momentum of the `ai.onnx.preview.training` domain
// (version 1). Each node updates n tensors at once: its inputs are R
// (learning rate), T (update count), then n of each per-tensor input
// group; its outputs are n of each per-tensor output group. The import
// emits one graph optimizer op per tensor.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/NodeImporter.h"

#include "dialects/graph/GraphOps.h"

using namespace mlir;

namespace trainc::import {
namespace {

/// The inputs of an optimizer node: R, T and `groups` groups of n tensors.
struct OptimizerInputs {
  Value learningRate, step;
  /// groups[g][i]: tensor i of input group g (X, G, then the state).
  SmallVector<SmallVector<Value>> groups;
  unsigned count = 0;
};

FailureOr<OptimizerInputs> readOptimizer(NodeImporter &n, unsigned groups,
                                         unsigned outputGroups) {
  int inputs = n.node().input_size();
  if (inputs < 2 + static_cast<int>(groups) || (inputs - 2) % groups != 0)
    return n.error("expected R, T and " + std::to_string(groups) +
                   " equally long groups of tensors, got " +
                   std::to_string(inputs) + " inputs");
  OptimizerInputs result;
  result.count = (inputs - 2) / groups;
  if (n.numOutputs() != outputGroups * result.count)
    return n.error("expected " + std::to_string(outputGroups * result.count) +
                   " outputs for " + std::to_string(result.count) +
                   " tensors, got " + std::to_string(n.numOutputs()));
  for (unsigned i = 0; i < 2; ++i) {
    auto value = n.input(i);
    if (failed(value))
      return failure();
    (i == 0 ? result.learningRate : result.step) = *value;
  }
  result.groups.resize(groups);
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned i = 0; i < result.count; ++i) {
      auto value = n.input(2 + g * result.count + i);
      if (failed(value))
        return failure();
      result.groups[g].push_back(*value);
    }
  return result;
}

/// Sets output group g, tensor i, of the node to result g of `op`.
void setGroupedOutputs(NodeImporter &n, Operation *op, unsigned count,
                       unsigned i) {
  for (unsigned g = 0; g < op->getNumResults(); ++g)
    n.setOutput(g * count + i, op->getResult(g));
}

/// Adam: inputs R, T, X..., G..., V..., H...; outputs X'..., V'..., H'....
LogicalResult importAdam(NodeImporter &n) {
  if (n.getFloat("norm_coefficient_post", 0.0) != 0.0)
    return n.error("norm_coefficient_post (post-update decay) is not "
                   "supported");
  auto inputs = readOptimizer(n, 4, 3);
  if (failed(inputs))
    return failure();
  // ONNX's alpha / beta are Adam's beta1 / beta2; norm_coefficient is L2
  // decay added to the gradient. The defaults are the ONNX schema's (in
  // float, as a serialized attribute would hold them), so they are always
  // written.
  SmallVector<NamedAttribute> attrs = {
      n.f64Attr("beta1", n.getFloat("alpha", 0.9f)),
      n.f64Attr("beta2", n.getFloat("beta", 0.999f)),
      n.f64Attr("epsilon", n.getFloat("epsilon", 1e-6f)),
      n.f64Attr("weight_decay", n.getFloat("norm_coefficient", 0.0)),
      n.boolAttr("decoupled", false),
      n.boolAttr("onnx_convention", true)};
  for (unsigned i = 0; i < inputs->count; ++i) {
    auto op = n.createOp(graph::AdamUpdateOp::getOperationName(),
                         {inputs->groups[0][i], inputs->groups[1][i],
                          inputs->groups[2][i], inputs->groups[3][i],
                          inputs->learningRate, inputs->step},
                         attrs);
    if (failed(op))
      return failure();
    setGroupedOutputs(n, *op, inputs->count, i);
  }
  return success();
}

/// Adagrad: inputs R, T, X..., G..., H...; outputs X'..., H'....
LogicalResult importAdagrad(NodeImporter &n) {
  auto inputs = readOptimizer(n, 3, 2);
  if (failed(inputs))
    return failure();
  SmallVector<NamedAttribute> attrs = {
      n.f64Attr("lr_decay", n.getFloat("decay_factor", 0.0)),
      n.f64Attr("epsilon", n.getFloat("epsilon", 1e-6f)),
      n.f64Attr("weight_decay", n.getFloat("norm_coefficient", 0.0))};
  for (unsigned i = 0; i < inputs->count; ++i) {
    auto op =
        n.createOp(graph::AdagradUpdateOp::getOperationName(),
                   {inputs->groups[0][i], inputs->groups[1][i],
                    inputs->groups[2][i], inputs->learningRate, inputs->step},
                   attrs);
    if (failed(op))
      return failure();
    setGroupedOutputs(n, *op, inputs->count, i);
  }
  return success();
}

/// Momentum: inputs R, T, X..., G..., V...; outputs X'..., V'.... ONNX's
/// alpha is the momentum and beta = 1 - dampening (both apply from the
/// second update on, as graph.sgd_update does).
LogicalResult importMomentum(NodeImporter &n) {
  for (const char *name : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!n.attribute(name))
      return n.error(std::string("missing attribute '") + name + "'");
  std::string mode = n.getString("mode", "");
  if (mode != "standard" && mode != "nesterov")
    return n.error("unknown mode '" + mode +
                   "' (expected standard or nesterov)");
  auto inputs = readOptimizer(n, 3, 2);
  if (failed(inputs))
    return failure();
  double momentum = n.getFloat("alpha", 0.0);
  SmallVector<NamedAttribute> attrs = {
      n.f64Attr("momentum", momentum),
      n.f64Attr("dampening", 1.0 - n.getFloat("beta", 1.0)),
      n.boolAttr("nesterov", mode == "nesterov"),
      n.f64Attr("weight_decay", n.getFloat("norm_coefficient", 0.0))};
  // Without momentum graph.sgd_update keeps no velocity.
  bool hasBuffer = momentum != 0.0;
  for (unsigned i = 0; i < inputs->count; ++i) {
    if (!hasBuffer && n.outputUsed(inputs->count + i))
      return n.error("with alpha = 0 the updated velocity V_new is not "
                     "computed; it must not be used");
    SmallVector<Value> operands = {inputs->groups[0][i], inputs->groups[1][i],
                                   inputs->learningRate, inputs->step};
    if (hasBuffer)
      operands.push_back(inputs->groups[2][i]);
    auto op =
        n.createOp(graph::SgdUpdateOp::getOperationName(), operands, attrs);
    if (failed(op))
      return failure();
    setGroupedOutputs(n, *op, inputs->count, i);
  }
  return success();
}

} // namespace

std::string handlerKey(const onnx::NodeProto &node) {
  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  return defaultDomain ? node.op_type() : node.domain() + "::" + node.op_type();
}

void registerTrainingHandlers(HandlerTable &table) {
  std::string prefix = std::string(kTrainingDomain) + "::";
  table[prefix + "Adam"] = importAdam;
  table[prefix + "Adagrad"] = importAdagrad;
  table[prefix + "Momentum"] = importMomentum;
}

} // namespace trainc::import
