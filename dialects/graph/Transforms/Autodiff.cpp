//===- Autodiff.cpp - --trainc-autodiff: @forward to @train_step ----------===//
//
// Reverse-mode automatic differentiation over the graph dialect. The
// forward ops are cloned into @gradients, the loss is appended, and a
// reverse sweep asks every op on the path from a parameter to the loss for
// its operand gradients (GradientOpInterface). @train_step wraps @gradients
// with gradient clipping and the optimizer (TrainingFunctions.cpp builds
// that part and @eval).
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/Transforms/Autodiff.h"
#include "dialects/graph/GradientBuilder.h"
#include "dialects/graph/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace trainc::graph {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "dialects/graph/Transforms/Passes.h.inc"
} // namespace trainc::graph

using namespace mlir;

namespace trainc::graph {

StringRef argumentRole(func::FuncOp function, unsigned index) {
  auto role = function.getArgAttrOfType<StringAttr>(index, kRoleAttrName);
  return role ? role.getValue() : StringRef();
}

StringRef argumentName(func::FuncOp function, unsigned index) {
  auto name = function.getArgAttrOfType<StringAttr>(index, kNameAttrName);
  return name ? name.getValue() : StringRef();
}

DictionaryAttr describeValue(OpBuilder &b, StringRef name, StringRef role,
                             std::optional<int64_t> updates) {
  SmallVector<NamedAttribute, 3> attrs = {
      b.getNamedAttr(kNameAttrName, b.getStringAttr(name)),
      b.getNamedAttr(kRoleAttrName, b.getStringAttr(role))};
  if (updates)
    attrs.push_back(b.getNamedAttr(kUpdatesAttrName, b.getI64IntegerAttr(*updates)));
  return b.getDictionaryAttr(attrs);
}

/// "graph.foo (node 'conv1')" for error messages.
static std::string describeOp(Operation *op) {
  std::string text = op->getName().getStringRef().str();
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc); fused && !fused.getLocations().empty())
    loc = fused.getLocations().front();
  if (auto named = dyn_cast<NameLoc>(loc))
    text += " (node '" + named.getName().str() + "')";
  return text;
}

/// The loss on the model's output and the labels' type.
static FailureOr<Value> buildLoss(OpBuilder &b, Location loc, Value output,
                                  Value labels, const LossOptions &options) {
  SmallVector<NamedAttribute, 3> attrs = {
      b.getNamedAttr("reduction", b.getStringAttr(options.reduction))};
  Operation *loss = nullptr;
  if (options.kind == "model")
    return output;
  if (options.kind == "softmax-cross-entropy") {
    attrs.push_back(b.getNamedAttr("label_smoothing",
                                   b.getF64FloatAttr(options.labelSmoothing)));
    attrs.push_back(b.getNamedAttr("ignore_index",
                                   b.getI64IntegerAttr(options.ignoreIndex)));
    loss = SoftmaxCrossEntropyOp::create(b, loc, ValueRange{output, labels}, attrs);
  } else if (options.kind == "nll") {
    attrs.push_back(b.getNamedAttr("ignore_index",
                                   b.getI64IntegerAttr(options.ignoreIndex)));
    loss = NllLossOp::create(b, loc, ValueRange{output, labels}, attrs);
  } else if (options.kind == "mse") {
    loss = MseLossOp::create(b, loc, ValueRange{output, labels}, attrs);
  } else if (options.kind == "l1") {
    loss = L1LossOp::create(b, loc, ValueRange{output, labels}, attrs);
  } else if (options.kind == "bce-with-logits") {
    loss = BceWithLogitsLossOp::create(b, loc, ValueRange{output, labels}, attrs);
  } else {
    return failure();
  }
  return loss->getResult(0);
}

