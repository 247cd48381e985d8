//===- CompileCommand.cpp - `trainc compile` ------------------------------===//
//
// Runs the training pipeline on an imported model. Today it emits IR
// (--emit=graph | train-graph); the shared object comes with the code
// generator.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

namespace trainc::cli {

void addCompileCommand(CLI::App &command, CompileCommandOptions &options) {
  addModelOptions(command, options.model);
  TrainingPipelineOptions &t = options.training;
  command.add_option("-o,--output", options.output,
                     "Where to write the result ('-' for stdout)")
      ->capture_default_str();
  command.add_option("--emit", options.emit,
                     "What to produce: graph (the imported @forward) or "
                     "train-graph (@gradients, @train_step, @eval)")
      ->check(CLI::IsMember({"graph", "train-graph"}))
      ->capture_default_str();
  command.add_flag("--print-locations", options.printLocations,
                   "Print each op's location (its ONNX node name)");

  auto *loss = command.add_option_group("Loss");
  loss->add_option("--loss", t.loss,
                   "auto (the model's scalar output if it has one, else "
                   "softmax-cross-entropy), softmax-cross-entropy, nll, mse, "
                   "l1, bce-with-logits or model")
      ->check(CLI::IsMember({"auto", "softmax-cross-entropy", "nll", "mse",
                             "l1", "bce-with-logits", "model"}))
      ->capture_default_str();
  loss->add_option("--reduction", t.reduction, "mean or sum")
      ->check(CLI::IsMember({"mean", "sum"}))
      ->capture_default_str();
  loss->add_option("--label-smoothing", t.labelSmoothing,
                   "Label smoothing of softmax-cross-entropy")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  loss->add_option("--ignore-index", t.ignoreIndex,
                   "Class label that contributes no loss")
      ->capture_default_str();

  auto *optimizer = command.add_option_group("Optimizer");
  optimizer->add_option("--optimizer", t.optimizer, "sgd, adam, adamw or adagrad")
      ->check(CLI::IsMember({"sgd", "adam", "adamw", "adagrad"}))
      ->capture_default_str();
  optimizer->add_option("--lr", t.learningRate,
                        "Learning rate (the runtime can change it per step)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  optimizer->add_option("--momentum", t.momentum, "SGD momentum")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  optimizer->add_option("--dampening", t.dampening, "SGD dampening")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  optimizer->add_flag("--nesterov", t.nesterov, "SGD with Nesterov momentum");
  optimizer->add_option("--weight-decay", t.weightDecay,
                        "Weight decay (default: 0.01 for adamw, else 0)");
  optimizer->add_option("--beta1", t.beta1, "Adam/AdamW beta1")
      ->capture_default_str();
  optimizer->add_option("--beta2", t.beta2, "Adam/AdamW beta2")
      ->capture_default_str();
  optimizer->add_option("--epsilon", t.epsilon,
                        "Epsilon (default: 1e-8 for adam/adamw, 1e-10 for "
                        "adagrad)");
  optimizer->add_option("--lr-decay", t.lrDecay, "Adagrad learning-rate decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  optimizer->add_option("--clip-grad-norm", t.clipGradNorm,
                        "Clip gradients to this global L2 norm (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

int runCompileCommand(const CompileCommandOptions &options) {
  mlir::MLIRContext context;
  auto imported = importModel(context, options.model);
  if (!imported)
    return 1;
  mlir::ModuleOp module = *imported->module;
  if (options.emit == "graph")
    return writeIR(module, options.output, options.printLocations);

  // Pass diagnostics become one "trainc: error:" line each.
  bool failed = false;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
      spdlog::error("{}: {}", options.model.model, d.str());
      failed = true;
    }
    return mlir::success();
  });
  mlir::PassManager pm(&context);
  buildTrainingPipeline(pm, options.training);
  if (mlir::failed(pm.run(module)) || failed) {
    if (!failed)
      spdlog::error("{}: the training pipeline failed", options.model.model);
    return 1;
  }
  return writeIR(module, options.output, options.printLocations);
}

} // namespace trainc::cli
