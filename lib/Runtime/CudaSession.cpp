//===- CudaSession.cpp - a session of a --target cuda library -------------===//
//
// The arena, the persistent tensors and the constants live on the GPU for
// the whole session. The host keeps a copy of each persistent tensor, for
// the C API's reads and writes (parameters, checkpoints, export, the
// learning rate): a step marks the host copies of its persistent
// arguments stale, a read downloads a stale one, and a write marks the
// device copy stale, uploaded before the next step. A step uploads its
// inputs and labels and downloads its loss and outputs; the download
// waits for the step's kernels (one stream, the legacy default one).
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Model.h"
#include "lib/Runtime/Session.h"

#include <cstdlib>

namespace trainc::rt {

const void *Session::hostData(const std::string &name) const {
  const Buffer &stored = persistent.at(name).second;
  if (!hostStale.count(name))
    return stored.data();
  std::string error;
  cuda->makeCurrent();
  if (!cuda->download(const_cast<void *>(stored.data()),
                      devicePersistent.at(name).address(), stored.size(),
                      error)) {
    fail(TRAINC_ERROR_DEVICE, "reading '" + name + "' from the GPU: " + error);
    return nullptr;
  }
  hostStale.erase(name);
  return stored.data();
}

void *Session::hostDataForWrite(const std::string &name) {
  if (cuda) {
    hostStale.erase(name);
    deviceStale.insert(name);
  }
  return persistent.at(name).second.data();
}

/// The device buffer of a step's input, labels or output: one per
/// function and argument, allocated when the session opens.
static std::string stagingKey(const FunctionInfo &function,
                              const ArgumentInfo &argument) {
  return std::to_string(reinterpret_cast<uintptr_t>(&function)) + ":" +
         argument.name;
}

/// Device memory of `bytes` into `buffer`, or an error status.
static trainc_status allocateOn(CudaDevice &device, size_t bytes,
                                const std::string &what, DeviceBuffer &buffer) {
  std::string error;
  uint64_t address = device.allocate(bytes, error);
  if (!address)
    return fail(error.rfind("out of GPU memory", 0) == 0
                    ? TRAINC_ERROR_OUT_OF_MEMORY
                    : TRAINC_ERROR_DEVICE,
                error + " for " + what);
  buffer = DeviceBuffer(&device, address, bytes);
  return TRAINC_OK;
}

trainc_status openDevice(Session &session) {
  std::vector<GpuImage> images;
  for (const trainc_model_gpu_image *image = trainc_model_gpu_images;
       image->arch; ++image)
    images.push_back({image->arch, image->data, image->size});
  trainc_status status = TRAINC_OK;
  std::string error;
  session.cuda = CudaDevice::open(images, status, error);
  if (!session.cuda)
    return fail(status, error);
  CudaDevice &device = *session.cuda;
  session.launchState.cuda = &device;
  // The library kernels prepared next find the device here.
  setActiveCudaDevice(&device);
  session.graphs.device = &device;
  const char *graphs = std::getenv("TRAINC_CUDA_GRAPHS");
  session.useGraphs = !graphs || std::string(graphs) != "0";
  size_t arena = std::max(session.trainStep.arenaSize, session.eval.arenaSize);
  if (trainc_status status = allocateOn(
          device, arena, "the arena of intermediates", session.deviceArena))
    return status;
  for (const auto &[name, tensor] : session.persistent) {
    DeviceBuffer &buffer = session.devicePersistent[name];
    if (trainc_status status =
            allocateOn(device, tensor.second.size(), "'" + name + "'", buffer))
      return status;
    if (!device.upload(buffer.address(), tensor.second.data(),
                       tensor.second.size(), error))
      return fail(TRAINC_ERROR_DEVICE, error);
  }
  for (const FunctionInfo *function : {&session.trainStep, &session.eval})
    for (const ArgumentInfo &argument : function->arguments)
      if (!isPersistentRole(argument.role))
        if (trainc_status status = allocateOn(
                device, argument.type.bytes(), "'" + argument.name + "'",
                session.deviceStaging[stagingKey(*function, argument)]))
          return status;
  for (uint64_t i = 0; i < trainc_model_num_constants; ++i) {
    DeviceBuffer buffer;
    size_t bytes = trainc_model_constant_sizes[i];
    if (trainc_status status =
            allocateOn(device, bytes, "a constant of the model", buffer))
      return status;
    if (!device.upload(buffer.address(), trainc_model_constants[i], bytes,
                       error))
      return fail(TRAINC_ERROR_DEVICE, error);
    session.launchState.constants.push_back(buffer.address());
    session.deviceConstants.push_back(std::move(buffer));
  }
  return TRAINC_OK;
}

/// Records the step as graphs (session.graphs), running nothing; on any
/// failure the session keeps stepping eagerly.
static void capture(Session &session, ModelEntry entry, void *const *addresses,
                    void *arena) {
  CudaDevice &device = *session.cuda;
  LaunchState &state = session.launchState;
  std::string error;
  if (!device.beginCapture(error)) {
    session.useGraphs = false;
    return;
  }
  state.capturing = &session.graphs;
  int32_t status = entry(&state, addresses, arena);
  // A check ends a segment and begins the next: the last one ends here.
  void *last = state.capturing ? device.endCapture(error) : nullptr;
  state.capturing = nullptr;
  state.error.clear();
  if (status != TRAINC_OK || !last) {
    if (last)
      device.destroyGraph(last);
    session.graphs.clear();
    session.useGraphs = false;
    return;
  }
  session.graphs.segments.push_back({last, nullptr, nullptr});
}

/// One step from the captured graphs: each segment, then its check.
static int32_t replay(Session &session) {
  CudaDevice &device = *session.cuda;
  LaunchState &state = session.launchState;
  for (const CapturedStep::Segment &segment : session.graphs.segments) {
    if (!device.launchGraph(segment.graph, state.error))
      return TRAINC_ERROR_DEVICE;
    if (segment.status)
      if (int32_t status =
              trainc_rt_cuda_check(&state, segment.status, segment.message))
        return status;
  }
  return TRAINC_OK;
}

trainc_status runOnDevice(Session &session, const FunctionInfo &function,
                          ModelEntry entry, const std::vector<void *> &host) {
  CudaDevice &device = *session.cuda;
  device.makeCurrent();
  setActiveCudaDevice(&device);
  std::string error;
  for (const std::string &name : session.deviceStale) {
    const Buffer &stored = session.persistent.at(name).second;
    if (!device.upload(session.devicePersistent.at(name).address(),
                       stored.data(), stored.size(), error))
      return fail(TRAINC_ERROR_DEVICE,
                  "writing '" + name + "' to the GPU: " + error);
  }
  session.deviceStale.clear();
  std::vector<void *> addresses(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    const ArgumentInfo &argument = function.arguments[i];
    if (isPersistentRole(argument.role)) {
      addresses[i] = reinterpret_cast<void *>(
          session.devicePersistent.at(argument.name).address());
      continue;
    }
    const DeviceBuffer &staging =
        session.deviceStaging.at(stagingKey(function, argument));
    size_t bytes = argument.type.bytes();
    addresses[i] = reinterpret_cast<void *>(staging.address());
    if ((argument.role == "input" || argument.role == "labels") &&
        !device.upload(staging.address(), host[i], bytes, error))
      return fail(TRAINC_ERROR_DEVICE,
                  "copying '" + argument.name + "' to the GPU: " + error);
  }
  session.launchState.error.clear();
  void *arena = reinterpret_cast<void *>(session.deviceArena.address());
  int32_t status = TRAINC_OK;
  bool graphs = session.useGraphs && entry == trainc_model_train_step;
  if (graphs && session.graphs.segments.empty() && session.eagerSteps > 0)
    capture(session, entry, addresses.data(), arena);
  if (graphs && !session.graphs.segments.empty()) {
    status = replay(session);
  } else {
    status = entry(&session.launchState, addresses.data(), arena);
    ++session.eagerSteps;
  }
  // Whatever ran has changed the device copies.
  for (const ArgumentInfo &argument : function.arguments)
    if (isPersistentRole(argument.role))
      session.hostStale.insert(argument.name);
  if (status)
    return fail(static_cast<trainc_status>(status), session.launchState.error);
  for (size_t i = 0; i < host.size(); ++i) {
    const ArgumentInfo &argument = function.arguments[i];
    if (isPersistentRole(argument.role) || argument.role == "input" ||
        argument.role == "labels")
      continue;
    if (!device.download(
            host[i],
            session.deviceStaging.at(stagingKey(function, argument)).address(),
            argument.type.bytes(), error))
      return fail(TRAINC_ERROR_DEVICE, "the step on the GPU: " + error);
  }
  return TRAINC_OK;
}

} // namespace trainc::rt

