//===- TrainingFunctions.cpp - @train_step and @eval around @gradients ----===//
#include "dialects/graph/GradientBuilder.h"
#include "dialects/graph/Transforms/Autodiff.h"

#include "mlir/IR/IRMapping.h"

#include <cmath>

using namespace mlir;

namespace trainc::graph {

/// "'logits', 'aux1'": @forward's output names, for messages.
static std::string outputNames(func::FuncOp forward) {
  std::string names;
  for (unsigned i = 0; i < forward.getNumResults(); ++i) {
    auto name = forward.getResultAttrOfType<StringAttr>(i, kNameAttrName);
    names += (i ? ", '" : "'") +
             (name ? name.getValue().str() : "#" + std::to_string(i)) + "'";
  }
  return names;
}

/// One finite, non-negative loss weight per output, one of them positive;
/// none is needed for a model of one output.
static LogicalResult checkOutputWeights(func::FuncOp forward,
                                        ArrayRef<double> weights) {
  unsigned outputs = forward.getNumResults();
  if (weights.empty() && outputs > 1)
    return forward.emitError("the model has ")
           << outputs << " outputs (" << outputNames(forward)
           << "); training needs one loss: give the weight of each "
              "output's loss (--output-weights, e.g. 1,0.4 for torchvision's "
              "Inception-v3 and its auxiliary head; 0 leaves an output out)";
  if (!weights.empty() && weights.size() != outputs)
    return forward.emitError("--output-weights has ")
           << weights.size() << " weight" << (weights.size() == 1 ? "" : "s")
           << ", the model " << outputs << " output"
           << (outputs == 1 ? "" : "s") << " (" << outputNames(forward) << ")";
  for (double weight : weights)
    if (!(weight >= 0.0) || !std::isfinite(weight))
      return forward.emitError("the output weights must be finite and >= 0, "
                               "not ")
             << weight;
  if (!weights.empty() &&
      llvm::all_of(weights, [](double w) { return w == 0; }))
    return forward.emitError("every output weight is 0: nothing to train");
  return success();
}

LogicalResult resolveTrainingOptions(func::FuncOp forward,
                                     TrainingOptions &options) {
  LossOptions &loss = options.loss;
  if (failed(checkOutputWeights(forward, loss.outputWeights)))
    return failure();
  if (loss.kind == "auto") {
    // The first output's kind: a scalar is the model's own loss.
    auto output = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    auto type = output.getNumOperands() >= 1
                    ? dyn_cast<RankedTensorType>(output.getOperand(0).getType())
                    : RankedTensorType();
    loss.kind = type && type.getRank() == 0 ? "model" : "softmax-cross-entropy";
  }
  static const char *losses[] = {"softmax-cross-entropy", "nll", "mse", "l1",
                                 "bce-with-logits", "model"};
  if (!llvm::is_contained(losses, loss.kind))
    return forward.emitError("unknown loss '")
           << loss.kind
           << "' (softmax-cross-entropy, nll, mse, l1, bce-with-logits, model)";
  if (loss.reduction != "mean" && loss.reduction != "sum")
    return forward.emitError("unknown reduction '")
           << loss.reduction << "' (mean, sum)";
  if (loss.labelSmoothing < 0.0 || loss.labelSmoothing > 1.0)
    return forward.emitError("label smoothing must be in [0, 1]");

  static const char *optimizers[] = {"sgd", "adam", "adamw", "adagrad"};
  if (!llvm::is_contained(optimizers, options.optimizer))
    return forward.emitError("unknown optimizer '")
           << options.optimizer << "' (sgd, adam, adamw, adagrad)";
  if (options.lossScaling != "none" && options.lossScaling != "dynamic")
    return forward.emitError("unknown loss scaling '")
           << options.lossScaling << "' (none, dynamic)";
  if (!(options.initialLossScale > 0.0) ||
      !std::isfinite(options.initialLossScale))
    return forward.emitError("the initial loss scale must be a positive "
                             "finite number, not ")
           << options.initialLossScale;
  if (options.lossScaleGrowthInterval < 1)
    return forward.emitError("the loss scale growth interval must be at "
                             "least 1, not ")
           << options.lossScaleGrowthInterval;
  if (options.weightDecay < 0.0)
    options.weightDecay = options.optimizer == "adamw" ? 0.01 : 0.0;
  if (options.epsilon < 0.0)
    options.epsilon = options.optimizer == "adagrad" ? 1e-10 : 1e-8;
  if (options.learningRate <= 0.0)
    return forward.emitError("the learning rate must be positive");
  if (options.momentum < 0.0 || options.dampening < 0.0 ||
      options.clipGradNorm < 0.0 || options.lrDecay < 0.0)
    return forward.emitError(
        "momentum, dampening, lr-decay and clip-grad-norm must be >= 0");
  if (options.nesterov && (options.momentum <= 0.0 || options.dampening != 0.0))
    return forward.emitError(
        "Nesterov momentum needs a positive momentum and zero dampening");
  if (options.optimizer != "sgd" &&
      (options.momentum != 0.0 || options.nesterov || options.dampening != 0.0))
    return forward.emitError("momentum, dampening and nesterov apply to sgd only");
  if (options.beta1 < 0.0 || options.beta1 >= 1.0 || options.beta2 < 0.0 ||
      options.beta2 >= 1.0)
    return forward.emitError("beta1 and beta2 must be in [0, 1)");
  return success();
}

/// Names of the optimizer state slots one parameter needs.
static SmallVector<StringRef, 2> stateSlots(const TrainingOptions &options) {
  if (options.optimizer == "sgd")
    return options.momentum != 0.0 ? SmallVector<StringRef, 2>{"momentum_buffer"}
                                   : SmallVector<StringRef, 2>{};
  if (options.optimizer == "adagrad")
    return {"sum"};
  return {"exp_avg", "exp_avg_sq"};
}

/// Scales every gradient by min(1, max_norm / (global L2 norm + 1e-6)), as
/// torch.nn.utils.clip_grad_norm_ does.
static void clipByGlobalNorm(GradientBuilder &math,
                             SmallVectorImpl<Value> &gradients, double maxNorm) {
  Value total;
  for (Value g : gradients) {
    if (!g)
      continue;
    Value squares = math.sumAll(math.mul(g, g));
    total = total ? math.add(total, squares) : squares;
  }
  if (!total)
    return;
  Value norm = math.sqrt(total);
  Value coefficient =
      math.div(math.scalar(maxNorm, norm), math.add(norm, math.scalar(1e-6, norm)));
  coefficient = ClipOp::create(math.builder(), math.location(), coefficient,
                               FloatAttr(), math.builder().getF64FloatAttr(1.0));
  for (Value &g : gradients)
    if (g)
      g = math.mul(g, math.cast(coefficient, getElementTypeOrSelf(g.getType())));
}

/// One optimizer update op; returns the new parameter and new state.
static SmallVector<Value> applyOptimizer(OpBuilder &b, Location loc,
                                         const TrainingOptions &options,
                                         Value parameter, Value gradient,
                                         ValueRange state, Value learningRate,
                                         Value step) {
  SmallVector<Value> operands = {parameter, gradient};
  SmallVector<NamedAttribute> attrs;
  auto f64 = [&](StringRef name, double value) {
    attrs.push_back(b.getNamedAttr(name, b.getF64FloatAttr(value)));
  };
  Operation *update;
  if (options.optimizer == "sgd") {
    operands.append({learningRate, step});
    llvm::append_range(operands, state);
    f64("momentum", options.momentum);
    f64("dampening", options.dampening);
    f64("weight_decay", options.weightDecay);
    attrs.push_back(b.getNamedAttr("nesterov", b.getBoolAttr(options.nesterov)));
    update = SgdUpdateOp::create(b, loc, operands, attrs);
  } else if (options.optimizer == "adagrad") {
    llvm::append_range(operands, state);
    operands.append({learningRate, step});
    f64("lr_decay", options.lrDecay);
    f64("epsilon", options.epsilon);
    f64("weight_decay", options.weightDecay);
    update = AdagradUpdateOp::create(b, loc, operands, attrs);
  } else {
    llvm::append_range(operands, state);
    operands.append({learningRate, step});
    f64("beta1", options.beta1);
    f64("beta2", options.beta2);
    f64("epsilon", options.epsilon);
    f64("weight_decay", options.weightDecay);
    attrs.push_back(b.getNamedAttr("decoupled",
                                   b.getBoolAttr(options.optimizer == "adamw")));
    update = AdamUpdateOp::create(b, loc, operands, attrs);
  }
  return SmallVector<Value>(update->getResults());
}

static LogicalResult buildTrainStep(ModuleOp module, func::FuncOp forward,
                                    const GradientFunction &gradients,
                                    const TrainingOptions &options) {
  OpBuilder b(module.getContext());
  Location loc = forward.getLoc();
  func::FuncOp gradientFunction = gradients.function;
  SmallVector<StringRef, 2> slots = stateSlots(options);

  // Arguments: @forward's, labels, optimizer state, step, seed, learning rate.
  SmallVector<Type> argTypes(forward.getArgumentTypes());
  SmallVector<Attribute> argAttrs;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i)
    argAttrs.push_back(gradientFunction.getArgAttrDict(i));
  if (gradients.labelsIndex) {
    argTypes.push_back(gradientFunction.getArgumentTypes()[*gradients.labelsIndex]);
    argAttrs.push_back(gradientFunction.getArgAttrDict(*gradients.labelsIndex));
  }
  // Optimizer state, per parameter that gets a gradient.
  SmallVector<SmallVector<unsigned, 2>> stateArgs(gradients.parameters.size());
  for (auto [k, parameterIndex] : llvm::enumerate(gradients.parameters)) {
    if (!gradients.hasGradient[k])
      continue;
    for (StringRef slot : slots) {
      stateArgs[k].push_back(argTypes.size());
      argTypes.push_back(forward.getArgumentTypes()[parameterIndex]);
      argAttrs.push_back(describeValue(
          b, (argumentName(forward, parameterIndex) + "." + slot).str(),
          kRoleOptimizerState, std::nullopt));
    }
  }
  unsigned stepIndex = argTypes.size();
  argTypes.push_back(gradientFunction.getArgumentTypes()[gradients.stepIndex]);
  argAttrs.push_back(gradientFunction.getArgAttrDict(gradients.stepIndex));
  unsigned seedIndex = argTypes.size();
  argTypes.push_back(gradientFunction.getArgumentTypes()[gradients.seedIndex]);
  argAttrs.push_back(gradientFunction.getArgAttrDict(gradients.seedIndex));
  Type parameterElement = b.getF32Type();
  if (!gradients.parameters.empty())
    parameterElement = getElementTypeOrSelf(
        forward.getArgumentTypes()[gradients.parameters.front()]);
  unsigned learningRateIndex = argTypes.size();
  argTypes.push_back(RankedTensorType::get({}, parameterElement));
  argAttrs.push_back(
      describeValue(b, "learning_rate", kRoleLearningRate, std::nullopt));
  std::optional<LossScaler> scaler;
  if (gradients.lossScaleIndex)
    scaler = addLossScalerArguments(b, options, argTypes, argAttrs);

