//===- TuneDispatch.cpp - backends chosen by measurement ------------------===//
//
// Which library is faster for a convolution or a GEMM depends on the CPU:
// oneDNN 2.6 pools dense NCHW 60x slower on an AVX2 Zen 3 than on an
// AVX-512 Zen 5, and its weight gradient of a 1x1 convolution with a 3x3
// window is 14x slower than OpenBLAS's there (docs/RUNTIME.md). The
// dispatch registry's priorities are measured on one machine; this times
// the runtime's own kernels on the machine that compiles. Generated and
// reference kernels are not candidates: generated code exists only after
// code generation, and the reference kernels are the always-correct
// fallback, never the fast one for these ops.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/TuneDispatch.h"

#include "dialects/kernel/BackendRegistry.h"
#include "dialects/kernel/KernelOps.h"
#include "lib/Codegen/Descriptor.h"
#include "lib/Runtime/Buffer.h"
#include "lib/Runtime/FileWrite.h"
#include "lib/Runtime/Launch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Host.h"

#include <nlohmann/json.hpp>
#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <unistd.h>

namespace trainc {

namespace {

/// Part of every cache key: bump it when the runtime changes how a
/// library kernel runs, so that times measured before are not reused.
/// 2: oneDNN matmuls of a shared rhs run as one 2-D product.
/// 3: OpenBLAS's idle workers are stopped (times of the first launch timed
///    in a process could be 18x too slow while they spun).
constexpr int kTimingRevision = 3;

/// The library backends a launch may be timed on.
constexpr const char *kCandidates[] = {"dnnl", "openblas"};

/// "conv" and "graph.conv" name the same kernel; "*" every kernel.
std::set<std::string> overriddenKernels(const std::vector<std::string> &list) {
  std::set<std::string> kernels;
  for (const std::string &entry : list) {
    std::string kernel = entry.substr(0, entry.find('='));
    if (kernel != "*" && kernel.find('.') == std::string::npos)
      kernel = "graph." + kernel;
    kernels.insert(kernel);
  }
  return kernels;
}

/// Operands for a timing run: f32 uniform in [-1, 1) from a fixed
/// sequence, other dtypes zero (valid indices and labels).
rt::Buffer operandBuffer(const rt::OperandInfo &operand, uint64_t &state) {
  rt::Buffer buffer(operand.bytes());
  if (operand.dtype == rt::DType::F32 && buffer.data()) {
    auto *values = static_cast<float *>(buffer.data());
    for (int64_t i = 0; i < operand.numElements(); ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      values[i] = static_cast<float>((state >> 40) * 0x1p-23) - 1.0f;
    }
  }
  return buffer;
}

/// One candidate launch prepared for timing, with operands of its own.
struct TimedLaunch {
  std::string backend;
  rt::PreparedLaunch prepared;
  std::vector<rt::Buffer> inputs, outputs;
  std::vector<void *> in, out;
  rt::Buffer scratch;
  double best = std::numeric_limits<double>::infinity(), total = 0;
  int runs = 0;

  /// Prepares `descriptor` and runs it once, untimed; false with `error`.
  bool prepare(const std::string &descriptor, rt::LibraryContext &libraries,
               std::string &error) {
    if (!rt::prepareLaunch(descriptor.c_str(), libraries, prepared, error))
      return false;
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (const rt::OperandInfo &operand : prepared.launch.inputs)
      inputs.push_back(operandBuffer(operand, state));
    for (const rt::OperandInfo &operand : prepared.launch.outputs)
      outputs.emplace_back(operand.bytes());
    for (rt::Buffer &buffer : inputs)
      in.push_back(buffer.data());
    for (rt::Buffer &buffer : outputs)
      out.push_back(buffer.data());
    scratch = rt::Buffer(prepared.scratchBytes());
    return prepared.run(in.data(), out.data(), scratch.data(), error);
  }

  bool timeOnce(std::string &error) {
    auto start = std::chrono::steady_clock::now();
    if (!prepared.run(in.data(), out.data(), scratch.data(), error))
      return false;
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    best = std::min(best, ms);
    total += ms;
    ++runs;
    return true;
  }

