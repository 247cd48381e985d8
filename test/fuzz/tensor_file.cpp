//===- tensor_file.cpp - fuzz target: .npy and ONNX .pb tensor files -----===//
//
// `trainc train --feed/--labels` reads these. The first byte picks the
// format (even: .npy, odd: .pb); a file is read into a host array or
// refused with a message.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Datasets.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const char *name = data[0] % 2 ? "fuzz.pb" : "fuzz.npy";
  std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
  auto array = trainc::cli::parseArray(name, bytes);
  if (!array)
    llvm::consumeError(array.takeError());
  return 0;
}