  b.setInsertionPointToEnd(module.getBody());
  auto function = func::FuncOp::create(b, loc, "train_step",
                                       b.getFunctionType(argTypes, {}));
  function.setAllArgAttrs(argAttrs);
  Block *block = function.addEntryBlock();
  b.setInsertionPointToStart(block);
  GradientBuilder math(b, loc);
  Value step = block->getArgument(stepIndex);
  Value learningRate = block->getArgument(learningRateIndex);

  SmallVector<Value> callOperands(block->getArguments().take_front(
      forward.getNumArguments()));
  if (gradients.labelsIndex)
    callOperands.push_back(block->getArgument(forward.getNumArguments()));
  callOperands.push_back(step);
  callOperands.push_back(block->getArgument(seedIndex));
  if (scaler)
    callOperands.push_back(block->getArgument(scaler->scaleIndex));
  auto call = func::CallOp::create(b, loc, gradientFunction, callOperands);

  size_t parameterCount = gradients.parameters.size();
  SmallVector<Value> grads;
  for (size_t k = 0; k < parameterCount; ++k)
    grads.push_back(gradients.hasGradient[k] ? call.getResult(1 + k) : Value());
  // Averaged over the job first: clipping, the loss scaler's finiteness
  // test and the updates then see the same gradients on every process.
  if (options.dataParallel)
    for (Value &g : grads)
      if (g)
        g = AllReduceOp::create(b, loc, g);
  // Unscaled before clipping, which reads their true norm.
  Value finite;
  if (scaler)
    finite =
        unscaleGradients(math, block->getArgument(scaler->scaleIndex), grads);
  if (options.clipGradNorm > 0.0)
    clipByGlobalNorm(math, grads, options.clipGradNorm);

