//===- TrainLoops.h - `trainc train`'s loops and their session helpers ----===//
//
// What TrainCommand.cpp (the command, fixed batches) and TrainOnDataset.cpp
// (epochs over an image dataset) share: the session's errors, --lr, the
// loss scale, and the checks made before anything is written.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_TOOLS_TRAINC_TRAINLOOPS_H
#define TRAINC_TOOLS_TRAINC_TRAINLOOPS_H

#include "tools/trainc/Commands.h"
#include "tools/trainc/DataParallelJob.h"
#include "tools/trainc/ModelLibrary.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace trainc::cli {

/// Logs "WHAT: the library's last error"; returns 1 (the exit status).
int reportApiError(const ModelApi &api, const std::string &what);

/// --lr, when the command line gave it, for the session. Returns the exit
/// status.
int applyLearningRate(const ModelApi &api, trainc_session *session,
                      const TrainCommandOptions &options);

/// ", loss scale S, K steps skipped" for a model with dynamic loss scaling
/// (--amp fp16), else "".
std::string lossScaling(const ModelApi &api, trainc_session *session);

/// Whether a step that returned TRAINC_ERROR_NOT_FINITE was stopped by a
/// --check-numerics test (before its loss was computed).
bool stoppedByCheck(const ModelApi &api);

/// Reports a step that was not finite (TRAINC_ERROR_NOT_FINITE); returns
/// the exit status.
int notFinite(const ModelApi &api, float loss, int64_t step);

/// False, with an error naming `what`, where a float parameter is not
/// finite: checked before anything is written.
bool finiteParameters(const ModelApi &api, trainc_session *session,
                      const nlohmann::json &manifest, const char *what);

/// --data: epochs of seeded shuffled mini-batches over an IDX image
/// dataset, test accuracy after each, --checkpoint and --resume
/// (TrainOnDataset.cpp). Returns the exit status.
int trainOnDataset(const ModelApi &api, trainc_session *session,
                   const nlohmann::json &manifest,
                   const TrainCommandOptions &options, const World &world);

} // namespace trainc::cli

#endif // TRAINC_TOOLS_TRAINC_TRAINLOOPS_H
