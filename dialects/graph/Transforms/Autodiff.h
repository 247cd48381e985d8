//===- Autodiff.h - building the training functions -----------*- C++ -*-===//
//
// Shared by the autodiff pass (Autodiff.cpp: @gradients, the reverse sweep)
// and TrainingFunctions.cpp (@train_step, @eval, option checking).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_DIALECTS_GRAPH_TRANSFORMS_AUTODIFF_H
#define TRAINC_DIALECTS_GRAPH_TRANSFORMS_AUTODIFF_H

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
};

/// Validates the options and fills in defaults (loss "auto", optimizer
/// defaults for weight decay and epsilon). Errors are emitted on `forward`.
mlir::LogicalResult resolveTrainingOptions(mlir::func::FuncOp forward,
                                           TrainingOptions &options);

/// Builds @gradients (see the pass description in Passes.td).
mlir::FailureOr<GradientFunction>
buildGradientFunction(mlir::ModuleOp module, mlir::func::FuncOp forward,
                      const LossOptions &options);

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
