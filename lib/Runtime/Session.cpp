//===- Session.cpp - opening a session, running its functions ------------===//
//
// A session is built from the manifest the compiler embedded in the model:
// it allocates every persistent tensor (initialized from the embedded
// weights, or zeros for optimizer state), one arena big enough for either
// generated function, and the scalars the step needs (step, seed, learning
// rate). Each API call checks its arguments against the manifest before
// any generated code runs.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Session.h"
#include "lib/Runtime/Communicator.h"
#include "lib/Runtime/Model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <omp.h>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <unistd.h>
#include <unordered_set>

namespace trainc::rt {

static thread_local std::string lastError;

const char *lastErrorMessage() { return lastError.c_str(); }

trainc_status fail(trainc_status status, const std::string &message) {
  lastError = message;
  return status;
}

/// What a launch that failed reports: a kernel rejected its input, or
/// (the `mpi` backend) the job's communication failed.
static trainc_status failureStatus(const Launch &launch) {
  return launch.backend == "mpi" ? TRAINC_ERROR_DEVICE : TRAINC_ERROR_KERNEL;
}

/// The sessions open now.
static std::mutex openSessionsMutex;
static std::unordered_set<const trainc_session *> &openSessions() {
  static auto *sessions = new std::unordered_set<const trainc_session *>;
  return *sessions;
}

bool isOpen(const trainc_session *session) {
  std::lock_guard<std::mutex> lock(openSessionsMutex);
  return session && openSessions().count(session);
}

void registerSession(const trainc_session *session) {
  std::lock_guard<std::mutex> lock(openSessionsMutex);
  openSessions().insert(session);
}

bool unregisterSession(const trainc_session *session) {
  std::lock_guard<std::mutex> lock(openSessionsMutex);
  return session && openSessions().erase(session);
}

/// TRAINC_ERROR_OUT_OF_MEMORY naming what `bytes` were for.
static trainc_status outOfMemory(size_t bytes, const std::string &what) {
  return fail(TRAINC_ERROR_OUT_OF_MEMORY,
              "out of memory: " + std::to_string(bytes) + " bytes for " + what);
}

/// Writes the elements of `window` (dense, `taps.shape`) into the
/// row-major tensor `full` of `shape`, at `taps.starts`.
static void placeWindow(const WindowTaps &taps,
                        const std::vector<int64_t> &shape, size_t elementBytes,
                        const char *window, char *full) {
  size_t rank = shape.size();
  int64_t count = 1;
  for (int64_t extent : taps.shape)
    count *= extent;
  std::vector<int64_t> at(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d)
      offset = offset * shape[d] + taps.starts[d] + at[d];
    std::memcpy(full + offset * elementBytes, window + i * elementBytes,
                elementBytes);
    for (size_t d = rank; d-- > 0;) {
      if (++at[d] < taps.shape[d])
        break;
      at[d] = 0;
    }
  }
}

trainc_status Session::readDense(const std::string &name, void *dense) const {
  const void *stored = hostData(name);
  if (!stored)
    return TRAINC_ERROR_DEVICE;
  auto layout = layouts.find(name);
  if (layout == layouts.end())
    std::memcpy(dense, stored, persistent.at(name).second.size());
  else
    layout->second->toDense(stored, dense);
  // The live taps of a windowed parameter are in its copy, unless the
  // parameter was set since (the copy is made again before the next step).
  auto window = windows.find(name);
  if (window != windows.end() && !copiesStale) {
    const void *copy = hostData(window->second.copy);
    if (!copy)
      return TRAINC_ERROR_DEVICE;
    const OperandInfo &type = persistent.at(name).first;
    placeWindow(window->second, type.shape, dtypeSize(type.dtype),
                static_cast<const char *>(copy), static_cast<char *>(dense));
  }
  return TRAINC_OK;
}

void Session::syncWindows() {
  if (copiesStale)
    return;
  for (const auto &[name, taps] : windows) {
    std::vector<char> dense(persistent.at(name).first.bytes());
    if (readDense(name, dense.data()) == TRAINC_OK)
      writeDense(name, dense.data());
  }
}

void Session::writeDense(const std::string &name, const void *dense) {
  void *stored = hostDataForWrite(name);
  auto layout = layouts.find(name);
  if (layout == layouts.end())
    std::memcpy(stored, dense, persistent.at(name).second.size());
  else
    layout->second->fromDense(dense, stored);
}

