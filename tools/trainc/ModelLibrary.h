//===- ModelLibrary.h - a compiled model loaded with dlopen ----*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_MODELLIBRARY_H
#define TRAINC_TOOLS_TRAINC_MODELLIBRARY_H

#include "trainc/runtime.h"

#include "llvm/Support/Error.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace trainc::cli {

/// The C API of one model library, resolved with dlopen/dlsym (RTLD_LOCAL:
/// several models can be loaded side by side).
struct ModelApi {
  void *handle = nullptr;
  decltype(&trainc_api_version) apiVersion;
  decltype(&trainc_manifest) manifest;
  decltype(&trainc_last_error) lastError;
  decltype(&trainc_session_open) open;
  decltype(&trainc_session_close) close;
  decltype(&trainc_get_memory) getMemory;
  decltype(&trainc_set_learning_rate) setLearningRate;
  decltype(&trainc_get_step) getStep;
  decltype(&trainc_get_loss_scale) getLossScale;
  decltype(&trainc_train_step) trainStep;
  decltype(&trainc_forward) forward;
  decltype(&trainc_num_parameters) numParameters;
  decltype(&trainc_parameter_name) parameterName;
  decltype(&trainc_get_parameter) getParameter;
  decltype(&trainc_save_checkpoint) saveCheckpoint;
  decltype(&trainc_load_checkpoint) loadCheckpoint;
  decltype(&trainc_export_onnx) exportOnnx;
  decltype(&trainc_get_profile) getProfile;
  /// Null in libraries built before data-parallel training (one process).
  decltype(&trainc_get_world) getWorld = nullptr;
  decltype(&trainc_all_reduce_sum) allReduceSum = nullptr;

  ~ModelApi();
};

llvm::Expected<std::unique_ptr<ModelApi>> loadModelLibrary(const std::string &path);

/// One tensor the caller owns, in the C API's form (zero-filled).
struct OwnedTensor {
  trainc_tensor tensor{};
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  OwnedTensor(trainc_dtype dtype, std::vector<int64_t> dims, size_t elementSize);
  OwnedTensor(const OwnedTensor &) = delete; // `tensor` points into it
  OwnedTensor &operator=(const OwnedTensor &) = delete;
};

/// An argument of a model function, as the manifest lists it.
struct Argument {
  std::string name, role, dtype;
  std::vector<int64_t> shape;
};

/// The arguments of `function` ("train_step" or "eval") with `role`.
std::vector<Argument> argumentsWithRole(const nlohmann::json &manifest,
                                        const char *function,
                                        const std::string &role);

} // namespace trainc::cli

#endif
