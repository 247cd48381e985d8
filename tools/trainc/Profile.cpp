//===- Profile.cpp - `trainc compile --profile` ---------------------------===//
//
// Where a training step spends its time. The library the user asked for is
// left as built; a twin with a timer around every kernel launch
// (trainc_get_profile) is compiled into a private directory, loaded, and
// trained on random data of the model's shapes: 3 warm-up steps (oneDNN
// and the caches settle), then --profile-steps measured ones. Integer
// inputs and labels are 0, valid for any embedding or class count.
//
// The report sets each kernel's measured time beside its estimated flops
// and bytes (KernelCost.h): GFLOP/s near the machine's GEMM peak means a
// kernel is compute-bound and done; low GB/s on a memory-bound kernel
// means overhead (launch, threading, a poor schedule).
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"
#include "tools/trainc/ModelLibrary.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>

namespace trainc::cli {
namespace {

constexpr int kWarmupSteps = 3;

/// Random f32 in [-1, 1), zero integers, for every argument in `arguments`.
std::vector<std::unique_ptr<OwnedTensor>>
randomTensors(const std::vector<Argument> &arguments, std::mt19937 &generator) {
  std::vector<std::unique_ptr<OwnedTensor>> tensors;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (const Argument &argument : arguments) {
    if (argument.dtype == "f32") {
      auto tensor = std::make_unique<OwnedTensor>(TRAINC_FLOAT32,
                                                  argument.shape, 4);
      auto *data = reinterpret_cast<float *>(tensor->bytes.data());
      for (size_t i = 0; i < tensor->bytes.size() / 4; ++i)
        data[i] = uniform(generator);
      tensors.push_back(std::move(tensor));
    } else if (argument.dtype == "i64" || argument.dtype == "i32") {
      bool wide = argument.dtype == "i64";
      tensors.push_back(std::make_unique<OwnedTensor>(
          wide ? TRAINC_INT64 : TRAINC_INT32, argument.shape, wide ? 8 : 4));
    } else {
      return {};
    }
  }
  return tensors;
}

/// Per-launch seconds and calls so far.
bool readProfile(const ModelApi &api, trainc_session *session, size_t count,
                 std::vector<double> &seconds, std::vector<int64_t> &calls) {
  seconds.assign(count, 0.0);
  calls.assign(count, 0);
  int32_t available = 0;
  return api.getProfile(session, seconds.data(), calls.data(),
                        static_cast<int32_t>(count), &available) == TRAINC_OK &&
         static_cast<size_t>(available) == count;
}

struct Line {
  std::string kernel, backend, shapes;
  double seconds = 0, flops = 0, bytes = 0;
  int64_t launches = 0;
};

void printLines(llvm::raw_ostream &os, std::vector<Line> lines, size_t limit,
                int steps, double stepSeconds, bool withShapes) {
  std::sort(lines.begin(), lines.end(),
            [](const Line &a, const Line &b) { return a.seconds > b.seconds; });
  os << llvm::formatv("    {0,9} {1,6} {2,8} {3,8} {4,7}  {5}\n", "ms/step",
                      "%", "launches", "GFLOP/s", "GB/s", "kernel (backend)");
  for (size_t i = 0; i < std::min(limit, lines.size()); ++i) {
    const Line &line = lines[i];
    double perStep = line.seconds / steps;
    os << llvm::formatv("    {0,9:F3} {1,6:F1} {2,8} {3,8:F1} {4,7:F2}  {5} ({6}){7}\n",
                        perStep * 1e3, 100 * perStep / stepSeconds,
                        line.launches,
                        line.seconds > 0 ? line.flops / line.seconds / 1e9 : 0.0,
                        line.seconds > 0 ? line.bytes / line.seconds / 1e9 : 0.0,
                        line.kernel, line.backend,
                        withShapes ? "  " + line.shapes : std::string());
  }
  if (lines.size() > limit)
    os << "    ... " << lines.size() - limit << " more\n";
}

} // namespace

int runProfile(const CompileCommandOptions &options) {
  llvm::SmallString<128> directory;
  if (llvm::sys::fs::createUniqueDirectory("trainc-profile", directory)) {
    spdlog::error("--profile: cannot create a temporary directory");
    return 1;
  }
  CompileCommandOptions timed = options;
  timed.output = std::string(directory) + "/libprofile.so";
  timed.profile = timed.stats = timed.checkNumerics = false;
  timed.instrument = true;
  int status = runCompileCommand(timed);
  auto api = status ? llvm::Expected<std::unique_ptr<ModelApi>>(
                          llvm::createStringError("compile failed"))
                    : loadModelLibrary(timed.output);
  llvm::sys::fs::remove_directories(directory); // the loaded .so stays mapped
  if (status)
    return status;
  if (!api) {
    spdlog::error("--profile: {}", llvm::toString(api.takeError()));
    return 1;
  }
  nlohmann::json manifest = nlohmann::json::parse((*api)->manifest());
  const nlohmann::json &launches = manifest.at("profile");
  std::mt19937 generator(1);
  auto inputArguments = argumentsWithRole(manifest, "train_step", "input");
  auto labelArguments = argumentsWithRole(manifest, "train_step", "labels");
  auto inputs = randomTensors(inputArguments, generator);
  auto labels = randomTensors(labelArguments, generator);
  if (inputs.size() != inputArguments.size() ||
      labels.size() != labelArguments.size()) {
    spdlog::error("--profile: an input has a dtype it cannot fill");
    return 1;
  }
  std::vector<trainc_tensor> inputTensors;
  for (const auto &input : inputs)
    inputTensors.push_back(input->tensor);

  trainc_session_options sessionOptions{options.profileThreads, 1, nullptr};
  trainc_session *session = nullptr;
  if ((*api)->open(&sessionOptions, &session) != TRAINC_OK) {
    spdlog::error("--profile: opening the session: {}", (*api)->lastError());
    return 1;
  }
  auto step = [&] {
    float loss;
    return (*api)->trainStep(session, inputTensors.data(), inputTensors.size(),
                             labels.empty() ? nullptr : &labels[0]->tensor,
                             &loss) == TRAINC_OK;
  };
  std::vector<double> before, after;
  std::vector<int64_t> callsBefore, callsAfter;
  bool ok = true;
  for (int i = 0; i < kWarmupSteps && ok; ++i)
    ok = step();
  ok = ok && readProfile(**api, session, launches.size(), before, callsBefore);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < options.profileSteps && ok; ++i)
    ok = step();
  double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ok = ok && readProfile(**api, session, launches.size(), after, callsAfter);
  if (!ok) {
    spdlog::error("--profile: {}", (*api)->lastError());
    (*api)->close(session);
    return 1;
  }
  (*api)->close(session);