int64_t Session::step() const {
  if (!persistent.count("step"))
    return 0;
  const void *data = hostData("step");
  return data ? *static_cast<const int64_t *>(data) : 0;
}

bool isPersistentRole(const std::string &role) {
  return role == "parameter" || role == "state" || role == "constant" ||
         role == "optimizer_state" || role == "step" || role == "seed" ||
         role == "learning_rate" || role == "weight_copy";
}

bool isSavedState(const Session &session, const std::string &name) {
  return !session.weightCopies.count(name);
}

static bool parseFunction(const nlohmann::json &json, FunctionInfo &function,
                          std::string &error) {
  function.arenaSize = json.at("arena_size").get<int64_t>();
  for (const auto &argument : json.at("arguments")) {
    ArgumentInfo info;
    info.name = argument.at("name").get<std::string>();
    info.role = argument.at("role").get<std::string>();
    auto dtype = parseDType(argument.at("dtype").get<std::string>());
    if (!dtype) {
      error = "unknown dtype of argument " + info.name;
      return false;
    }
    info.type.dtype = *dtype;
    info.type.shape = argument.at("shape").get<std::vector<int64_t>>();
    info.layout = argument.value("layout", int64_t{-1});
    info.copyOf = argument.value("copy_of", std::string());
    info.windowStarts = argument.value("window_starts", std::vector<int64_t>());
    function.arguments.push_back(std::move(info));
  }
  return true;
}

/// CPU features the code was compiled for that this CPU lacks.
static std::vector<std::string>
missingCpuFeatures(const nlohmann::json &needed) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  std::vector<std::string> missing;
  if (flags.empty())
    return missing; // not Linux-like: nothing to check against
  for (const auto &feature : needed) {
    std::string name = feature.get<std::string>();
    std::string flag = name;
    for (char &c : flag)
      if (c == '.')
        c = '_';
    if (flags.find(" " + flag + " ") == std::string::npos)
      missing.push_back(name);
  }
  return missing;
}

/// A hash of what the compiler put in this library (its manifest and
/// kernel descriptors): processes of a data-parallel job compare it before
/// they share arenas.
static uint64_t libraryIdentity() {
  std::string text = trainc_model_manifest;
  for (const char *const *descriptor = trainc_model_kernels; *descriptor;
       ++descriptor)
    text.append(*descriptor).push_back('\n');
  return std::hash<std::string>()(text);
}

/// Prepares every launch of the generated code (library primitives are
/// created here, never during a step) and sizes the shared library scratch.
static trainc_status prepareLaunches(LaunchState &state) {
  size_t scratch = 0;
  for (const char *const *descriptor = trainc_model_kernels; *descriptor;
       ++descriptor) {
    if (state.launches.count(*descriptor))
      continue;
    PreparedLaunch prepared;
    std::string error;
    if (!prepareLaunch(*descriptor, state.libraries, prepared, error))
      return fail(failureStatus(prepared.launch),
                  "preparing a kernel: " + error);
    scratch = std::max(scratch, prepared.scratchBytes());
    state.launches.emplace(*descriptor, std::move(prepared));
  }
  state.libraryScratch = Buffer(scratch);
  if (scratch && !state.libraryScratch.data())
    return outOfMemory(scratch, "the kernel libraries' scratch");
  return TRAINC_OK;
}

/// Moves the persistent tensors of layout groups whose launches chose a
/// layout of their own (LibraryContext::layouts) into that layout.
static trainc_status storeInLibraryLayouts(Session &session) {
  const auto &chosen = session.launchState.libraries.layouts;
  for (const FunctionInfo *function : {&session.trainStep, &session.eval})
    for (const ArgumentInfo &argument : function->arguments) {
      auto it = chosen.find(argument.layout);
      if (it == chosen.end() || !it->second ||
          session.layouts.count(argument.name))
        continue;
      Buffer &stored = session.persistent.at(argument.name).second;
      Buffer dense(stored.size());
      if (stored.size() && !dense.data())
        return outOfMemory(stored.size(), "'" + argument.name + "'");
      std::memcpy(dense.data(), stored.data(), stored.size());
      session.layouts.emplace(argument.name, it->second);
      session.writeDense(argument.name, dense.data());
    }
  return TRAINC_OK;
}

