//===- Commands.h - trainc subcommands -------------------------*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_COMMANDS_H
#define TRAINC_TOOLS_TRAINC_COMMANDS_H

#include "pipelines/TrainingPipeline.h"
#include "trainc/Import.h"

#include <optional>
#include <string>

namespace CLI {
class App;
} // namespace CLI

namespace mlir {
class MLIRContext;
} // namespace mlir

namespace trainc::cli {

/// Options every command that reads a model shares.
struct ModelOptions {
  std::string model;
  std::optional<long long> batch;
  std::string freeze;
};

struct ImportCommandOptions {
  ModelOptions model;
  std::string output = "-";
  bool noCanonicalize = false;
  bool printLocations = false;
};

struct CompileCommandOptions {
  ModelOptions model;
  std::string output = "-";
  std::string emit = "train-graph";
  bool printLocations = false;
  TrainingPipelineOptions training;
};

void addModelOptions(CLI::App &command, ModelOptions &options);
void addImportCommand(CLI::App &command, ImportCommandOptions &options);
void addCompileCommand(CLI::App &command, CompileCommandOptions &options);
int runImportCommand(const ImportCommandOptions &options);
int runCompileCommand(const CompileCommandOptions &options);

/// Imports `options.model`, logging warnings; nullopt (after logging the
/// error) on failure.
std::optional<ImportedModel> importModel(mlir::MLIRContext &context,
                                         const ModelOptions &options,
                                         bool canonicalize = true);

/// Prints `op` (with locations if asked) to `path` atomically.
int writeIR(mlir::Operation *op, const std::string &path, bool printLocations);

/// Writes `contents` to `path` atomically ("-" is stdout). Returns an
/// error message, or an empty string on success.
std::string writeFileAtomically(const std::string &path,
                                const std::string &contents);

} // namespace trainc::cli

#endif // TRAINC_TOOLS_TRAINC_COMMANDS_H
