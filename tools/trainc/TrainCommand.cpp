//===- TrainCommand.cpp - `trainc train` ----------------------------------===//
//
// Compiles the model (or takes a built libNAME.so), opens a session through
// the model's C API and trains:
//   * on an image dataset in IDX format (--data fashion-mnist | DIR;
//     TrainOnDataset.cpp);
//   * or on fixed batches (--feed NAME=FILE --labels FILE --steps K),
//     printing every step's loss, for exact comparisons.
// A library built with --data-parallel, run under `mpirun -np N`, trains
// as one process would on N times its batch: each process takes every
// N-th sample of the job's batch (rank-strided, as PyTorch's
// DistributedSampler), rank 0 prints, writes checkpoints and --save.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"
#include "tools/trainc/DataParallelJob.h"
#include "tools/trainc/Datasets.h"
#include "tools/trainc/ModelLibrary.h"
#include "tools/trainc/TrainLoops.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace trainc::cli {

/// The long names of a command's options, its option groups' included.
static std::set<std::string> optionNames(CLI::App &command) {
  std::set<std::string> names;
  auto add = [&](CLI::App &app) {
    for (const CLI::Option *option : app.get_options())
      if (!option->get_lnames().empty())
        names.insert("--" + option->get_lnames().front());
  };
  add(command);
  for (CLI::App *group : command.get_subcommands(
           [](CLI::App *app) { return app->get_name().empty(); }))
    add(*group);
  return names;
}

void addTrainCommand(CLI::App &command, TrainCommandOptions &options) {
  command
      .add_option("model", options.model,
                  "An ONNX model (compiled first) or a libNAME.so built by "
                  "trainc compile")
      ->required()
      ->check(CLI::ExistingFile);
  command.add_option("--data", options.data,
                     "fashion-mnist (Debian's dataset-fashion-mnist) or a "
                     "directory of IDX files in that layout");
  command.add_option("--epochs", options.epochs, "Passes over the data")
      ->check(positive())
      ->capture_default_str();
  command.add_option("--batch-size", options.batchSize, "Mini-batch size")
      ->check(positive())
      ->capture_default_str();
  command
      .add_option("--seed", options.seed,
                  "Seed of the data order and of dropout")
      ->capture_default_str();
  command.add_option("--threads", options.threads, "Threads (0: all cores)")
      ->check(nonNegative())
      ->capture_default_str();
  command.add_option("--checkpoint", options.checkpoint,
                     "Save a checkpoint here after every epoch");
  command
      .add_option("--resume", options.resume,
                  "Resume from this checkpoint (same model and options)")
      ->check(CLI::ExistingFile);
  command.add_option("--save", options.save,
                     "Write the trained model as an ONNX inference model");
  command.add_option("--feed", options.feeds,
                     "NAME=FILE.npy|FILE.pb: a fixed input batch (repeatable)");
  command.add_option("--labels", options.labels,
                     "FILE.npy|FILE.pb: the labels of the fixed batch");
  command
      .add_option("--steps", options.steps,
                  "Steps on the fixed batch (with --feed)")
      ->check(positive());
  // Everything below is compiled into a library: which of it the command
  // line gave is recorded for runTrainCommand.
  std::set<std::string> before = optionNames(command);
  command.add_option("--freeze", options.compile.model.freeze,
                     "Regular expression of initializers to keep constant");
  addTrainBatchNormFlag(command, options.compile.model);
  addCodegenOptions(command, options.compile);
  addTrainingOptions(command, options.compile.training);
  std::vector<std::string> compileOptions;
  for (const std::string &name : optionNames(command))
    if (!before.count(name))
      compileOptions.push_back(name);
  command.parse_complete_callback([&command, &options, compileOptions] {
    options.compileOptionsGiven.clear();
    for (const std::string &name : compileOptions)
      if (command.count(name))
        options.compileOptionsGiven.push_back(name);
    options.batchSizeGiven = command.count("--batch-size") > 0;
  });
}

int reportApiError(const ModelApi &api, const std::string &what) {
  spdlog::error("{}: {}", what, api.lastError());
  return 1;
}

/// --lr, when the command line gave it, for the session: after it opens
/// and after --resume (the checkpoint holds the rate it was written with).
/// Returns the exit status.
int applyLearningRate(const ModelApi &api, trainc_session *session,
                      const TrainCommandOptions &options) {
  const auto &given = options.compileOptionsGiven;
  if (std::find(given.begin(), given.end(), "--lr") == given.end())
    return 0;
  if (api.setLearningRate(session, options.compile.training.learningRate) !=
      TRAINC_OK)
    return reportApiError(api, "--lr");
  return 0;
}