  // Updates; results follow @forward's argument order, then optimizer
  // state, then the step.
  DenseMap<unsigned, Value> updated;
  SmallVector<Value> newOptimizerState;
  for (auto [k, parameterIndex] : llvm::enumerate(gradients.parameters)) {
    if (!grads[k])
      continue;
    SmallVector<Value> state;
    for (unsigned arg : stateArgs[k])
      state.push_back(block->getArgument(arg));
    SmallVector<Value> results =
        applyOptimizer(b, loc, options, block->getArgument(parameterIndex),
                       grads[k], state, learningRate, step);
    // A step with a non-finite gradient leaves parameter and state as
    // they were.
    if (finite) {
      results.front() = math.where(finite, results.front(),
                                   block->getArgument(parameterIndex));
      for (auto [result, old] :
           llvm::zip(MutableArrayRef(results).drop_front(), state))
        result = math.where(finite, result, old);
    }
    updated[parameterIndex] = results.front();
    llvm::append_range(newOptimizerState, ArrayRef(results).drop_front());
  }
  for (auto [k, stateIndex] : llvm::enumerate(gradients.states))
    updated[stateIndex] = call.getResult(1 + parameterCount + k);

  SmallVector<Value> results = {call.getResult(0)};
  SmallVector<Attribute> resultAttrs = {
      describeValue(b, "loss", kRoleLoss, std::nullopt)};
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    StringRef role = argumentRole(forward, i);
    if (role != kRoleParameter && role != kRoleState)
      continue;
    Value value = updated.lookup(i);
    results.push_back(value ? value : block->getArgument(i));
    resultAttrs.push_back(describeValue(b, argumentName(forward, i), role, i));
  }
  unsigned stateResult = 0;
  for (auto [k, args] : llvm::enumerate(stateArgs))
    for (unsigned arg : args) {
      results.push_back(newOptimizerState[stateResult++]);
      resultAttrs.push_back(describeValue(
          b, cast<StringAttr>(function.getArgAttrDict(arg).get(kNameAttrName))
                 .getValue(),
          kRoleOptimizerState, arg));
    }
  if (scaler) {
    SmallVector<Value> scalerState = updateLossScaler(
        math, options, finite, block->getArgument(scaler->scaleIndex),
        block->getArgument(scaler->goodStepsIndex),
        block->getArgument(scaler->skippedStepsIndex));
    unsigned scalerArgs[] = {scaler->scaleIndex, scaler->goodStepsIndex,
                             scaler->skippedStepsIndex};
    for (auto [value, arg] : llvm::zip(scalerState, scalerArgs)) {
      results.push_back(value);
      resultAttrs.push_back(describeValue(
          b,
          cast<StringAttr>(function.getArgAttrDict(arg).get(kNameAttrName))
              .getValue(),
          kRoleOptimizerState, arg));
    }
  }
  // A skipped step is not counted (Adam's bias correction reads it).
  Value nextStep = math.add(step, math.scalar(1, step));
  results.push_back(finite ? math.where(finite, nextStep, step) : nextStep);
  resultAttrs.push_back(describeValue(b, "step", kRoleStep, stepIndex));
  func::ReturnOp::create(b, loc, results);
  function.setFunctionType(
      b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  function.setAllResultAttrs(resultAttrs);
  return success();
}