/// The library's embedded initial weights are read once, when a session
/// opens: their pages go back to the system after the copy (a read-only
/// file mapping, so a later session faults them in from the library file
/// again). Otherwise they stay resident next to the session's own copy:
/// 45 MB for ResNet-18.
static void releaseEmbeddedWeights(const nlohmann::json &weights) {
  size_t bytes = 0;
  for (const auto &weight : weights)
    bytes = std::max(bytes, weight.at("offset").get<size_t>() +
                                weight.at("bytes").get<size_t>());
  auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<uintptr_t>(trainc_model_weights);
  uintptr_t first = (begin + page - 1) / page * page;
  uintptr_t last = (begin + bytes) / page * page;
  // Advice only: if the kernel declines, the pages just stay resident.
  if (last > first)
    madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

trainc_status openSession(const trainc_session_options *options,
                          Session &session) {
  nlohmann::json manifest =
      nlohmann::json::parse(trainc_model_manifest, nullptr, false);
  if (manifest.is_discarded())
    return fail(TRAINC_ERROR_INTERNAL, "the embedded manifest is not JSON");
  try {
    if (manifest.at("format").get<int>() != 1)
      return fail(TRAINC_ERROR_INTERNAL, "unknown manifest format");
    auto missing =
        missingCpuFeatures(manifest.at("cpu").at("checked_features"));
    if (!missing.empty()) {
      std::string list;
      for (const auto &feature : missing)
        list += (list.empty() ? "" : ", ") + feature;
      return fail(TRAINC_ERROR_UNSUPPORTED_CPU,
                  "this CPU lacks features the model was compiled for (" +
                      list + "); recompile with --cpu for this machine");
    }
    session.modelHash = manifest.at("hash").get<std::string>();
    std::string error;
    if (!parseFunction(manifest.at("functions").at("train_step"),
                       session.trainStep, error) ||
        !parseFunction(manifest.at("functions").at("eval"), session.eval,
                       error))
      return fail(TRAINC_ERROR_INTERNAL, error);
    if (manifest.at("functions").contains("refresh_weight_copies")) {
      if (!trainc_model_refresh_weight_copies)
        return fail(TRAINC_ERROR_INTERNAL,
                    "the manifest lists refresh_weight_copies, which the "
                    "library lacks");
      if (!parseFunction(manifest.at("functions").at("refresh_weight_copies"),
                         session.refreshCopies, error))
        return fail(TRAINC_ERROR_INTERNAL, error);
      std::map<std::string, const ArgumentInfo *> masters;
      for (const ArgumentInfo &argument : session.refreshCopies.arguments)
        if (argument.role != "weight_copy")
          masters[argument.name] = &argument;
      for (const ArgumentInfo &argument : session.refreshCopies.arguments)
        if (argument.role == "weight_copy") {
          session.weightCopies.insert(argument.name);
          if (argument.windowStarts.empty())
            continue;
          // A window inside its parameter, of the same element type.
          auto master = masters.find(argument.copyOf);
          bool inside =
              master != masters.end() &&
              master->second->type.dtype == argument.type.dtype &&
              argument.windowStarts.size() ==
                  master->second->type.shape.size() &&
              argument.type.shape.size() == master->second->type.shape.size();
          for (size_t d = 0; inside && d < argument.windowStarts.size(); ++d)
            inside = argument.windowStarts[d] >= 0 &&
                     argument.windowStarts[d] + argument.type.shape[d] <=
                         master->second->type.shape[d];
          if (!inside)
            return fail(TRAINC_ERROR_INTERNAL,
                        "the manifest's weight copy '" + argument.name +
                            "' is no window of a parameter '" +
                            argument.copyOf + "'");
          session.windows[argument.copyOf] = {
              argument.name, argument.windowStarts, argument.type.shape};
        }
      // Made from the initial weights before the first step.
      session.copiesStale = !session.weightCopies.empty();
    }

    // Persistent tensors, zero-initialized, then the embedded weights.
    for (const FunctionInfo *function : {&session.trainStep, &session.eval})
      for (const ArgumentInfo &argument : function->arguments)
        if (isPersistentRole(argument.role) &&
            !session.persistent.count(argument.name)) {
          Buffer storage(argument.type.bytes());
          if (argument.type.bytes() && !storage.data())
            return outOfMemory(argument.type.bytes(),
                               "'" + argument.name + "'");
          session.persistent.emplace(
              argument.name, std::make_pair(argument.type, std::move(storage)));
          if (argument.role == "parameter" || argument.role == "state")
            session.parameterNames.push_back(argument.name);
        }
    std::vector<unsigned char> fileWeights;
    const unsigned char *weights = trainc_model_weights;
    if (options && options->weights_path) {
      std::ifstream stream(options->weights_path, std::ios::binary);
      if (!stream)
        return fail(TRAINC_ERROR_IO, std::string("cannot read weights file '") +
                                         options->weights_path + "'");
      fileWeights.assign(std::istreambuf_iterator<char>(stream), {});
      weights = fileWeights.data();
    }
    for (const auto &weight : manifest.at("weights")) {
      auto it = session.persistent.find(weight.at("name").get<std::string>());
      if (it == session.persistent.end())
        continue;
      size_t offset = weight.at("offset").get<size_t>();
      size_t bytes = weight.at("bytes").get<size_t>();
      if (bytes != it->second.second.size() ||
          (!fileWeights.empty() && offset + bytes > fileWeights.size()))
        return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                    "weights for '" + it->first + "' do not match the model");
      std::memcpy(it->second.second.data(), weights + offset, bytes);
    }
    if (weights == trainc_model_weights)
      releaseEmbeddedWeights(manifest.at("weights"));
    auto setScalar = [&](const char *name, auto value) {
      auto it = session.persistent.find(name);
      if (it != session.persistent.end())
        std::memcpy(it->second.second.data(), &value, sizeof(value));
    };
    setScalar("seed", static_cast<int64_t>(options ? options->seed : 0));
    setScalar("learning_rate",
              static_cast<float>(
                  manifest.at("training").at("learning_rate").get<double>()));
    if (manifest.at("target").at("kind").get<std::string>() == "cuda") {
      // The arena, the persistent tensors and the constants on the GPU.
      if (trainc_status status = openDevice(session))
        return status;
    }
    if (manifest.contains("profile")) {
      Profile &profile = session.launchState.profile;
      profile.seconds.assign(manifest.at("profile").size(), 0.0);
      profile.calls.assign(profile.seconds.size(), 0);
    }
    if (manifest.contains("numerics"))
      session.launchState.numerics =
          parseNumericsChecks(manifest.at("numerics"));
  } catch (const std::exception &e) {
    return fail(TRAINC_ERROR_INTERNAL,
                std::string("malformed manifest: ") + e.what());
  }
  int threads = options && options->num_threads > 0 ? options->num_threads
                                                    : omp_get_num_procs();
  // One thread pool per process: GNU OpenMP's. OpenBLAS stays at one thread
  // (the kernels call it from OpenMP loops; see kernels/Blas.h). oneDNN
  // runs on the same pool and fixes its thread count when a primitive is
  // created: set it before preparing the launches.
  omp_set_num_threads(threads);
  if (trainc_status status = prepareLaunches(session.launchState))
    return status;
  if (!session.cuda) {
    // After the launches: a data-parallel job's communicator (made by its
    // first all-reduce's prepare hook) may place the arena in memory that
    // every process of the job on this host maps.
    size_t arena =
        std::max(session.trainStep.arenaSize, session.eval.arenaSize);
    const LibraryContext &libraries = session.launchState.libraries;
    std::string error;
    if (libraries.communicator) {
      if (!libraries.communicator->allocateArena(arena, libraryIdentity(),
                                                 libraries.collectives,
                                                 session.arena, error))
        return fail(TRAINC_ERROR_DEVICE,
                    "allocating the data-parallel arena: " + error);
    } else {
      session.arena = Buffer(arena);
    }
    if (arena && !session.arena.data())
      return outOfMemory(arena, "the arena of intermediates");
  }
  return storeInLibraryLayouts(session);
}