/// ", loss scale S, K steps skipped" for a model with dynamic loss scaling
/// (--amp fp16), else "".
std::string lossScaling(const ModelApi &api, trainc_session *session) {
  double scale;
  int64_t skipped;
  if (api.getLossScale(session, &scale, &skipped) != TRAINC_OK)
    return "";
  char text[96];
  std::snprintf(text, sizeof(text), ", loss scale %g, %lld step%s skipped",
                scale, static_cast<long long>(skipped),
                skipped == 1 ? "" : "s");
  return text;
}

/// Whether a step that returned TRAINC_ERROR_NOT_FINITE was stopped by a
/// --check-numerics test (before its loss was computed).
bool stoppedByCheck(const ModelApi &api) {
  return llvm::StringRef(api.lastError()).starts_with("--check-numerics");
}

/// A step was not finite (TRAINC_ERROR_NOT_FINITE): its loss, or, in a
/// --check-numerics library, a kernel's output or an argument. Training
/// stops there, and nothing of the run is saved. Returns the exit status.
int notFinite(const ModelApi &api, float loss, int64_t step) {
  if (stoppedByCheck(api))
    spdlog::error("step {}: {}; stopping, nothing of this run is saved", step,
                  api.lastError());
  else
    spdlog::error("step {}: the loss is {}: a NaN or an infinity in the "
                  "data, the weights or a kernel (--check-numerics finds "
                  "where); stopping, nothing of this run is saved",
                  step, loss);
  return 1;
}

/// False, with an error, where a float parameter is not finite (a kernel
/// that maps NaN to a number can hide it from the loss: --relu-epilogues):
/// checked before anything is written.
bool finiteParameters(const ModelApi &api, trainc_session *session,
                      const nlohmann::json &manifest, const char *what) {
  // Constants never change (a mask of -inf is one).
  std::set<std::string> constants;
  for (const auto &argument :
       manifest.at("functions").at("train_step").at("arguments"))
    if (argument.value("role", "") == "constant")
      constants.insert(argument.at("name").get<std::string>());
  for (const auto &weight : manifest.at("weights")) {
    if (weight.at("dtype") != "f32" ||
        constants.count(weight.at("name").get<std::string>()))
      continue;
    std::vector<int64_t> shape = weight.at("shape").get<std::vector<int64_t>>();
    OwnedTensor tensor(TRAINC_FLOAT32, shape, sizeof(float));
    std::string name = weight.at("name").get<std::string>();
    if (api.getParameter(session, name.c_str(), &tensor.tensor) != TRAINC_OK)
      continue; // not a parameter the session exposes
    const float *values = reinterpret_cast<const float *>(tensor.bytes.data());
    size_t count = tensor.bytes.size() / sizeof(float);
    for (size_t i = 0; i < count; ++i)
      if (!std::isfinite(values[i])) {
        int64_t step = 0;
        api.getStep(session, &step);
        spdlog::error("{}: parameter '{}' is not finite after step {} "
                      "(element {}: {}); nothing is written",
                      what, name, step, i, values[i]);
        return false;
      }
  }
  return true;
}

