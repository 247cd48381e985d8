//===- ImportCommand.cpp - `trainc import` and what commands share --------===//
#include "tools/trainc/Commands.h"

#include "lib/Runtime/FileWrite.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace trainc::cli {

void addModelOptions(CLI::App &command, ModelOptions &options) {
  command.add_option("model", options.model, "The ONNX model file")
      ->required()
      ->check(CLI::ExistingFile);
  command
      .add_option("--batch", options.batch,
                  "Batch size bound to the model's batch dimension (default: "
                  "the model's static batch size, or 1 if it is symbolic)")
      ->check(positive());
  command.add_option("--freeze", options.freeze,
                     "Regular expression: matching floating-point "
                     "initializers become constants, not parameters");
  addTrainBatchNormFlag(command, options);
}

void addTrainBatchNormFlag(CLI::App &command, ModelOptions &options) {
  command.add_flag(
      "--train-batch-norm", options.trainBatchNorm,
      "Train every BatchNormalization with batch statistics, as PyTorch's "
      "train() mode does, also those written in inference form "
      "(training_mode 0, as torch.onnx.export(dynamo=True) writes them)");
}

void addImportCommand(CLI::App &command, ImportCommandOptions &options) {
  addModelOptions(command, options.model);
  command.add_option("-o,--output", options.output,
                     "Where to write the IR ('-' for stdout)")
      ->capture_default_str();
  command.add_flag("--no-canonicalize", options.noCanonicalize,
                   "Print the IR exactly as imported, before folding");
  command.add_flag("--print-locations", options.printLocations,
                   "Print each op's location (its ONNX node name)");
}

std::string writeFileAtomically(const std::string &path,
                                const std::string &contents) {
  if (path == "-") {
    llvm::outs() << contents;
    llvm::outs().flush();
    return "";
  }
  return rt::writeFileAtomically(path, contents);
}

namespace {
CLI::Validator numberAtLeast(bool strict, const char *name) {
  return CLI::Validator(
      [strict](std::string &text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value))
          return "must be a number, got '" + text + "'";
        if (strict ? value > 0 : value >= 0)
          return "";
        return std::string("must be ") +
               (strict ? "positive" : "zero or more") + ", got '" + text + "'";
      },
      name);
}
} // namespace

CLI::Validator positive() { return numberAtLeast(true, "POSITIVE"); }
CLI::Validator nonNegative() { return numberAtLeast(false, "NONNEGATIVE"); }

std::string overwritesInput(const std::string &output,
                            const std::vector<std::string> &inputs) {
  struct stat out;
  if (output == "-" || ::stat(output.c_str(), &out) != 0)
    return "";
  for (const std::string &input : inputs) {
    struct stat in;
    if (!input.empty() && ::stat(input.c_str(), &in) == 0 &&
        in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      return "refusing to write '" + output + "': it is the input '" + input +
             "'";
  }
  return "";
}

std::optional<ImportedModel> importModel(mlir::MLIRContext &context,
                                         const ModelOptions &options,
                                         bool canonicalize) {
  ImportOptions importOptions;
  if (options.batch)
    importOptions.batchSize = *options.batch;
  importOptions.freezePattern = options.freeze;
  importOptions.trainBatchNorm = options.trainBatchNorm;
  importOptions.canonicalize = canonicalize;
  auto imported = importOnnxFile(context, options.model, importOptions);
  if (!imported) {
    spdlog::error("{}", llvm::toString(imported.takeError()));
    return std::nullopt;
  }
  for (const std::string &warning : imported->warnings)
    spdlog::warn("{}: {}", options.model, warning);
  size_t parameterBytes = 0;
  for (const auto &[name, weight] : imported->weights)
    parameterBytes += weight.bytes.size();
  spdlog::info("{}: {} initializers ({} bytes) kept out of the IR",
               options.model, imported->weights.size(), parameterBytes);
  return std::move(*imported);
}

int writeIR(mlir::Operation *op, const std::string &path, bool printLocations) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  mlir::OpPrintingFlags flags;
  if (printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  op->print(stream, flags);
  stream << "\n";
  stream.flush();
  std::string error = writeFileAtomically(path, text);
  if (!error.empty()) {
    spdlog::error("{}", error);
    return 1;
  }
  return 0;
}

int runImportCommand(const ImportCommandOptions &options) {
  if (std::string error =
          overwritesInput(options.output, {options.model.model});
      !error.empty()) {
    spdlog::error("{}", error);
    return 1;
  }
  mlir::MLIRContext context;
  auto imported = importModel(context, options.model, !options.noCanonicalize);
  if (!imported)
    return 1;
  return writeIR(*imported->module, options.output, options.printLocations);
}

} // namespace trainc::cli
