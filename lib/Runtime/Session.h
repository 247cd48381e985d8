//===- Session.h - a training session --------------------------*- C++ -*-===//
#ifndef TRAINC_LIB_RUNTIME_SESSION_H
#define TRAINC_LIB_RUNTIME_SESSION_H

#include "lib/Runtime/Buffer.h"
#include "lib/Runtime/CudaDevice.h"
#include "lib/Runtime/Launch.h"
#include "trainc/runtime.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainc::rt {

/// One argument of a generated function, from the manifest.
struct ArgumentInfo {
  std::string name, role;
  OperandInfo type;
  int64_t layout = -1; ///< its layout group (LibraryContext::layouts), or -1
  /// A weight copy: its parameter, and (a copy that holds the parameter's
  /// live taps for the training steps) where its window starts.
  std::string copyOf;
  std::vector<int64_t> windowStarts;
};

/// A parameter whose live taps the training steps update in a weight copy
/// alone (--trainc-compact-window-updates): the parameter holds the rest.
struct WindowTaps {
  std::string copy;
  std::vector<int64_t> starts, shape;
};

struct FunctionInfo {
  std::vector<ArgumentInfo> arguments;
  int64_t arenaSize = 0;
};

/// Time per launch of a library built with `trainc compile --profile`,
/// indexed like the manifest's "profile" list (empty otherwise).
struct Profile {
  std::vector<double> seconds;
  std::vector<int64_t> calls;
  std::chrono::steady_clock::time_point started;
};

/// A library built with `trainc compile --check-numerics` tests the float
/// buffers of each launch, and a function's arguments when it starts:
/// entry i of the manifest's "numerics" list (CheckNumerics.cpp).
struct NumericsOperand {
  int32_t slot = 0;  ///< its index in the pointer array generated code passes
  std::string label; ///< "input 1", "parameter 'fc.weight'", ...
  DType dtype = DType::F32;
  int64_t count = 0;
  bool output = false;
};
struct NumericsCheck {
  /// "train_step: launch 3, conv (dnnl; 8x1x28x28, 16x1x3x3 -> 8x16x28x28)"
  std::string where;
  std::vector<NumericsOperand> operands;
  bool arguments = false; ///< a function's arguments, not a launch
};

/// What generated code receives as `state`: every launch of the model,
/// prepared when the session opens and found by its descriptor's address,
/// the scratch memory kernel libraries share, and the last kernel error.
struct LaunchState {
  std::unordered_map<const char *, PreparedLaunch> launches;
  LibraryContext libraries;
  Buffer libraryScratch; ///< the largest PreparedLaunch::scratchBytes()
  std::string error;
  Profile profile;
  std::vector<NumericsCheck> numerics; ///< --check-numerics (else empty)
  /// The CUDA target: the device the kernels launch on, and the device
  /// copy of each of the model's constants (trainc_rt_cuda_constant).
  CudaDevice *cuda = nullptr;
  std::vector<uint64_t> constants;
  /// While a step is being captured (CUDA graphs): where its segments go.
  CapturedStep *capturing = nullptr;
};

struct Session {
  std::string modelHash;
  FunctionInfo trainStep, eval;
  /// Libraries that keep low-precision copies of the weights
  /// (--amp, --trainc-keep-weight-copies): @refresh_weight_copies, the
  /// copies' names, and whether the parameters changed from outside since
  /// the copies were made (the next step refreshes them first).
  FunctionInfo refreshCopies;
  std::set<std::string> weightCopies;
  bool copiesStale = false;
  /// Parameters by name whose live taps live in a copy between refreshes:
  /// reading one (readDense) reads those taps from the copy while the
  /// copies are current, and syncWindows writes them back.
  std::map<std::string, WindowTaps> windows;
  /// Writes the live taps of every windowed parameter into it (before the
  /// parameters change from outside and the copies go stale).
  void syncWindows();
  /// Persistent tensors by name: parameters, state, constants, optimizer
  /// state, and "step", "seed", "learning_rate".
  std::map<std::string, std::pair<OperandInfo, Buffer>> persistent;
  /// The persistent tensors a library keeps in a layout of its own; the
  /// rest are dense row-major.
  std::map<std::string, std::shared_ptr<const StoredLayout>> layouts;
  std::vector<std::string> parameterNames; ///< parameters + state, in order
  std::map<std::string, std::pair<OperandInfo, Buffer>> scratch; ///< outputs
  Buffer arena;
  LaunchState launchState;