FailureOr<Type> labelType(Value output, const LossOptions &options,
                          std::string &error) {
  auto type = cast<RankedTensorType>(output.getType());
  if (options.kind == "model") {
    if (type.getRank() != 0 || !isa<FloatType>(type.getElementType())) {
      error = "--loss=model needs a model whose output is a scalar loss";
      return failure();
    }
    return Type();
  }
  if (options.kind == "softmax-cross-entropy" || options.kind == "nll") {
    if (type.getRank() < 2) {
      error = "--loss=" + options.kind +
              " needs an output of shape [N, C, ...] (class scores)";
      return failure();
    }
    SmallVector<int64_t> shape = {type.getDimSize(0)};
    llvm::append_range(shape, type.getShape().drop_front(2));
    return Type(RankedTensorType::get(shape, IntegerType::get(type.getContext(), 64)));
  }
  return Type(type); // mse, l1, bce-with-logits: targets like the output
}

FailureOr<GradientFunction> buildGradientFunction(ModuleOp module,
                                                  func::FuncOp forward,
                                                  const LossOptions &options,
                                                  bool scaledLoss) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = forward.getLoc();
  auto forwardReturn =
      cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  // The outputs the loss reads, with their weights (one output: weight 1).
  SmallVector<std::pair<unsigned, double>> weighted;
  if (options.outputWeights.empty()) {
    if (forwardReturn.getNumOperands() != 1)
      return forward.emitError("@forward has ")
             << forwardReturn.getNumOperands()
             << " outputs and no --output-weights";
    weighted.push_back({0, 1.0});
  }
  for (auto [i, weight] : llvm::enumerate(options.outputWeights))
    if (weight != 0.0)
      weighted.push_back({static_cast<unsigned>(i), weight});

  // One set of labels serves every weighted output.
  std::string error;
  Type labels; // null for --loss=model
  for (auto [i, weight] : weighted) {
    auto type = labelType(forwardReturn.getOperand(i), options, error);
    if (failed(type))
      return forward.emitError(weighted.size() > 1
                                   ? "output " + std::to_string(i) + ": "
                                   : "")
             << error;
    if (i != weighted.front().first && *type != labels)
      return forward.emitError("output ")
             << i << " needs labels of type " << *type << ", output "
             << weighted.front().first << " of type " << labels
             << ": the weighted outputs share one loss and one set of labels";
    labels = *type;
  }

  // Signature: @forward's arguments, then labels, step and seed.
  GradientFunction result;
  SmallVector<Type> argTypes(forward.getArgumentTypes());
  SmallVector<Attribute> argAttrs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    argAttrs.push_back(forward.getArgAttrDict(i) ? forward.getArgAttrDict(i)
                                                 : b.getDictionaryAttr({}));
  auto scalarI64 = RankedTensorType::get({}, b.getI64Type());
  if (labels) {
    result.labelsIndex = argTypes.size();
    argTypes.push_back(labels);
    argAttrs.push_back(describeValue(b, "labels", kRoleLabels, std::nullopt));
  }
  result.stepIndex = argTypes.size();
  argTypes.push_back(scalarI64);
  argAttrs.push_back(describeValue(b, "step", kRoleStep, std::nullopt));
  result.seedIndex = argTypes.size();
  argTypes.push_back(scalarI64);
  argAttrs.push_back(describeValue(b, "seed", kRoleSeed, std::nullopt));
  if (scaledLoss) {
    result.lossScaleIndex = argTypes.size();
    argTypes.push_back(RankedTensorType::get({}, b.getF32Type()));
    argAttrs.push_back(
        describeValue(b, "loss_scale", kRoleLossScale, std::nullopt));
  }

  b.setInsertionPointToEnd(module.getBody());
  auto function = func::FuncOp::create(b, loc, "gradients",
                                       b.getFunctionType(argTypes, {}));
  function.setAllArgAttrs(argAttrs);
  Block *block = function.addEntryBlock();
  IRMapping mapping;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    mapping.map(forward.getArgument(i), block->getArgument(i));
  Value step = block->getArgument(result.stepIndex);
  Value seed = block->getArgument(result.seedIndex);

  // The forward pass; each dropout draws its mask from (seed, step, stream).
  b.setInsertionPointToStart(block);
  int64_t stream = 0;
  for (Operation &op : forward.getBody().front().without_terminator()) {
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      Value input = mapping.lookup(dropout.getInput());
      auto type = cast<RankedTensorType>(input.getType());
      // Masks are drawn in f32 (or f64) and cast for a bf16 or f16 input
      // (--amp), as the mask kernels draw f32.
      Type element = type.getElementType();
      bool low = element.isBF16() || element.isF16();
      Value mask = RandomMaskOp::create(
          b, op.getLoc(), seed, step, b.getDenseI64ArrayAttr(type.getShape()),
          TypeAttr::get(low ? b.getF32Type() : element), dropout.getRatioAttr(),
          b.getI64IntegerAttr(stream++));
      if (low)
        mask = CastOp::create(b, op.getLoc(), mask, element);
      mapping.map(dropout.getResult(), MulOp::create(b, op.getLoc(), input, mask));
      continue;
    }
    b.clone(op, mapping);
  }
  Value labelsValue = result.labelsIndex ? block->getArgument(*result.labelsIndex)
                                         : Value();
  // The loss: sum of weight * (loss on the output), over weighted outputs.
  FailureOr<Value> loss = failure();
  for (auto [i, weight] : weighted) {
    Value output = mapping.lookup(forwardReturn.getOperand(i));
    auto term = buildLoss(b, loc, output, labelsValue, options);
    if (failed(term))
      return forward.emitError("unknown loss '") << options.kind << "'";
    GradientBuilder math(b, loc);
    if (weight != 1.0)
      term = math.mul(*term, math.scalar(weight, *term));
    loss = succeeded(loss) ? math.add(*loss, *term) : *term;
  }

  // Values that depend on a trainable parameter.
  DenseSet<Value> active;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    if (argumentRole(forward, i) == kRoleParameter)
      active.insert(block->getArgument(i));
  SmallVector<Operation *> forwardOps;
  for (Operation &op : *block) {
    forwardOps.push_back(&op);
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return active.contains(v); }))
      for (Value r : op.getResults())
        if (isa<FloatType>(getElementTypeOrSelf(r.getType())))
          active.insert(r);
  }

  // Which ops the reverse sweep will visit: those with a result the loss
  // depends on and an operand that depends on a parameter. Every such op
  // must be differentiable; all that are not are reported together.
  DenseSet<Value> needed = {*loss};
  std::vector<std::string> missing;
  for (Operation *op : llvm::reverse(forwardOps)) {
    if (llvm::none_of(op->getResults(),
                      [&](Value r) { return needed.contains(r); }) ||
        op->hasTrait<OpTrait::NonDifferentiable>())
      continue;
    if (!isa<GradientOpInterface>(op) &&
        llvm::any_of(op->getOperands(),
                     [&](Value v) { return active.contains(v); }))
      missing.push_back(describeOp(op));
    for (Value operand : op->getOperands())
      if (active.contains(operand))
        needed.insert(operand);
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string &entry : missing)
      list += (list.empty() ? "" : ", ") + entry;
    function.erase();
    return forward.emitError("no gradient for ")
           << missing.size() << " op" << (missing.size() > 1 ? "s" : "")
           << " on the path to the loss: " << list;
  }

  // The reverse sweep.
  DenseMap<Value, Value> gradients;
  GradientBuilder math(b, loc);
  b.setInsertionPointToEnd(block);
  // d loss / d loss, or d (loss * scale) / d loss with loss scaling.
  gradients[*loss] =
      result.lossScaleIndex
          ? math.add(math.zeros(loss->getType()),
                     math.cast(block->getArgument(*result.lossScaleIndex),
                               getElementTypeOrSelf(loss->getType())))
          : math.add(math.zeros(loss->getType()), math.scalar(1.0, *loss));
  for (Operation *op : llvm::reverse(forwardOps)) {
    SmallVector<Value> resultGradients;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGradients.push_back(gradients.lookup(r));
      any |= static_cast<bool>(resultGradients.back());
    }
    if (!any || op->hasTrait<OpTrait::NonDifferentiable>() ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return active.contains(v); }))
      continue;
    auto differentiable = cast<GradientOpInterface>(op);
    SmallVector<Value> operandGradients;
    if (failed(differentiable.buildGradients(b, resultGradients,
                                             operandGradients)) ||
        operandGradients.size() != op->getNumOperands())
      return op->emitError("could not build the gradient of ") << describeOp(op);
    for (auto [operand, gradient] :
         llvm::zip(op->getOperands(), operandGradients)) {
      if (!gradient || !active.contains(operand))
        continue;
      Value &accumulated = gradients[operand];
      accumulated = accumulated ? math.add(accumulated, gradient) : gradient;
    }
  }
  // BatchNorm's updated running statistics replace their state arguments.
  DenseMap<Value, Value> newState;
  for (Operation *op : forwardOps)
    if (auto norm = dyn_cast<BatchNormTrainingOp>(op)) {
      newState[norm.getRunningMean()] = norm.getNewRunningMean();
      newState[norm.getRunningVar()] = norm.getNewRunningVar();
    }

  // Results: loss, a gradient per parameter, the state.
  SmallVector<Value> results = {*loss};
  SmallVector<Attribute> resultAttrs = {
      describeValue(b, "loss", kRoleLoss, std::nullopt)};
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (argumentRole(forward, i) != kRoleParameter)
      continue;
    Value parameter = block->getArgument(i);
    Value gradient = gradients.lookup(parameter);
    result.parameters.push_back(i);
    result.hasGradient.push_back(static_cast<bool>(gradient));
    results.push_back(gradient ? gradient : math.zeros(parameter.getType()));
    resultAttrs.push_back(describeValue(
        b, (argumentName(forward, i) + ".grad").str(), kRoleGradient, std::nullopt));
  }
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    if (argumentRole(forward, i) != kRoleState)
      continue;
    Value state = block->getArgument(i);
    Value updated = newState.lookup(state);
    result.states.push_back(i);
    results.push_back(updated ? updated : state);
    resultAttrs.push_back(
        describeValue(b, argumentName(forward, i), kRoleState, i));
  }
  func::ReturnOp::create(b, loc, results);
  function.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  function.setAllResultAttrs(resultAttrs);
  result.function = function;
  return result;
}

} // namespace trainc::graph

