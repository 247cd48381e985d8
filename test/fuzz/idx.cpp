//===- idx.cpp - fuzz target: IDX image and label files ------------------===//
//
// `trainc train --data DIR` reads these (after gunzipping). The input is
// split in two at the position its first two bytes give: an image file
// and a label file.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Datasets.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  size_t split = (size_t(data[0]) << 8 | data[1]) % (size - 1);
  std::string rest(reinterpret_cast<const char *>(data) + 2, size - 2);
  std::string images = rest.substr(0, split), labels = rest.substr(split);
  auto dataset =
      trainc::cli::parseIdx("images.idx", images, "labels.idx", labels);
  if (!dataset)
    llvm::consumeError(dataset.takeError());
  return 0;
}