  /// The CUDA target (null on the CPU): persistent tensors live on the
  /// device; `persistent` holds host copies, refreshed on demand.
  std::unique_ptr<CudaDevice> cuda;
  std::map<std::string, DeviceBuffer> devicePersistent;
  DeviceBuffer deviceArena;
  /// Device buffers of the inputs, labels and outputs of each function
  /// (CudaSession.cpp's stagingKey).
  std::map<std::string, DeviceBuffer> deviceStaging;
  std::vector<DeviceBuffer> deviceConstants;
  /// The training step as CUDA graphs, captured at the second step
  /// (the first runs eagerly); off with $TRAINC_CUDA_GRAPHS=0, or when a
  /// capture failed.
  CapturedStep graphs;
  bool useGraphs = true;
  int64_t eagerSteps = 0;
  /// Persistent tensors whose device copy is newer than the host copy
  /// (after a step), and the other way round (after a write).
  mutable std::set<std::string> hostStale;
  std::set<std::string> deviceStale;

  int64_t step() const;
  /// Copies persistent tensor `name` (which exists) out of, or into, its
  /// storage as dense row-major bytes, converting a library's layout.
  trainc_status readDense(const std::string &name, void *dense) const;
  void writeDense(const std::string &name, const void *dense);
  /// The host copy of persistent tensor `name`, current (the CUDA target
  /// downloads it after a step); null after a device error, with the
  /// error recorded (fail).
  const void *hostData(const std::string &name) const;
  /// The host copy of `name` for the caller to overwrite whole; the device
  /// copy is replaced before the next step.
  void *hostDataForWrite(const std::string &name);
};

/// Records `message` as this thread's last error and returns `status`.
trainc_status fail(trainc_status status, const std::string &message);

/// The manifest's "numerics" list (a --check-numerics build); throws on a
/// malformed entry, as the manifest's other readers do.
std::vector<NumericsCheck> parseNumericsChecks(const nlohmann::json &list);

/// Whether the session owns an argument of this role (parameters, state,
/// optimizer state, ...), rather than the caller or the step.
bool isPersistentRole(const std::string &role);

/// Whether persistent tensor `name` is saved in checkpoints and may be set
/// by the caller: all but the weight copies, which are derived from the
/// parameters.
bool isSavedState(const Session &session, const std::string &name);

/// A generated function: trainc_model_train_step or trainc_model_eval.
using ModelEntry = int32_t (*)(void *, void *const *, void *);

/// The CUDA target (CudaSession.cpp): opens the device and places the
/// arena, the persistent tensors (from their host copies) and the
/// constants there.
trainc_status openDevice(Session &session);
/// Runs `entry` on the device: `host` holds each argument's host pointer
/// as the CPU target would pass it; inputs and labels are uploaded,
/// outputs and the loss downloaded into them after the step.
trainc_status runOnDevice(Session &session, const FunctionInfo &function,
                          ModelEntry entry, const std::vector<void *> &host);

} // namespace trainc::rt

/// The C API's opaque handle is the session.
struct trainc_session : trainc::rt::Session {};

namespace trainc::rt {
/// Whether `session` is a session trainc_session_open returned and
/// trainc_session_close has not closed (every C API call checks it: a
/// closed session gives TRAINC_ERROR_INVALID_ARGUMENT, not a crash).
bool isOpen(const trainc_session *session);
/// The message of a call on a session that is not open.
inline constexpr const char *kNotOpen = "the session is null or closed";
/// Adds `session` to the open ones (trainc_session_open).
void registerSession(const trainc_session *session);
/// Removes `session` from the open ones; false if it was not open
/// (trainc_session_close then leaves it alone).
bool unregisterSession(const trainc_session *session);

// Session.cpp, for the C API (SessionApi.cpp).

/// This thread's last error message (fail).
const char *lastErrorMessage();
/// Builds `session` from the manifest and `options` (null: defaults).
trainc_status openSession(const trainc_session_options *options,
                          Session &session);
/// Checks a caller's tensor against the argument it feeds.
trainc_status checkTensor(const trainc_tensor *tensor,
                          const ArgumentInfo &argument);
/// Runs `entry` with the caller's tensors bound to inputs, labels and
/// outputs.
trainc_status run(Session &session, const FunctionInfo &function,
                  int32_t (*entry)(void *, void *const *, void *),
                  const trainc_tensor *inputs, int32_t numInputs,
                  const trainc_tensor *labels, trainc_tensor *outputs,
                  int32_t numOutputs);
/// Casts the parameters into their low-precision copies if they changed
/// from outside since the last step (or none ran yet).
trainc_status refreshWeightCopies(Session &session);
} // namespace trainc::rt

#endif