namespace {
using namespace trainc::graph;

struct AutodiffPass : trainc::graph::impl::AutodiffPassBase<AutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("--trainc-autodiff needs a function @forward");
      return signalPassFailure();
    }
    for (StringRef name : {"gradients", "train_step", "eval"})
      if (module.lookupSymbol(name)) {
        module.emitError("the module already has @") << name;
        return signalPassFailure();
      }

    TrainingOptions options;
    options.loss.kind = loss;
    options.loss.reduction = reduction;
    options.loss.labelSmoothing = labelSmoothing;
    options.loss.ignoreIndex = ignoreIndex;
    options.loss.outputWeights.assign(outputWeights.begin(),
                                      outputWeights.end());
    options.optimizer = optimizer;
    options.learningRate = learningRate;
    options.momentum = momentum;
    options.dampening = dampening;
    options.nesterov = nesterov;
    options.weightDecay = weightDecay;
    options.beta1 = beta1;
    options.beta2 = beta2;
    options.epsilon = epsilon;
    options.lrDecay = lrDecay;
    options.clipGradNorm = clipGradNorm;
    options.lossScaling = lossScaling;
    options.initialLossScale = initialLossScale;
    options.lossScaleGrowthInterval = lossScaleGrowthInterval;
    options.dataParallel = dataParallel;
    if (failed(resolveTrainingOptions(forward, options)) ||
        failed(buildTrainingFunctions(module, forward, options)))
      return signalPassFailure();
  }
};

} // namespace