trainc_status checkTensor(const trainc_tensor *tensor,
                          const ArgumentInfo &argument) {
  if (!tensor || !tensor->data)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "tensor for '" + argument.name + "' is null");
  if (dtypeName(static_cast<DType>(tensor->dtype)) !=
      std::string(dtypeName(argument.type.dtype)))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "tensor for '" + argument.name + "' should be " +
                    dtypeName(argument.type.dtype));
  bool same =
      tensor->rank == static_cast<int32_t>(argument.type.shape.size()) &&
      (tensor->rank == 0 || tensor->shape);
  for (int32_t i = 0; same && i < tensor->rank; ++i)
    same = tensor->shape[i] == argument.type.shape[i];
  if (!same) {
    std::string expected;
    for (int64_t d : argument.type.shape)
      expected += (expected.empty() ? "" : "x") + std::to_string(d);
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "tensor for '" + argument.name +
                                                   "' should have shape [" +
                                                   expected + "]");
  }
  return TRAINC_OK;
}

trainc_status run(Session &session, const FunctionInfo &function,
                  int32_t (*entry)(void *, void *const *, void *),
                  const trainc_tensor *inputs, int32_t numInputs,
                  const trainc_tensor *labels, trainc_tensor *outputs,
                  int32_t numOutputs) {
  std::vector<void *> arguments;
  int32_t nextInput = 0, nextOutput = 0;
  for (const ArgumentInfo &argument : function.arguments) {
    const trainc_tensor *given = nullptr;
    if (argument.role == "input") {
      if (nextInput >= numInputs || !inputs)
        return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                    "missing input '" + argument.name + "'");
      given = &inputs[nextInput++];
    } else if (argument.role == "labels") {
      given = labels;
    } else if (argument.role == "output" && outputs) {
      if (nextOutput >= numOutputs)
        return fail(TRAINC_ERROR_INVALID_ARGUMENT, "too few output tensors");
      given = &outputs[nextOutput++];
    }
    if (given || argument.role == "input" || argument.role == "labels") {
      if (trainc_status status = checkTensor(given, argument))
        return status;
      arguments.push_back(given->data);
      continue;
    }
    if (isPersistentRole(argument.role)) {
      arguments.push_back(session.persistent.at(argument.name).second.data());
      continue;
    }
    // The loss (or an output nobody asked for): session scratch.
    auto &slot = session.scratch[argument.name];
    if (slot.second.size() != argument.type.bytes()) {
      slot = {argument.type, Buffer(argument.type.bytes())};
      if (argument.type.bytes() && !slot.second.data())
        return outOfMemory(argument.type.bytes(), "'" + argument.name + "'");
    }
    arguments.push_back(slot.second.data());
  }
  if (nextInput != numInputs)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "expected " + std::to_string(nextInput) + " inputs, got " +
                    std::to_string(numInputs));
  if (session.cuda)
    return runOnDevice(session, function, entry, arguments);
  session.launchState.error.clear();
  if (int32_t status =
          entry(&session.launchState, arguments.data(), session.arena.data()))
    return fail(static_cast<trainc_status>(status), session.launchState.error);
  return TRAINC_OK;
}

