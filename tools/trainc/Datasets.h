//===- Datasets.h - training data for `trainc train` -----------*- C++ -*-===//
#ifndef TRAINC_TOOLS_TRAINC_DATASETS_H
#define TRAINC_TOOLS_TRAINC_DATASETS_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::cli {

/// Images as float32 in [0, 1] and integer class labels.
struct Dataset {
  int64_t count = 0;
  std::vector<int64_t> itemShape; ///< e.g. {28, 28}
  std::vector<float> images;      ///< count * prod(itemShape)
  std::vector<int64_t> labels;
  int64_t itemSize() const;
};

/// An IDX image file (magic 2051) and its IDX label file (2049), plain or
/// gzip-compressed.
llvm::Expected<Dataset> loadIdx(const std::string &images,
                                const std::string &labels);
/// The same from the files' (gunzipped) bytes; the names are for messages.
llvm::Expected<Dataset> parseIdx(const std::string &imagesName,
                                 const std::string &imageBytes,
                                 const std::string &labelsName,
                                 const std::string &labelBytes);

/// train-* and t10k-* IDX files in `directory` (Fashion-MNIST's layout;
/// "fashion-mnist" means Debian's /usr/share/datasets/fashion-mnist).
llvm::Expected<std::pair<Dataset, Dataset>> loadImageDirectory(std::string directory);

/// A host array read from .npy or an ONNX TensorProto (.pb).
struct HostArray {
  std::string dtype; ///< "f32", "i64", ...
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};
llvm::Expected<HostArray> loadArray(const std::string &path);
/// The same from the file's bytes (`path` picks the format: .npy or .pb).
llvm::Expected<HostArray> parseArray(const std::string &path,
                                     const std::string &bytes);

} // namespace trainc::cli

#endif