/// @eval: @forward with BatchNorm on running statistics and no dropout.
static void buildEval(ModuleOp module, func::FuncOp forward) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto function = cast<func::FuncOp>(b.clone(*forward));
  function.setSymName("eval");
  function.walk([&](Operation *op) {
    b.setInsertionPoint(op);
    if (auto dropout = dyn_cast<DropoutOp>(op)) {
      dropout.replaceAllUsesWith(dropout.getInput());
      dropout.erase();
    } else if (auto norm = dyn_cast<BatchNormTrainingOp>(op)) {
      Value output = BatchNormInferenceOp::create(
          b, norm.getLoc(), norm.getInput(), norm.getScale(), norm.getBias(),
          norm.getRunningMean(), norm.getRunningVar(), norm.getEpsilonAttr());
      norm.getOutput().replaceAllUsesWith(output);
      norm.getNewRunningMean().replaceAllUsesWith(norm.getRunningMean());
      norm.getNewRunningVar().replaceAllUsesWith(norm.getRunningVar());
      norm.erase();
    }
  });
}

LogicalResult buildTrainingFunctions(ModuleOp module, func::FuncOp forward,
                                     const TrainingOptions &options) {
  auto gradients = buildGradientFunction(module, forward, options.loss,
                                         options.lossScaling == "dynamic");
  if (failed(gradients))
    return failure();
  if (failed(buildTrainStep(module, forward, *gradients, options)))
    return failure();
  buildEval(module, forward);

  OpBuilder b(module.getContext());
  SmallVector<NamedAttribute> config = {
      b.getNamedAttr("loss", b.getStringAttr(options.loss.kind)),
      b.getNamedAttr("reduction", b.getStringAttr(options.loss.reduction)),
      b.getNamedAttr("optimizer", b.getStringAttr(options.optimizer)),
      b.getNamedAttr("learning_rate", b.getF64FloatAttr(options.learningRate)),
      b.getNamedAttr("weight_decay", b.getF64FloatAttr(options.weightDecay)),
      b.getNamedAttr("clip_grad_norm", b.getF64FloatAttr(options.clipGradNorm))};
  if (!options.loss.outputWeights.empty())
    config.push_back(b.getNamedAttr(
        "output_weights",
        b.getArrayAttr(llvm::map_to_vector(
            options.loss.outputWeights,
            [&](double w) -> Attribute { return b.getF64FloatAttr(w); }))));
  if (options.dataParallel)
    config.push_back(b.getNamedAttr("data_parallel", b.getBoolAttr(true)));
  if (options.lossScaling != "none")
    config.push_back(
        b.getNamedAttr("loss_scaling", b.getStringAttr(options.lossScaling)));
  module->setAttr("graph.training", b.getDictionaryAttr(config));
  return success();
}

} // namespace trainc::graph