trainc_status refreshWeightCopies(Session &session) {
  if (!session.copiesStale)
    return TRAINC_OK;
  if (trainc_status status = run(session, session.refreshCopies,
                                 trainc_model_refresh_weight_copies, nullptr, 0,
                                 nullptr, nullptr, 0))
    return status;
  session.copiesStale = false;
  return TRAINC_OK;
}

} // namespace trainc::rt

using namespace trainc::rt;

extern "C" {

int32_t trainc_rt_launch(void *state, const char *descriptor,
                         void *const *inputs, void *const *outputs) {
  auto *launchState = static_cast<LaunchState *>(state);
  auto it = launchState->launches.find(descriptor);
  if (it == launchState->launches.end()) {
    launchState->error = std::string("kernel descriptor not prepared when the "
                                     "session opened: ") +
                         descriptor;
    return TRAINC_ERROR_INTERNAL;
  }
  if (!it->second.run(inputs, outputs, launchState->libraryScratch.data(),
                      launchState->error))
    return failureStatus(it->second.launch);
  return TRAINC_OK;
}

int32_t trainc_rt_check_failed(void *state, const char *message,
                               int64_t status) {
  std::string error = message;
  size_t at = error.find("{}");
  if (at != std::string::npos)
    error.replace(at, 2, std::to_string(status));
  static_cast<LaunchState *>(state)->error = error;
  return TRAINC_ERROR_KERNEL;
}

} // extern "C"
