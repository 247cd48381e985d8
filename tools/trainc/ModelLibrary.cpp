//===- ModelLibrary.cpp - a compiled model loaded with dlopen -------------===//
#include "tools/trainc/ModelLibrary.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

namespace trainc::cli {

// Model libraries stay loaded until the process exits (RTLD_NODELETE): the
// OpenMP runtime they bring keeps worker threads whose code must not be
// unmapped under them.
ModelApi::~ModelApi() = default;

llvm::Expected<std::unique_ptr<ModelApi>> loadModelLibrary(const std::string &path) {
  std::string resolved = path.find('/') == std::string::npos ? "./" + path : path;
  auto api = std::make_unique<ModelApi>();
  api->handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!api->handle)
    return llvm::createStringError(std::string("cannot load model library: ") +
                                   dlerror());
  std::string missing;
  auto resolve = [&](auto &slot, const char *name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
        dlsym(api->handle, name));
    if (!slot)
      missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  resolve(api->apiVersion, "trainc_api_version");
  resolve(api->manifest, "trainc_manifest");
  resolve(api->lastError, "trainc_last_error");
  resolve(api->open, "trainc_session_open");
  resolve(api->close, "trainc_session_close");
  resolve(api->getMemory, "trainc_get_memory");
  resolve(api->setLearningRate, "trainc_set_learning_rate");
  resolve(api->getStep, "trainc_get_step");
  resolve(api->getLossScale, "trainc_get_loss_scale");
  resolve(api->trainStep, "trainc_train_step");
  resolve(api->forward, "trainc_forward");
  resolve(api->numParameters, "trainc_num_parameters");
  resolve(api->parameterName, "trainc_parameter_name");
  resolve(api->getParameter, "trainc_get_parameter");
  resolve(api->saveCheckpoint, "trainc_save_checkpoint");
  resolve(api->loadCheckpoint, "trainc_load_checkpoint");
  resolve(api->exportOnnx, "trainc_export_onnx");
  resolve(api->getProfile, "trainc_get_profile");
  if (!missing.empty())
    return llvm::createStringError("'" + path +
                                   "' is not a trainc model library (missing " +
                                   missing + ")");
  api->getWorld = reinterpret_cast<decltype(api->getWorld)>(
      dlsym(api->handle, "trainc_get_world"));
  api->allReduceSum = reinterpret_cast<decltype(api->allReduceSum)>(
      dlsym(api->handle, "trainc_all_reduce_sum"));
  if (api->apiVersion() != TRAINC_API_VERSION)
    return llvm::createStringError(
        "'" + path + "' uses C API version " + std::to_string(api->apiVersion()) +
        ", this trainc speaks " + std::to_string(TRAINC_API_VERSION));
  return api;
}

OwnedTensor::OwnedTensor(trainc_dtype dtype, std::vector<int64_t> dims,
                         size_t elementSize)
    : shape(std::move(dims)) {
  size_t count = 1;
  for (int64_t d : shape)
    count *= d;
  bytes.resize(count * elementSize);
  tensor = {dtype, static_cast<int32_t>(shape.size()), shape.data(),
            bytes.data()};
}

std::vector<Argument> argumentsWithRole(const nlohmann::json &manifest,
                                        const char *function,
                                        const std::string &role) {
  std::vector<Argument> found;
  for (const auto &argument : manifest["functions"][function]["arguments"])
    if (argument["role"] == role)
      found.push_back({argument["name"], argument["role"], argument["dtype"],
                       argument["shape"].get<std::vector<int64_t>>()});
  return found;
}

} // namespace trainc::cli
