//===- trainc.cpp - the trainc command-line driver ------------------------===//
//
//   trainc import model.onnx [-o out.mlir] [--batch N] [--freeze REGEX]
//   trainc compile model.onnx --emit=train-graph [--loss ...] [--optimizer ...]
//
// Errors go to stderr as one line "trainc: error: ..." with a non-zero exit
// status; output files are written atomically (temporary file + rename).
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#ifndef TRAINC_VERSION
#define TRAINC_VERSION "unknown"
#endif

const char *trainc::cli::programPath = nullptr;

int main(int argc, char **argv) {
  trainc::cli::programPath = argv[0];
  CLI::App app{"trainc: an ahead-of-time compiler for deep-learning training",
               "trainc"};
  app.set_version_flag("--version", std::string("trainc ") + TRAINC_VERSION);
  app.require_subcommand(1);
  app.fallthrough(); // global flags (-v) may follow the subcommand
  int verbosity = 0;
  app.add_flag("-v,--verbose", verbosity,
               "Log what the compiler does (repeat for more detail)");

  trainc::cli::ImportCommandOptions importOptions;
  CLI::App *import =
      app.add_subcommand("import", "Import an ONNX model and print its graph "
                                   "dialect IR");
  trainc::cli::addImportCommand(*import, importOptions);

  trainc::cli::CompileCommandOptions compileOptions;
  CLI::App *compile = app.add_subcommand(
      "compile", "Build the training step of an ONNX model (autodiff, loss, "
                 "optimizer) and emit it");
  trainc::cli::addCompileCommand(*compile, compileOptions);

  trainc::cli::TrainCommandOptions trainOptions;
  CLI::App *train = app.add_subcommand(
      "train", "Train a model: on an IDX image dataset (--data) or on fixed "
               "batches (--feed)");
  trainc::cli::addTrainCommand(*train, trainOptions);

  CLI11_PARSE(app, argc, argv);

  auto logger = spdlog::stderr_color_mt("trainc");
  logger->set_pattern("trainc: %^%l%$: %v");
  logger->set_level(verbosity >= 2   ? spdlog::level::debug
                    : verbosity == 1 ? spdlog::level::info
                                     : spdlog::level::warn);
  spdlog::set_default_logger(logger);

  // Every expected failure is reported where it happens; an exception
  // that gets here is a bug, but still an error message and a status,
  // not an abort.
  try {
    if (import->parsed())
      return trainc::cli::runImportCommand(importOptions);
    if (compile->parsed())
      return trainc::cli::runCompileCommand(compileOptions);
    if (train->parsed())
      return trainc::cli::runTrainCommand(trainOptions);
  } catch (const std::bad_alloc &) {
    spdlog::error("out of memory");
  } catch (const std::exception &e) {
    spdlog::error("internal error: {}", e.what());
  }
  return 1;
}
