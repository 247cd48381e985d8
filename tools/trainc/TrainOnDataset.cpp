//===- TrainOnDataset.cpp - `trainc train --data`: epochs over a dataset --===//
//
// Seeded shuffled mini-batches of an IDX image dataset (the last partial
// batch dropped), test accuracy after every epoch (every test image
// counts: the last batch is padded and the padding ignored), checkpoints
// that hold the position in the data, so that a resumed run takes the
// same batches as an uninterrupted one. In a data-parallel job each
// process takes every N-th sample of the job's batch.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Datasets.h"
#include "tools/trainc/TrainLoops.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <unistd.h>

namespace trainc::cli {
namespace {

/// Progress: a bar on a terminal, a line every `every` steps otherwise.
struct Progress {
  bool terminal = ::isatty(2);
  std::chrono::steady_clock::time_point start =
      std::chrono::steady_clock::now();

  void update(int epoch, int64_t done, int64_t total, double loss,
              int64_t samples) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    double rate = seconds > 0 ? samples / seconds : 0;
    if (terminal) {
      int width = 30,
          filled = static_cast<int>(width * done / std::max<int64_t>(total, 1));
      std::fprintf(stderr,
                   "\repoch %d [%s%s] %lld/%lld loss %.4f %.0f samples/s",
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
      int64_t predicted =
          std::max_element(rowScores, rowScores + classes) - rowScores;
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
  int epoch = 0;         ///< completed epochs
  std::string generator; ///< the shuffle generator's state at epoch start
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

} // namespace

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

} // namespace trainc::cli
