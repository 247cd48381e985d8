//===- checkpoint.cpp - fuzz target: the checkpoint loader ---------------===//
//
// trainc_load_checkpoint's parser against a model with three tensors (an
// MLP's weight and bias and its step). The first byte chooses whether the
// input is taken as it is or gets a valid checksum appended (so that the
// fuzzer gets past the checksum and into the tensors).
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/Checkpoint.h"

#include <cstdint>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  bool fixChecksum = data[0] % 2;
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (fixChecksum) {
    uint64_t sum = trainc::rt::checkpointChecksum(bytes);
    bytes.append(reinterpret_cast<const char *>(&sum), sizeof(sum));
  }
  static const std::map<std::string, trainc::rt::ExpectedTensor> expected = {
      {"fc.weight", {0, {4, 3}, 48}},
      {"fc.bias", {0, {4}, 16}},
      {"step", {4, {}, 8}}};
  trainc::rt::CheckpointContents contents;
  std::string why = trainc::rt::parseCheckpoint(bytes, "0123456789abcdef",
                                                expected, contents);
  // The reason given for a file too large to load reads its header only.
  if (trainc::rt::whyTooLarge(bytes, "0123456789abcdef").empty())
    __builtin_trap();
  // A checkpoint taken holds exactly the model's tensors, each its size.
  if (why.empty()) {
    if (contents.tensors.size() != expected.size())
      __builtin_trap();
    for (const auto &[name, tensorBytes] : contents.tensors)
      if (tensorBytes.size() != expected.at(name).bytes)
        __builtin_trap();
  }
  return 0;
}
