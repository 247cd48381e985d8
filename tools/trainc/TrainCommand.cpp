//===- TrainCommand.cpp - `trainc train` ----------------------------------===//
//
// Compiles the model (or takes a built libNAME.so), opens a session through
// the model's C API and trains:
//   * on an image dataset in IDX format (--data fashion-mnist | DIR):
//     seeded shuffled mini-batches (the last partial batch is dropped),
//     test accuracy after every epoch (every test image counts: the last
//     batch is padded and the padding ignored), --checkpoint/--resume;
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

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <unistd.h>

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
  command.add_option("model", options.model,
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
  command.add_option("--seed", options.seed,
                     "Seed of the data order and of dropout")
      ->capture_default_str();
  command.add_option("--threads", options.threads, "Threads (0: all cores)")
      ->check(nonNegative())
      ->capture_default_str();
  command.add_option("--checkpoint", options.checkpoint,
                     "Save a checkpoint here after every epoch");
  command.add_option("--resume", options.resume,
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

namespace {

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

/// Progress: a bar on a terminal, a line every `every` steps otherwise.
struct Progress {
  bool terminal = ::isatty(2);
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void update(int epoch, int64_t done, int64_t total, double loss,
              int64_t samples) {
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    double rate = seconds > 0 ? samples / seconds : 0;
    if (terminal) {
      int width = 30, filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
      std::fprintf(stderr, "\repoch %d [%s%s] %lld/%lld loss %.4f %.0f samples/s",
                   epoch, std::string(filled, '#').c_str(),
                   std::string(width - filled, '.').c_str(),
                   static_cast<long long>(done), static_cast<long long>(total),
                   loss, rate);
      if (done == total)
        std::fprintf(stderr, "\n");
    } else if (done % 100 == 0 || done == total) {
      std::fprintf(stderr, "epoch %d step %lld/%lld loss %.4f %.0f samples/s\n",
                   epoch, static_cast<long long>(done),
                   static_cast<long long>(total), loss, rate);
    }
  }
};

/// Fraction of `data` the model classifies right (eval mode) by its first
/// output; `outputs` receive every output (auxiliary heads are computed,
/// not scored). In a job, each process classifies every size-th image from
/// its rank, and the counts are summed over the job.
llvm::Expected<double> accuracy(const ModelApi &api, trainc_session *session,
                                const Dataset &data, OwnedTensor &input,
                                std::deque<OwnedTensor> &outputs,
                                const World &world) {
  const OwnedTensor &logits = outputs.front();
  std::vector<trainc_tensor> tensors;
  for (const OwnedTensor &output : outputs)
    tensors.push_back(output.tensor);
  int64_t batch = input.shape[0], item = data.itemSize();
  int64_t classes = logits.shape.back(), correct = 0;
  // This process's images: rank, rank + size, ...
  int64_t mine = (data.count - world.rank + world.size - 1) / world.size;
  auto sampleAt = [&](int64_t k) { return world.rank + k * world.size; };
  for (int64_t first = 0; first < mine; first += batch) {
    int64_t valid = std::min(batch, mine - first);
    auto *x = reinterpret_cast<float *>(input.bytes.data());
    for (int64_t row = 0; row < batch; ++row) {
      // Padded with a real image.
      int64_t sample = sampleAt(first + (row < valid ? row : 0));
      std::copy_n(&data.images[sample * item], item, x + row * item);
    }
    if (api.forward(session, &input.tensor, 1, tensors.data(),
                    static_cast<int32_t>(tensors.size())) != TRAINC_OK)
      return llvm::createStringError(std::string("evaluation failed: ") +
                                     api.lastError());
    auto *scores = reinterpret_cast<const float *>(logits.bytes.data());
    for (int64_t row = 0; row < valid; ++row) {
      const float *rowScores = scores + row * classes;
      int64_t predicted = std::max_element(rowScores, rowScores + classes) - rowScores;
      correct += predicted == data.labels[sampleAt(first + row)];
    }
  }
  std::vector<double> counts = {double(correct)};
  if (!world.sum(counts))
    return llvm::createStringError("summing the test counts over the job "
                                   "failed");
  return counts[0] / double(data.count);
}

/// Where a run is in the data: saved in checkpoints so a resumed run takes
/// the same batches as an uninterrupted one.
struct Position {
  int epoch = 0;          ///< completed epochs
  std::string generator;  ///< the shuffle generator's state at epoch start
  /// What the run must be given again to continue it: --seed and the
  /// training data (its fingerprint); absent in older checkpoints.
  std::optional<int64_t> seed;
  std::string data;
  /// Processes of the data-parallel job that wrote it (1 when absent).
  int64_t worldSize = 1;

  std::string save() const {
    nlohmann::json json{{"epoch", epoch},
                        {"generator", generator},
                        {"data", data},
                        {"world_size", worldSize}};
    if (seed)
      json["seed"] = *seed;
    return json.dump();
  }
  bool load(const std::string &text) {
    auto json = nlohmann::json::parse(text, nullptr, false);
    if (json.is_discarded() || !json.contains("epoch") ||
        !json.contains("generator"))
      return false;
    epoch = json["epoch"];
    generator = json["generator"];
    if (json.contains("seed"))
      seed = json["seed"].get<int64_t>();
    if (json.contains("data"))
      data = json["data"].get<std::string>();
    if (json.contains("world_size"))
      worldSize = json["world_size"].get<int64_t>();
    return true;
  }
};

/// The training set's fingerprint: count, shape and a hash of its labels
/// and pixels.
std::string fingerprint(const Dataset &data) {
  uint64_t hash = 1469598103934665603ull;
  // FNV-1a over 64-bit words (and the last bytes): 60000 images in
  // 30 ms.
  auto mix = [&](const void *bytes, size_t size) {
    const auto *p = static_cast<const unsigned char *>(bytes);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
      uint64_t word;
      std::memcpy(&word, p + i, 8);
      hash = (hash ^ word) * 1099511628211ull;
    }
    for (; i < size; ++i)
      hash = (hash ^ p[i]) * 1099511628211ull;
  };
  mix(data.labels.data(), data.labels.size() * sizeof(data.labels[0]));
  mix(data.images.data(), data.images.size() * sizeof(data.images[0]));
  return std::to_string(data.count) + " images of " +
         std::to_string(data.itemSize()) + " values, hash " +
         std::to_string(hash);
}

int trainOnDataset(const ModelApi &api, trainc_session *session,
                   const nlohmann::json &manifest,
                   const TrainCommandOptions &options, const World &world) {
  auto data = loadImageDirectory(options.data);
  if (!data) {
    spdlog::error("{}", llvm::toString(data.takeError()));
    return 1;
  }
  auto &[train, test] = *data;
  auto inputs = argumentsWithRole(manifest, "train_step", "input");
  auto labels = argumentsWithRole(manifest, "train_step", "labels");
  auto outputs = argumentsWithRole(manifest, "eval", "output");
  bool floatOutputs =
      !outputs.empty() && llvm::all_of(outputs, [](const Argument &output) {
        return output.dtype == "f32";
      });
  if (inputs.size() != 1 || inputs[0].dtype != "f32" || labels.size() != 1 ||
      labels[0].dtype != "i64" || !floatOutputs) {
    spdlog::error("--data needs a model with one float32 image input, int64 "
                  "class labels and float32 outputs of class scores (the "
                  "first is scored)");
    return 1;
  }
  int64_t batch = inputs[0].shape[0];
  int64_t perSample = 1;
  for (size_t d = 1; d < inputs[0].shape.size(); ++d)
    perSample *= inputs[0].shape[d];
  if (perSample != train.itemSize()) {
    spdlog::error("the model's input holds {} values per sample, the data {}",
                  perSample, train.itemSize());
    return 1;
  }
  // The job's batch: each process's, from every process.
  int64_t jobBatch = batch * world.size;
  if (train.count < jobBatch) {
    spdlog::error("--data: {} training images, fewer than one batch ({}): "
                  "nothing to train on",
                  train.count, jobBatch);
    return 1;
  }
  OwnedTensor input(TRAINC_FLOAT32, inputs[0].shape, 4);
  OwnedTensor label(TRAINC_INT64, labels[0].shape, 8);
  std::deque<OwnedTensor> scores;
  for (const Argument &output : outputs)
    scores.emplace_back(TRAINC_FLOAT32, output.shape, 4);

  Position position;
  std::string trainData = fingerprint(train);
  std::mt19937_64 generator(options.seed);
  if (!options.resume.empty()) {
    std::string extra(1 << 20, '\0');
    size_t size = 0;
    if (api.loadCheckpoint(session, options.resume.c_str(), extra.data(),
                           extra.size(), &size) != TRAINC_OK)
      return reportApiError(api, "--resume");
    if (int status = applyLearningRate(api, session, options))
      return status;
    if (!position.load(extra.substr(0, size))) {
      spdlog::error("--resume: '{}' holds no data position (not written by "
                    "trainc train?)",
                    options.resume);
      return 1;
    }
    // Another seed or other data: the run could no longer equal an
    // uninterrupted one.
    if (position.seed && *position.seed != options.seed) {
      spdlog::error("--resume: '{}' was written by a run with --seed {}, "
                    "this one has --seed {}",
                    options.resume, *position.seed, options.seed);
      return 1;
    }
    if (position.worldSize != world.size) {
      spdlog::error("--resume: '{}' was written by a job of {} process{}, "
                    "this one has {}: resume with the same number (mpirun "
                    "-np {})",
                    options.resume, position.worldSize,
                    position.worldSize == 1 ? "" : "es", world.size,
                    position.worldSize);
      return 1;
    }
    if (!position.data.empty() && position.data != trainData) {
      spdlog::error("--resume: '{}' was written by a run on other training "
                    "data ({}; this run's: {})",
                    options.resume, position.data, trainData);
      return 1;
    }
    std::istringstream(position.generator) >> generator;
    if (world.root())
      spdlog::info("resumed after epoch {}", position.epoch);
  }

  int64_t stepsPerEpoch = train.count / jobBatch;
  Progress progress;
  int64_t samples = 0;
  for (int epoch = position.epoch + 1; epoch <= options.epochs; ++epoch) {
    std::ostringstream state;
    state << generator;
    position.generator = state.str();
    // Fisher-Yates with our own generator: the same order on every platform.
    std::vector<int64_t> order(train.count);
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = train.count - 1; i > 0; --i)
      std::swap(order[i], order[generator() % (i + 1)]);

    double loss = 0;
    for (int64_t step = 0; step < stepsPerEpoch; ++step) {
      auto *x = reinterpret_cast<float *>(input.bytes.data());
      auto *y = reinterpret_cast<int64_t *>(label.bytes.data());
      // Every size-th sample of the job's batch, from this rank.
      for (int64_t row = 0; row < batch; ++row) {
        int64_t sample = order[step * jobBatch + row * world.size + world.rank];
        std::copy_n(&train.images[sample * perSample], perSample,
                    x + row * perSample);
        y[row] = train.labels[sample];
      }
      float stepLoss = NAN;
      trainc_status status =
          api.trainStep(session, &input.tensor, 1, &label.tensor, &stepLoss);
      if (status == TRAINC_ERROR_NOT_FINITE)
        return notFinite(api, stepLoss, (epoch - 1) * stepsPerEpoch + step + 1);
      if (status != TRAINC_OK)
        return reportApiError(api, "training step");
      loss = stepLoss;
      samples += jobBatch;
      if (world.root())
        progress.update(epoch, step + 1, stepsPerEpoch, loss, samples);
    }
    // The epoch's last loss, the job's (the mean of the processes').
    std::vector<double> lastLoss = {loss};
    if (!world.sum(lastLoss))
      return 1;
    loss = lastLoss[0] / world.size;
    if (test.count == 0) {
      if (world.root())
        std::printf("epoch %d: loss %.4f, no test images%s\n", epoch, loss,
                    lossScaling(api, session).c_str());
    } else {
      auto correct = accuracy(api, session, test, input, scores, world);
      if (!correct) {
        spdlog::error("{}", llvm::toString(correct.takeError()));
        return 1;
      }
      if (world.root())
        std::printf(
            "epoch %d: loss %.4f, test accuracy %.2f%% (%lld images)%s\n",
            epoch, loss, 100.0 * *correct, static_cast<long long>(test.count),
            lossScaling(api, session).c_str());
    }
    std::fflush(stdout);
    position.epoch = epoch;
    // Rank 0 writes: parameters and optimizer state are the same on every
    // process (BatchNorm statistics are rank 0's).
    if (!options.checkpoint.empty() && world.root()) {
      if (!finiteParameters(api, session, manifest, "--checkpoint"))
        return 1;
      // The generator as it is now: the next epoch's shuffle starts here.
      std::ostringstream next;
      next << generator;
      Position saved{epoch, next.str(), options.seed, trainData, world.size};
      std::string extra = saved.save();
      if (api.saveCheckpoint(session, options.checkpoint.c_str(), extra.data(),
                             extra.size()) != TRAINC_OK)
        return reportApiError(api, "--checkpoint");
    }
  }
  return 0;
}

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
        {"f32", TRAINC_FLOAT32}, {"f64", TRAINC_FLOAT64}, {"i64", TRAINC_INT64},
        {"i32", TRAINC_INT32}};
    if (array.dtype != argument.dtype) {
      spdlog::error("'{}' is {}, the model wants {}", argument.name, array.dtype,
                    argument.dtype);
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