  /// At least 3 runs and 30 ms, at most 20 runs.
  bool done() const { return runs >= 20 || (runs >= 3 && total >= 30.0); }
};

/// Times `launches` in interleaved rounds (one run of each per round), so
/// that a burst of load from another process slows all of them alike,
/// and sets each one's `best`: the fastest run in milliseconds, or -1 if
/// it failed (`failed` gets the reason).
void timeLaunches(std::vector<TimedLaunch> &launches, std::string &failed) {
  for (bool more = true; more;) {
    more = false;
    for (TimedLaunch &launch : launches) {
      if (launch.best < 0 || launch.done())
        continue;
      std::string error;
      if (!launch.timeOnce(error)) {
        launch.best = -1;
        failed = launch.backend + ": " + error;
        continue;
      }
      more = more || !launch.done();
    }
  }
}

/// The descriptor without its backend: the cache key's shape part.
std::string withoutBackend(const std::string &descriptor) {
  size_t begin = descriptor.find(";backend=");
  if (begin == std::string::npos)
    return descriptor;
  size_t end = descriptor.find(';', begin + 1);
  return descriptor.substr(0, begin) +
         (end == std::string::npos ? "" : descriptor.substr(end));
}

bool readCache(const std::string &path, nlohmann::json &cache,
               std::string &error) {
  cache = nlohmann::json::object();
  if (path.empty() || !llvm::sys::fs::exists(path))
    return true;
  std::ifstream file(path);
  nlohmann::json parsed = nlohmann::json::parse(file, nullptr, false);
  bool valid = !parsed.is_discarded() && parsed.is_object() &&
               parsed.contains("version") && parsed["version"] == 1 &&
               parsed.contains("times") && parsed["times"].is_object();
  if (valid)
    for (const auto &entry : parsed["times"].items()) {
      valid = valid && entry.value().is_object();
      if (valid)
        for (const auto &time : entry.value().items())
          valid = valid && time.value().is_number();
    }
  if (!valid) {
    error = "--tune-cache: '" + path +
            "' is not a trainc dispatch-times file (delete it or name "
            "another with --tune-cache)";
    return false;
  }
  cache = parsed["times"];
  return true;
}

/// Writes the cache atomically (a temporary file renamed over it); warns
/// if that fails.
void writeCache(const std::string &path, const nlohmann::json &times) {
  if (path.empty())
    return;
  llvm::StringRef directory = llvm::sys::path::parent_path(path);
  if (!directory.empty() && llvm::sys::fs::create_directories(directory)) {
    spdlog::warn("--tune: cannot create '{}'; times not cached",
                 directory.str());
    return;
  }
  std::string error = rt::writeFileAtomically(
      path, nlohmann::json{{"version", 1}, {"times", times}}.dump(1) + "\n");
  if (!error.empty())
    spdlog::warn("--tune: cannot write '{}'; times not cached", path);
}

} // namespace

std::string defaultTuneCache() {
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return "";
  llvm::sys::path::append(path, "trainc", "dispatch-times.json");
  return path.str().str();
}

bool tuneDispatch(mlir::ModuleOp module, const TuneOptions &options,
                  TuneReport &report, std::string &error) {
  nlohmann::json times;
  if (!readCache(options.cachePath, times, error))
    return false;
  std::set<std::string> overridden = overriddenKernels(options.overrides);
  int threads = options.threads > 0 ? options.threads : omp_get_num_procs();
  int savedThreads = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::string machine = llvm::sys::getHostCPUName().str() + ", " +
                        std::to_string(threads) + " threads, r" +
                        std::to_string(kTimingRevision) + ": ";
  rt::LibraryContext libraries;
  bool cacheChanged = false;

  module.walk([&](kernel::LaunchOp launch) {
    std::string kernelName = launch.getKernel().str();
    std::string chosen = launch.getBackend().str();
    if (overridden.count(kernelName) || overridden.count("*"))
      return;
    std::vector<std::string> candidates;
    for (const char *backend : kCandidates) {
      std::string whyNot;
      if (mlir::succeeded(kernel::chooseBackend(launch, backend, whyNot)))
        candidates.push_back(backend);
    }
    if (candidates.size() < 2 ||
        std::find(candidates.begin(), candidates.end(), chosen) ==
            candidates.end())
      return;
    ++report.launches;
    // Times from the cache, and the candidates still to time.
    std::map<std::string, double> ms;
    std::map<std::string, std::string> keys;
    std::vector<TimedLaunch> toTime;
    toTime.reserve(candidates.size()); // the prepared kernels stay put
    for (const std::string &backend : candidates) {
      launch.setBackend(backend);
      llvm::Expected<std::string> descriptor =
          codegen::launchDescriptor(launch);
      if (!descriptor) {
        llvm::consumeError(descriptor.takeError());
        continue;
      }
      std::string key = machine + withoutBackend(*descriptor);
      keys[backend] = key;
      if (times.contains(key) && times[key].contains(backend)) {
        ms[backend] = times[key][backend].get<double>();
        ++report.cached;
        continue;
      }
      TimedLaunch &timed = toTime.emplace_back();
      timed.backend = backend;
      std::string why;
      if (!timed.prepare(*descriptor, libraries, why)) {
        spdlog::debug("--tune: {} on {} failed: {}", kernelName, backend, why);
        timed.best = -1;
      }
    }
    std::string why;
    timeLaunches(toTime, why);
    if (!why.empty())
      spdlog::debug("--tune: {} failed on {}", kernelName, why);
    for (const TimedLaunch &timed : toTime) {
      ms[timed.backend] = timed.best;
      times[keys[timed.backend]][timed.backend] = timed.best;
      cacheChanged = true;
      ++report.measured;
    }
    // A failed run (negative) is never chosen.
    std::string best = chosen;
    double bestMs = std::numeric_limits<double>::infinity();
    for (const std::string &backend : candidates)
      if (ms.count(backend) && ms[backend] >= 0 && ms[backend] < bestMs) {
        bestMs = ms[backend];
        best = backend;
      }
    launch.setBackend(best);
    if (best != chosen)
      ++report.changed;
  });

  omp_set_num_threads(savedThreads);
  if (cacheChanged)
    writeCache(options.cachePath, times);
  return true;
}

} // namespace trainc