namespace {

int trainOnFixedBatch(const ModelApi &api, trainc_session *session,
                      const nlohmann::json &manifest,
                      const TrainCommandOptions &options, const World &world) {
  auto inputs = argumentsWithRole(manifest, "train_step", "input");
  auto labels = argumentsWithRole(manifest, "train_step", "labels");
  std::map<std::string, HostArray> feeds;
  for (const std::string &feed : options.feeds) {
    size_t equal = feed.find('=');
    if (equal == std::string::npos) {
      spdlog::error("--feed expects NAME=FILE, got '{}'", feed);
      return 1;
    }
    auto array = loadArray(feed.substr(equal + 1));
    if (!array) {
      spdlog::error("--feed {}: {}", feed.substr(0, equal),
                    llvm::toString(array.takeError()));
      return 1;
    }
    feeds[feed.substr(0, equal)] = std::move(*array);
  }
  auto toTensor = [&](const HostArray &array, const Argument &argument,
                      trainc_tensor &tensor) -> bool {
    static const std::map<std::string, trainc_dtype> dtypes = {
        {"f32", TRAINC_FLOAT32},
        {"f64", TRAINC_FLOAT64},
        {"i64", TRAINC_INT64},
        {"i32", TRAINC_INT32}};
    if (array.dtype != argument.dtype) {
      spdlog::error("'{}' is {}, the model wants {}", argument.name,
                    array.dtype, argument.dtype);
      return false;
    }
    tensor = {dtypes.at(array.dtype), static_cast<int32_t>(array.shape.size()),
              array.shape.data(), const_cast<char *>(array.bytes.data())};
    return true;
  };
  std::vector<trainc_tensor> inputTensors(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = feeds.find(inputs[i].name);
    if (it == feeds.end()) {
      spdlog::error("no --feed for input '{}'", inputs[i].name);
      return 1;
    }
    if (!takeShard(it->second, inputs[i], world, "--feed " + inputs[i].name) ||
        !toTensor(it->second, inputs[i], inputTensors[i]))
      return 1;
  }
  std::optional<HostArray> labelArray;
  trainc_tensor labelTensor{};
  if (!labels.empty()) {
    if (options.labels.empty()) {
      spdlog::error("the model needs --labels");
      return 1;
    }
    auto array = loadArray(options.labels);
    if (!array) {
      spdlog::error("--labels: {}", llvm::toString(array.takeError()));
      return 1;
    }
    labelArray = std::move(*array);
    if (!takeShard(*labelArray, labels[0], world, "--labels") ||
        !toTensor(*labelArray, labels[0], labelTensor))
      return 1;
  }
  // A fixed batch has no data position: the checkpoint's session state
  // (parameters, optimizer state, step) is all there is to resume.
  if (!options.resume.empty()) {
    if (api.loadCheckpoint(session, options.resume.c_str(), nullptr, 0,
                           nullptr) != TRAINC_OK)
      return reportApiError(api, "--resume");
    if (int status = applyLearningRate(api, session, options))
      return status;
  }
  for (int64_t step = 1; step <= options.steps; ++step) {
    float loss = NAN;
    trainc_status status =
        api.trainStep(session, inputTensors.data(), inputTensors.size(),
                      labels.empty() ? nullptr : &labelTensor, &loss);
    if (status != TRAINC_OK && status != TRAINC_ERROR_NOT_FINITE)
      return reportApiError(api, "training step");
    if (status == TRAINC_ERROR_NOT_FINITE && stoppedByCheck(api))
      return notFinite(api, loss, step);
    // The job's loss: the mean of the processes' (each a mean over its
    // rows), which is the mean over the job's batch.
    std::vector<double> jobLoss = {loss};
    if (!world.sum(jobLoss))
      return 1;
    loss = static_cast<float>(jobLoss[0] / world.size);
    if (world.root())
      std::printf("step %lld: loss %.9g%s\n", static_cast<long long>(step),
                  loss, lossScaling(api, session).c_str());
    std::fflush(stdout);
    if (status == TRAINC_ERROR_NOT_FINITE)
      return notFinite(api, loss, step);
  }
  std::fflush(stdout);
  if (!options.checkpoint.empty() && world.root()) {
    if (!finiteParameters(api, session, manifest, "--checkpoint"))
      return 1;
    if (api.saveCheckpoint(session, options.checkpoint.c_str(), nullptr, 0) !=
        TRAINC_OK)
      return reportApiError(api, "--checkpoint");
  }
  return 0;
}

} // namespace