using namespace trainc::rt;

extern "C" {

int32_t trainc_rt_cuda_launch(void *state, const char *name, int64_t blocks,
                              int64_t threads, void *const *addresses,
                              int32_t count) {
  auto *launchState = static_cast<LaunchState *>(state);
  if (!launchState->cuda->launch(name, blocks, threads, addresses, count,
                                 launchState->error))
    return TRAINC_ERROR_DEVICE;
  return TRAINC_OK;
}

int32_t trainc_rt_cuda_check(void *state, void *status, const char *message) {
  auto *launchState = static_cast<LaunchState *>(state);
  if (CapturedStep *captured = launchState->capturing) {
    // Captured: the segment ends here; the check runs between segments.
    void *graph = launchState->cuda->endCapture(launchState->error);
    if (!graph) {
      launchState->capturing = nullptr;
      return TRAINC_ERROR_DEVICE;
    }
    captured->segments.push_back({graph, status, message});
    if (!launchState->cuda->beginCapture(launchState->error)) {
      launchState->capturing = nullptr;
      return TRAINC_ERROR_DEVICE;
    }
    return TRAINC_OK;
  }
  int64_t value = 0;
  if (!launchState->cuda->download(&value, reinterpret_cast<uint64_t>(status),
                                   sizeof(value), launchState->error))
    return TRAINC_ERROR_DEVICE;
  return value == 0 ? TRAINC_OK : trainc_rt_check_failed(state, message, value);
}

void *trainc_rt_cuda_constant(void *state, int32_t index) {
  return reinterpret_cast<void *>(
      static_cast<LaunchState *>(state)->constants[index]);
}

} // extern "C"
