//===- Checkpoint.h - reading a checkpoint's bytes -------------*- C++ -*-===//
//
// A checkpoint's bytes, written and read without a session
// (CheckpointFormat.cpp; the fuzz target test/fuzz/checkpoint.cpp calls
// the reader).
//
//===----------------------------------------------------------------------===//
#ifndef TRAINC_LIB_RUNTIME_CHECKPOINT_H
#define TRAINC_LIB_RUNTIME_CHECKPOINT_H

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trainc::rt {

/// A tensor a checkpoint must hold for a model.
struct ExpectedTensor {
  uint32_t dtype = 0;
  std::vector<int64_t> shape;
  size_t bytes = 0;
};

/// The most caller data a checkpoint holds.
constexpr size_t kMaxExtra = 1 << 20;

/// A tensor as a checkpoint stores it (dense, row-major).
struct SavedTensor {
  std::string name;
  uint32_t dtype = 0;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// A whole checkpoint file's bytes.
std::string serializeCheckpoint(const std::string &modelHash, const void *extra,
                                size_t extraSize,
                                const std::vector<SavedTensor> &tensors);

/// What a checkpoint holds once checked.
struct CheckpointContents {
  std::string extra;
  std::vector<std::pair<std::string, std::string>> tensors; // name, bytes
};

/// Checks `bytes` (a whole checkpoint file) against the model's hash and
/// tensors, every read bounded; "" and `contents` filled, or why it is not
/// this model's checkpoint ("is damaged (checksum mismatch)", ...).
std::string
parseCheckpoint(const std::string &bytes, const std::string &modelHash,
                const std::map<std::string, ExpectedTensor> &expected,
                CheckpointContents &contents);

/// For a file too large to be this model's checkpoint: why, from its
/// first bytes alone (`head`, any length): not a trainc checkpoint, another
/// model's, or this model's with more state than this library keeps.
std::string whyTooLarge(const std::string &head, const std::string &modelHash);

/// The FNV-1a hash a checkpoint ends with.
uint64_t checkpointChecksum(const std::string &bytes);

} // namespace trainc::rt

#endif