int runTrainCommand(const TrainCommandOptions &options) {
  // Checkpoints and the saved model never replace what the run reads (a
  // checkpoint may replace the one it resumed from).
  std::vector<std::string> inputs = {options.model, options.labels,
                                     options.data};
  for (const std::string &feed : options.feeds)
    inputs.push_back(feed.substr(feed.find('=') + 1));
  for (const std::string *output : {&options.checkpoint, &options.save}) {
    std::vector<std::string> read = inputs;
    if (output == &options.save)
      read.push_back(options.resume), read.push_back(options.checkpoint);
    if (std::string error = overwritesInput(*output, read); !error.empty()) {
      spdlog::error("{}", error);
      return 1;
    }
  }
  bool fixed = !options.feeds.empty();
  if (fixed == !options.data.empty()) {
    spdlog::error("give either --data (train on a dataset) or --feed with "
                  "--steps (a fixed batch)");
    return 1;
  }
  if (fixed && options.steps <= 0) {
    spdlog::error("--feed needs --steps");
    return 1;
  }
  std::string library = options.model;
  std::string scratch;
  bool compiled = llvm::StringRef(options.model).ends_with(".so");
  std::vector<std::string> fixedInLibrary;
  for (const std::string &name : options.compileOptionsGiven)
    if (name != "--lr")
      fixedInLibrary.push_back(name);
  if (compiled && !fixedInLibrary.empty()) {
    spdlog::error("{}: compiled into '{}' when it was built; give the ONNX "
                  "model to train with {}, or rebuild the library with "
                  "trainc compile",
                  llvm::join(fixedInLibrary, ", "), options.model,
                  fixedInLibrary.size() == 1 ? "it" : "them");
    return 1;
  }
  if (!compiled) {
    // Compile into a private directory first.
    llvm::SmallString<128> directory;
    if (llvm::sys::fs::createUniqueDirectory("trainc", directory)) {
      spdlog::error("cannot create a temporary directory");
      return 1;
    }
    scratch = std::string(directory);
    CompileCommandOptions compile = options.compile;
    compile.model.model = options.model;
    if (!fixed) {
      compile.model.batch = options.batchSize;
    } else {
      // The fixed batch decides the batch size the model is compiled for:
      // in a data-parallel job, each process's share of it.
      std::string first = options.feeds.front();
      auto array = loadArray(first.substr(first.find('=') + 1));
      int64_t processes =
          compile.training.dataParallel ? launcherWorldSize() : 1;
      if (array && !array->shape.empty())
        compile.model.batch = array->shape.front() / processes;
    }
    compile.emit = "so";
    compile.output = scratch + "/libmodel.so";
    if (int status = runCompileCommand(compile)) {
      llvm::sys::fs::remove_directories(scratch);
      return status;
    }
    library = compile.output;
  }
  auto api = loadModelLibrary(library);
  if (!scratch.empty())
    llvm::sys::fs::remove_directories(scratch); // the loaded .so stays mapped
  if (!api) {
    spdlog::error("{}", llvm::toString(api.takeError()));
    return 1;
  }
  nlohmann::json manifest = nlohmann::json::parse((*api)->manifest());
  if (compiled && options.batchSizeGiven)
    for (const auto &argument :
         manifest["functions"]["train_step"]["arguments"])
      if (argument["role"] == "input" && !argument["shape"].empty() &&
          argument["shape"][0].get<int64_t>() != options.batchSize) {
        spdlog::error("--batch-size {}: '{}' was compiled for batches of {}; "
                      "give the ONNX model to train with another batch size",
                      options.batchSize, options.model,
                      argument["shape"][0].get<int64_t>());
        return 1;
      }
  // Several processes of a job on one machine share its cores: "all
  // cores" is each one's share.
  trainc_session_options sessionOptions{threadsPerProcess(options.threads),
                                        static_cast<uint64_t>(options.seed),
                                        nullptr};
  trainc_session *session = nullptr;
  if ((*api)->open(&sessionOptions, &session) != TRAINC_OK)
    return reportApiError(**api, "opening the session");
  if (int status = applyLearningRate(**api, session, options)) {
    (*api)->close(session);
    return status;
  }
  size_t arenaBytes = 0, libraryScratchBytes = 0;
  if ((*api)->getMemory(session, &arenaBytes, &libraryScratchBytes) ==
      TRAINC_OK)
    spdlog::info("session memory: arena {} bytes + library scratch {} bytes",
                 arenaBytes, libraryScratchBytes);
  World world;
  world.api = api->get();
  world.session = session;
  if ((*api)->getWorld &&
      (*api)->getWorld(session, &world.rank, &world.size) != TRAINC_OK) {
    (*api)->close(session);
    return reportApiError(**api, "opening the session");
  }
  if (world.size > 1 && world.root())
    spdlog::info("data-parallel: {} processes, each on every {}-th sample "
                 "of the job's batch",
                 world.size, world.size);
  int status = fixed
                   ? trainOnFixedBatch(**api, session, manifest, options, world)
                   : trainOnDataset(**api, session, manifest, options, world);
  if (status == 0 && !options.save.empty() && world.root()) {
    if (!finiteParameters(**api, session, manifest, "--save"))
      status = 1;
    else if ((*api)->exportOnnx(session, options.save.c_str()) != TRAINC_OK)
      status = reportApiError(**api, "--save");
    else
      spdlog::info("wrote {}", options.save);
  }
  (*api)->close(session);
  // A process of a job that fails leaves at once, without finalizing MPI
  // (which would wait for the others, blocked in the step's collectives):
  // the launcher sees it die and ends the whole job.
  if (status != 0 && world.size > 1) {
    spdlog::error("rank {} of {} failed: ending the job", world.rank,
                  world.size);
    spdlog::shutdown();
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

} // namespace trainc::cli
