//===- Autodiff.h - building the training functions -----------*- C++ -*-===//
//
// Shared by the autodiff pass (Autodiff.cpp: @gradients, the reverse sweep)
// and TrainingFunctions.cpp (@train_step, @eval, option checking).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_GRAPH_TRANSFORMS_AUTODIFF_H
#define TRAINC_DIALECTS_GRAPH_TRANSFORMS_AUTODIFF_H

#include "dialects/graph/GradientBuilder.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace trainc::graph {

struct LossOptions {
  std::string kind = "auto"; ///< resolved: softmax-cross-entropy, nll, ...
  std::string reduction = "mean";
  double labelSmoothing = 0.0;
  int64_t ignoreIndex = -100;
  /// One weight per @forward output: the loss is the weighted sum of the
  /// loss on each output, against the same labels (torchvision trains
  /// Inception-v3 with 1, 0.4: its logits and its auxiliary head). Empty
  /// for a model of one output (weight 1). An output of weight 0 is not
  /// trained (its own parameters get no gradient), but still computed.
  llvm::SmallVector<double> outputWeights;
};

struct TrainingOptions {
  LossOptions loss;
  std::string optimizer = "sgd";
  double learningRate = 0.01;
  double momentum = 0.0, dampening = 0.0;
  bool nesterov = false;
  double weightDecay = -1.0; ///< negative: the optimizer's default
  double beta1 = 0.9, beta2 = 0.999;
  double epsilon = -1.0; ///< negative: the optimizer's default
  double lrDecay = 0.0;
  double clipGradNorm = 0.0;
  /// Dynamic loss scaling (LossScaling.cpp): "none" or "dynamic".
  std::string lossScaling = "none";
  double initialLossScale = 65536.0;
  int64_t lossScaleGrowthInterval = 2000;
  /// Average every gradient over the processes of a data-parallel job
  /// (graph.all_reduce) before clipping, unscaling and the optimizer.
  bool dataParallel = false;
};

/// What buildGradientFunction produced and where things are.
struct GradientFunction {
  mlir::func::FuncOp function;
  std::optional<unsigned> labelsIndex;
  unsigned stepIndex = 0, seedIndex = 0;
  /// @forward argument indices of the parameters (gradient results 1..P, in
  /// this order) and whether the loss depends on each.
  llvm::SmallVector<unsigned> parameters;
  llvm::SmallVector<bool> hasGradient;
  /// @forward argument indices of the state (results after the gradients).
  llvm::SmallVector<unsigned> states;
  /// With dynamic loss scaling: the argument the reverse sweep starts from
  /// (d loss * scale / d loss), so that every gradient comes out scaled.
  std::optional<unsigned> lossScaleIndex;
};

/// Validates the options and fills in defaults (loss "auto", optimizer
/// defaults for weight decay and epsilon). Errors are emitted on `forward`.
mlir::LogicalResult resolveTrainingOptions(mlir::func::FuncOp forward,
                                           TrainingOptions &options);

/// Builds @gradients (see the pass description in Passes.td); with
/// `scaledLoss`, it takes a `loss_scale` argument and returns gradients of
/// the loss times it.
mlir::FailureOr<GradientFunction>
buildGradientFunction(mlir::ModuleOp module, mlir::func::FuncOp forward,
                      const LossOptions &options, bool scaledLoss = false);

/// The dynamic loss scaler of @train_step (LossScaling.cpp): where its
/// three optimizer-state arguments are.
struct LossScaler {
  unsigned scaleIndex = 0, goodStepsIndex = 0, skippedStepsIndex = 0;
};

/// Appends the scaler's state arguments: `amp.loss_scale` (f32, starting
/// at the initial scale: attribute graph.initial_value), `amp.good_steps`
/// and `amp.skipped_steps` (i64, from 0).
LossScaler
addLossScalerArguments(mlir::OpBuilder &b, const TrainingOptions &options,
                       llvm::SmallVectorImpl<mlir::Type> &types,
                       llvm::SmallVectorImpl<mlir::Attribute> &attrs);

/// Divides the (scaled) gradients by `scale` in place and returns whether
/// all of them are finite (tensor<i1>).
mlir::Value unscaleGradients(GradientBuilder &math, mlir::Value scale,
                             llvm::SmallVectorImpl<mlir::Value> &gradients);

/// The scaler's new state (scale, good steps, skipped steps) after a step
/// whose gradients were `finite` or not, as torch.cuda.amp.GradScaler
/// updates it: x0.5 after a non-finite step, x2 after growth-interval
/// finite steps in a row.
llvm::SmallVector<mlir::Value>
updateLossScaler(GradientBuilder &math, const TrainingOptions &options,
                 mlir::Value finite, mlir::Value scale, mlir::Value goodSteps,
                 mlir::Value skippedSteps);

/// Builds @gradients, @train_step and @eval.
mlir::LogicalResult buildTrainingFunctions(mlir::ModuleOp module,
                                           mlir::func::FuncOp forward,
                                           const TrainingOptions &options);

/// The labels' type for `options` given the model's output (null Type for
/// --loss=model, which needs none).
mlir::FailureOr<mlir::Type> labelType(mlir::Value output,
                                      const LossOptions &options,
                                      std::string &error);

llvm::StringRef argumentRole(mlir::func::FuncOp function, unsigned index);
llvm::StringRef argumentName(mlir::func::FuncOp function, unsigned index);
/// {graph.name, graph.role[, graph.updates]} for an argument or result.
mlir::DictionaryAttr describeValue(mlir::OpBuilder &b, llvm::StringRef name,
                                   llvm::StringRef role,
                                   std::optional<int64_t> updates);

} // namespace trainc::graph

#endif // TRAINC_DIALECTS_GRAPH_TRANSFORMS_AUTODIFF_H
