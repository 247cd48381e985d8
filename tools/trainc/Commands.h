//===- Commands.h - trainc subcommands -------------------------*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_COMMANDS_H
#define TRAINC_TOOLS_TRAINC_COMMANDS_H

#include "pipelines/TrainingPipeline.h"
#include "trainc/Import.h"
#include "trainc/runtime.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <set>
#include <string>
#include <vector>

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
  bool trainBatchNorm = false;
};

struct ImportCommandOptions {
  ModelOptions model;
  std::string output = "-";
  bool noCanonicalize = false;
  bool printLocations = false;
};

struct CompileCommandOptions {
  ModelOptions model;
  std::string output; ///< default: libNAME.so, or "-" for IR
  std::string emit = "so";
  bool printLocations = false;
  bool stats = false;
  /// --timing: print where the compile's time goes (import, each MLIR
  /// pass, LLVM's optimization and code generation, linking).
  bool timing = false;
  /// --compile-threads: threads compiling the generated kernels (0: all).
  unsigned compileThreads = 0;
  /// --profile: also build a library that times every kernel, train it for
  /// `profileSteps` steps on `profileThreads` threads and print where the
  /// time goes.
  bool profile = false;
  int profileSteps = 20;
  int profileThreads = 0;
  int profileLaunches = 25; ///< slowest launches listed; 0: all
  /// Build that timed library (set by --profile for its own compile).
  bool instrument = false;
  std::string cpu = "native";
  std::vector<std::string> dispatch;
  /// --tune: time the library backends of each launch here and keep the
  /// fastest (TuneDispatch.h), caching the times in `tuneCache`.
  bool tune = false;
  std::string tuneCache;
  /// --relu-epilogues: ReLUs as oneDNN post-ops (NaN becomes 0 there).
  bool reluEpilogues = false;
  /// --weight-layout: dense (ONNX's) or library (oneDNN's blocked layout
  /// for convolution weights only its convolutions and updates touch).
  std::string weightLayout = "library";
  /// --schedule: memory (launches reordered for a smaller arena) or graph
  /// (the order autodiff emits).
  std::string schedule = "memory";
  /// --check-numerics: test every launch's outputs for NaN and infinities.
  bool checkNumerics = false;
  std::string runtimeLibrary;
  TrainingPipelineOptions training;
  /// --amp: off, bf16, fp16 or bf16-storage (--trainc-amp).
  std::string amp = "off";
  /// --memory-budget: BYTES or N% of the unconstrained arena (""; none).
  std::string memoryBudget;
  /// --remat-solver: how --memory-budget chooses what to recompute.
  std::string rematSolver = "best";
  /// --target cpu|cuda, --gpu-arch, --cuda-path (trainc/Codegen.h).
  std::string target = "cpu";
  std::vector<std::string> gpuArchs = {"sm_80", "sm_90"};
  std::string cudaPath = "/usr/local/cuda";
  /// --bucket-mib: gradients per all-reduce bucket (--data-parallel, whose
  /// flag is training.dataParallel).
  double bucketMiB = 1.0;
};

struct TrainCommandOptions {
  std::string model; ///< .onnx (compiled first) or libNAME.so
  CompileCommandOptions compile;
  std::string data;
  int epochs = 1;
  int64_t batchSize = 64;
  int64_t seed = 0;
  int threads = 0;
  std::string checkpoint, resume, save;
  std::vector<std::string> feeds;
  std::string labels;
  int64_t steps = 0;
  /// The compile options given on the command line (--optimizer, --amp,
  /// ...): a library has them compiled in, so they are refused with a .so,
  /// except --lr, which the session sets (trainc_set_learning_rate).
  std::vector<std::string> compileOptionsGiven;
  /// --batch-size was given: with a .so, it must be the library's batch.
  bool batchSizeGiven = false;
};

struct ModelApi;

/// argv[0], to find the runtime library next to the executable.
extern const char *programPath;

void addModelOptions(CLI::App &command, ModelOptions &options);
/// `--train-batch-norm` (also on `trainc train`, which takes no model
/// options but --freeze and this).
void addTrainBatchNormFlag(CLI::App &command, ModelOptions &options);
/// --loss, --optimizer, --lr, ... (shared by compile and train).
void addTrainingOptions(CLI::App &command, TrainingPipelineOptions &options);
/// --amp, --cpu, --dispatch, --tune, --runtime-library.
void addCodegenOptions(CLI::App &command, CompileCommandOptions &options);
void addImportCommand(CLI::App &command, ImportCommandOptions &options);
void addCompileCommand(CLI::App &command, CompileCommandOptions &options);
int runImportCommand(const ImportCommandOptions &options);
int runCompileCommand(const CompileCommandOptions &options);
/// --profile: compiles a timed twin of the library, trains it on random
/// data and prints time per kernel (Profile.cpp).
int runProfile(const CompileCommandOptions &options);
void addTrainCommand(CLI::App &command, TrainCommandOptions &options);
int runTrainCommand(const TrainCommandOptions &options);
/// The ONNX model at `onnxPath` as an inference model without the
/// initializers named in `trained` (embedded in the .so for
/// trainc_export_onnx); nullopt and `error` if it cannot be read.
std::optional<std::string>
inferenceModelSkeleton(const std::string &onnxPath,
                       const std::set<std::string> &trained,
                       std::string &error);

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

/// CLI11's PositiveNumber and NonNegativeNumber (same names in --help)
/// with messages a user can read: "must be positive, got '0'".
CLI::Validator positive();
CLI::Validator nonNegative();

/// An error message if `output` exists and is one of `inputs` (the same
/// file, by device and inode: links and other spellings of a path
/// included); "" otherwise.
std::string overwritesInput(const std::string &output,
                            const std::vector<std::string> &inputs);

} // namespace trainc::cli

#endif // TRAINC_TOOLS_TRAINC_COMMANDS_H