  // One line per launch of train_step, and one per (kernel, backend).
  std::vector<Line> perLaunch;
  std::map<std::pair<std::string, std::string>, Line> perKernel;
  double kernelSeconds = 0;
  for (size_t i = 0; i < launches.size(); ++i) {
    const nlohmann::json &launch = launches[i];
    if (launch.at("function") != "train_step")
      continue;
    Line line{launch.at("kernel"),         launch.at("backend"),
              launch.at("shapes"),         after[i] - before[i],
              launch.at("flops").get<double>() * options.profileSteps,
              launch.at("bytes").get<double>() * options.profileSteps,
              1};
    kernelSeconds += line.seconds;
    Line &group = perKernel[{line.kernel, line.backend}];
    group.kernel = line.kernel;
    group.backend = line.backend;
    group.seconds += line.seconds;
    group.flops += line.flops;
    group.bytes += line.bytes;
    ++group.launches;
    perLaunch.push_back(std::move(line));
  }
  int steps = options.profileSteps;
  double stepSeconds = wall / steps;
  auto &os = llvm::outs();
  os << llvm::formatv(
      "trainc compile --profile: {0} steps of train_step on {1} (random "
      "inputs): {2:F3} ms/step; kernels {3:F3} ms/step ({4:F1}%), the rest "
      "is the runtime between them\n",
      steps,
      options.profileThreads ? std::to_string(options.profileThreads) +
                                   " threads"
                             : std::string("all cores"),
      stepSeconds * 1e3, kernelSeconds / steps * 1e3,
      100 * kernelSeconds / wall);
  os << "  by kernel:\n";
  std::vector<Line> groups;
  for (auto &[key, group] : perKernel)
    groups.push_back(group);
  printLines(os, groups, groups.size(), steps, stepSeconds, false);
  os << "  slowest launches:\n";
  printLines(os, perLaunch,
             options.profileLaunches ? size_t(options.profileLaunches)
                                     : perLaunch.size(),
             steps, stepSeconds, true);
  os.flush();
  return 0;
}

} // namespace trainc::cli
