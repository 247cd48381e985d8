//===- SessionApi.cpp - the C API: sessions, steps, parameters ------------===//
//
// The entry points of include/trainc/runtime.h on sessions: each checks
// its arguments (an open session, non-null pointers, tensors against the
// manifest) before anything runs, then calls into Session.cpp. The
// checkpoint and export entry points are in Checkpoint.cpp and
// OnnxExport.cpp.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Model.h"
#include "lib/Runtime/Session.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <new>

using namespace trainc::rt;

extern "C" {

int32_t trainc_api_version(void) { return TRAINC_API_VERSION; }
const char *trainc_manifest(void) { return trainc_model_manifest; }
const char *trainc_last_error(void) { return lastErrorMessage(); }

trainc_status trainc_session_open(const trainc_session_options *options,
                                  trainc_session **session) {
  if (!session)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "session pointer is null");
  *session = nullptr;
  if (options && options->num_threads < 0)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "num_threads must be 0 (all cores) or positive, got " +
                    std::to_string(options->num_threads));
  auto created =
      std::unique_ptr<trainc_session>(new (std::nothrow) trainc_session);
  if (!created)
    return fail(TRAINC_ERROR_INTERNAL, "out of memory");
  if (trainc_status status = openSession(options, *created))
    return status;
  *session = created.release();
  registerSession(*session);
  return TRAINC_OK;
}

void trainc_session_close(trainc_session *session) {
  if (unregisterSession(session))
    delete session;
}

trainc_status trainc_get_memory(const trainc_session *session,
                                size_t *arena_bytes,
                                size_t *library_scratch_bytes) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (arena_bytes)
    *arena_bytes = session->arena.size();
  if (library_scratch_bytes)
    *library_scratch_bytes = session->launchState.libraryScratch.size();
  return TRAINC_OK;
}

trainc_status trainc_set_learning_rate(trainc_session *session, double lr) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!(lr > 0))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "the learning rate must be positive");
  if (session->persistent.count("learning_rate")) {
    float value = static_cast<float>(lr);
    std::memcpy(session->hostDataForWrite("learning_rate"), &value,
                sizeof(value));
  }
  return TRAINC_OK;
}

trainc_status trainc_get_learning_rate(const trainc_session *session,
                                       double *lr) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!lr)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  float value = 0;
  if (session->persistent.count("learning_rate")) {
    const void *stored = session->hostData("learning_rate");
    if (!stored)
      return TRAINC_ERROR_DEVICE;
    std::memcpy(&value, stored, sizeof(value));
  }
  *lr = value;
  return TRAINC_OK;
}

trainc_status trainc_get_step(const trainc_session *session, int64_t *step) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!step)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  *step = session->step();
  return TRAINC_OK;
}

trainc_status trainc_get_loss_scale(const trainc_session *session,
                                    double *scale, int64_t *skipped_steps) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  auto scaleTensor = session->persistent.find("amp.loss_scale");
  auto skippedTensor = session->persistent.find("amp.skipped_steps");
  if (scaleTensor == session->persistent.end() ||
      skippedTensor == session->persistent.end())
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "the model has no loss scaling (compile it with --amp fp16)");
  const void *scaleData = session->hostData("amp.loss_scale");
  const void *skippedData = session->hostData("amp.skipped_steps");
  if (!scaleData || !skippedData)
    return TRAINC_ERROR_DEVICE;
  if (scale)
    *scale = *static_cast<const float *>(scaleData);
  if (skipped_steps)
    *skipped_steps = *static_cast<const int64_t *>(skippedData);
  return TRAINC_OK;
}

trainc_status trainc_train_step(trainc_session *session,
                                const trainc_tensor *inputs, int32_t num_inputs,
                                const trainc_tensor *labels, float *loss) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (trainc_status status = refreshWeightCopies(*session))
    return status;
  if (trainc_status status =
          run(*session, session->trainStep, trainc_model_train_step, inputs,
              num_inputs, labels, nullptr, 0))
    return status;
  auto it = session->scratch.find("loss");
  float value = it == session->scratch.end()
                    ? 0.0f
                    : *static_cast<const float *>(it->second.second.data());
  if (loss)
    *loss = value;
  if (!std::isfinite(value))
    return fail(TRAINC_ERROR_NOT_FINITE,
                "the loss of step " + std::to_string(session->step()) + " is " +
                    (std::isnan(value) ? "NaN" : "infinite") +
                    ": a NaN or an infinity in the data, the weights or a "
                    "kernel");
  return TRAINC_OK;
}

trainc_status trainc_forward(trainc_session *session,
                             const trainc_tensor *inputs, int32_t num_inputs,
                             trainc_tensor *outputs, int32_t num_outputs) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!outputs)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "outputs is null");
  // @eval reads the copies that hold a parameter's live taps.
  if (!session->windows.empty())
    if (trainc_status status = refreshWeightCopies(*session))
      return status;
  return run(*session, session->eval, trainc_model_eval, inputs, num_inputs,
             nullptr, outputs, num_outputs);
}

int32_t trainc_num_parameters(const trainc_session *session) {
  return isOpen(session) ? static_cast<int32_t>(session->parameterNames.size())
                         : 0;
}

const char *trainc_parameter_name(const trainc_session *session, int32_t i) {
  if (!isOpen(session) || i < 0 ||
      i >= static_cast<int32_t>(session->parameterNames.size()))
    return nullptr;
  return session->parameterNames[i].c_str();
}

trainc_status trainc_get_parameter(const trainc_session *session,
                                   const char *name, trainc_tensor *out) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!name || !out)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  auto it = session->persistent.find(name);
  if (it == session->persistent.end())
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                std::string("no parameter '") + name + "'");
  ArgumentInfo argument{name, "parameter", it->second.first};
  if (trainc_status status = checkTensor(out, argument))
    return status;
  return session->readDense(name, out->data);
}

trainc_status trainc_set_parameter(trainc_session *session, const char *name,
                                   const trainc_tensor *value) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!name || !value)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  auto it = session->persistent.find(name);
  if (it == session->persistent.end())
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                std::string("no parameter '") + name + "'");
  if (!isSavedState(*session, name))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                std::string("'") + name +
                    "' is a weight copy the library makes from its "
                    "parameter: set the parameter");
  ArgumentInfo argument{name, "parameter", it->second.first};
  if (trainc_status status = checkTensor(value, argument))
    return status;
  // The other windowed parameters keep their live taps: into the
  // parameters, from which every copy is made again.
  session->syncWindows();
  session->writeDense(name, value->data);
  session->copiesStale = !session->weightCopies.empty();
  return TRAINC_OK;
}

} // extern "C"
