//===- Checkpoint.cpp - saving and resuming a session ---------------------===//
//
// The format is CheckpointFormat.cpp's.
// A checkpoint holds every persistent tensor of the session: parameters,
// BatchNorm statistics, optimizer state, the step, seed and learning rate,
// dense row-major whatever layout a library keeps them in (so a checkpoint
// resumes on a CPU whose oneDNN prefers other layouts).
// It is written to a temporary file in the same directory and renamed, so
// a crash never leaves a half-written checkpoint under the final name.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Checkpoint.h"
#include "lib/Runtime/FileWrite.h"
#include "lib/Runtime/Session.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace trainc::rt;

extern "C" trainc_status trainc_save_checkpoint(const trainc_session *session,
                                                const char *path,
                                                const void *extra,
                                                size_t extra_size) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!path || (extra_size && !extra))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  if (extra_size > kMaxExtra)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "extra data above 1 MiB");
  std::vector<SavedTensor> tensors;
  for (const auto &[name, tensor] : session->persistent) {
    if (!isSavedState(*session, name))
      continue; // a weight copy, made again from its parameter
    SavedTensor saved{name, static_cast<uint32_t>(tensor.first.dtype),
                      tensor.first.shape,
                      std::string(tensor.second.size(), '\0')};
    if (trainc_status status = session->readDense(name, saved.bytes.data()))
      return status;
    tensors.push_back(std::move(saved));
  }
  std::string out =
      serializeCheckpoint(session->modelHash, extra, extra_size, tensors);

  std::string error = writeFileAtomically(path, out);
  if (!error.empty())
    return fail(TRAINC_ERROR_IO, "checkpoint: " + error);
  return TRAINC_OK;
}

extern "C" trainc_status trainc_load_checkpoint(trainc_session *session,
                                                const char *path, void *extra,
                                                size_t extra_capacity,
                                                size_t *extra_size) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!path)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, "null argument");
  // A regular file no larger than this model's checkpoint can be: never
  // a device or a pipe read without bound.
  struct stat status;
  if (::stat(path, &status) != 0)
    return fail(TRAINC_ERROR_IO,
                std::string("cannot read checkpoint '") + path + "'");
  if (!S_ISREG(status.st_mode))
    return fail(TRAINC_ERROR_IO,
                std::string("checkpoint '") + path + "' is not a regular file");
  size_t largest = kMaxExtra + 4096;
  for (const auto &[name, tensor] : session->persistent)
    largest += tensor.second.size() + name.size() + 64;
  std::ifstream stream(path, std::ios::binary);
  if (static_cast<uint64_t>(status.st_size) > largest) {
    // Why, from the header: another model's, or this model's with more
    // state than this library keeps.
    std::string head(4096, '\0');
    stream.read(head.data(), head.size());
    head.resize(static_cast<size_t>(stream.gcount()));
    return fail(TRAINC_ERROR_CORRUPT, std::string("checkpoint '") + path +
                                          "' " +
                                          whyTooLarge(head, session->modelHash));
  }
  std::string bytes(static_cast<size_t>(status.st_size), '\0');
  if (!stream || !stream.read(bytes.data(), bytes.size()))
    return fail(TRAINC_ERROR_IO,
                std::string("cannot read checkpoint '") + path + "'");
  std::map<std::string, ExpectedTensor> expected;
  for (const auto &[name, tensor] : session->persistent)
    if (isSavedState(*session, name))
      expected[name] = {static_cast<uint32_t>(tensor.first.dtype),
                        tensor.first.shape, tensor.second.size()};
  CheckpointContents contents;
  std::string why =
      parseCheckpoint(bytes, session->modelHash, expected, contents);
  if (!why.empty())
    return fail(TRAINC_ERROR_CORRUPT,
                std::string("checkpoint '") + path + "' " + why);
  const std::string &extraBytes = contents.extra;
  auto &updates = contents.tensors;
  if (extra_size)
    *extra_size = extraBytes.size();
  if (extra && !extraBytes.empty()) {
    if (extraBytes.size() > extra_capacity)
      return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                  "the checkpoint's extra data does not fit the buffer");
    std::memcpy(extra, extraBytes.data(), extraBytes.size());
  }
  for (auto &[name, data] : updates)
    session->writeDense(name, data.data());
  session->copiesStale = !session->weightCopies.empty();
  return TRAINC_OK;
}
