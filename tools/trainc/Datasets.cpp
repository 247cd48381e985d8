//===- Datasets.cpp - training data for `trainc train` --------------------===//
#include "tools/trainc/Datasets.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <cstring>
#include <fstream>

namespace trainc::cli {

int64_t Dataset::itemSize() const {
  int64_t n = 1;
  for (int64_t d : itemShape)
    n *= d;
  return n;
}

/// An error unless `path` is a regular file of at most `maxBytes` (a
/// directory, a device or a pipe is never read); its size otherwise.
static llvm::Expected<uint64_t> regularFileSize(const std::string &path,
                                                uint64_t maxBytes) {
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status))
    return llvm::createStringError("cannot open '" + path + "'");
  if (status.type() != llvm::sys::fs::file_type::regular_file)
    return llvm::createStringError("'" + path + "' is not a regular file");
  if (status.getSize() > maxBytes)
    return llvm::createStringError("'" + path + "' is larger than " +
                                   std::to_string(maxBytes >> 30) + " GiB");
  return status.getSize();
}

/// The most bytes a data file may hold (gunzipped).
constexpr uint64_t kMaxDataBytes = uint64_t(16) << 30;

/// The whole file, gunzipped if it is gzip (zlib reads plain files as is).
static llvm::Expected<std::string> readMaybeGzip(const std::string &path) {
  if (auto size = regularFileSize(path, kMaxDataBytes); !size)
    return size.takeError();
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    return llvm::createStringError("cannot open '" + path + "'");
  std::string bytes;
  char buffer[1 << 16];
  int read;
  while ((read = gzread(file, buffer, sizeof(buffer))) > 0) {
    bytes.append(buffer, read);
    if (bytes.size() > kMaxDataBytes) {
      gzclose(file);
      return llvm::createStringError("'" + path + "' holds more than " +
                                     std::to_string(kMaxDataBytes >> 30) +
                                     " GiB once gunzipped");
    }
  }
  bool failed = read < 0;
  gzclose(file);
  if (failed)
    return llvm::createStringError("cannot read '" + path +
                                   "' (corrupt gzip data?)");
  return bytes;
}

/// `count` elements of `dims` times `elementSize` bytes, or nullopt where a
/// dim is negative or the product exceeds the data-file limit (checked
/// without overflow).
static std::optional<uint64_t> checkedBytes(llvm::ArrayRef<int64_t> dims,
                                            uint64_t elementSize) {
  uint64_t bytes = elementSize;
  for (int64_t dim : dims)
    if (dim < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(dim), &bytes) ||
        bytes > kMaxDataBytes)
      return std::nullopt;
  return bytes;
}

static uint32_t bigEndian(const std::string &bytes, size_t offset) {
  auto b = reinterpret_cast<const unsigned char *>(bytes.data() + offset);
  return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) |
         b[3];
}

llvm::Expected<Dataset> loadIdx(const std::string &imagesPath,
                                const std::string &labelsPath) {
  auto images = readMaybeGzip(imagesPath);
  if (!images)
    return images.takeError();
  auto labels = readMaybeGzip(labelsPath);
  if (!labels)
    return labels.takeError();
  return parseIdx(imagesPath, *images, labelsPath, *labels);
}

llvm::Expected<Dataset> parseIdx(const std::string &imagesPath,
                                 const std::string &imageBytes,
                                 const std::string &labelsPath,
                                 const std::string &labelBytes) {
  const std::string *images = &imageBytes, *labels = &labelBytes;
  if (images->size() < 16 || bigEndian(*images, 0) != 2051)
    return llvm::createStringError("'" + imagesPath +
                                   "' is not an IDX image file (magic 2051)");
  if (labels->size() < 8 || bigEndian(*labels, 0) != 2049)
    return llvm::createStringError("'" + labelsPath +
                                   "' is not an IDX label file (magic 2049)");
  Dataset data;
  data.count = bigEndian(*images, 4);
  data.itemShape = {bigEndian(*images, 8), bigEndian(*images, 12)};
  std::optional<uint64_t> pixelCount =
      checkedBytes({data.count, data.itemShape[0], data.itemShape[1]}, 1);
  if (!pixelCount || images->size() != 16 + *pixelCount)
    return llvm::createStringError("'" + imagesPath +
                                   "' does not hold the images its header "
                                   "counts");
  size_t pixels = *pixelCount;
  if (bigEndian(*labels, 4) != data.count || labels->size() != 8 + size_t(data.count))
    return llvm::createStringError("'" + labelsPath + "' does not match '" +
                                   imagesPath + "'");
  data.images.resize(pixels);
  for (size_t i = 0; i < pixels; ++i)
    data.images[i] = static_cast<unsigned char>((*images)[16 + i]) / 255.0f;
  data.labels.resize(data.count);
  for (int64_t i = 0; i < data.count; ++i)
    data.labels[i] = static_cast<unsigned char>((*labels)[8 + i]);
  return data;
}

llvm::Expected<std::pair<Dataset, Dataset>>
loadImageDirectory(std::string directory) {
  if (directory == "fashion-mnist")
    directory = "/usr/share/datasets/fashion-mnist";
  if (!llvm::sys::fs::is_directory(directory))
    return llvm::createStringError(
        "data directory '" + directory + "' does not exist" +
        (directory == "/usr/share/datasets/fashion-mnist"
             ? " (install Debian's dataset-fashion-mnist)"
             : ""));
  auto find = [&](const std::string &stem) -> std::string {
    for (const char *suffix : {"", ".gz"}) {
      llvm::SmallString<256> path(directory);
      llvm::sys::path::append(path, stem + suffix);
      if (llvm::sys::fs::exists(path))
        return std::string(path);
    }
    return directory + "/" + stem + "[.gz]";
  };
  auto train = loadIdx(find("train-images-idx3-ubyte"),
                       find("train-labels-idx1-ubyte"));
  if (!train)
    return train.takeError();
  auto test = loadIdx(find("t10k-images-idx3-ubyte"),
                      find("t10k-labels-idx1-ubyte"));
  if (!test)
    return test.takeError();
  return std::make_pair(std::move(*train), std::move(*test));
}

static llvm::Expected<HostArray> loadNpy(const std::string &path,
                                         const std::string &bytes) {
  if (bytes.size() < 12 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return llvm::createStringError("'" + path + "' is not a .npy file");
  size_t headerLength, offset;
  if (bytes[6] == 1) {
    headerLength = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
    offset = 10;
  } else {
    uint32_t length;
    std::memcpy(&length, bytes.data() + 8, 4);
    headerLength = length;
    offset = 12;
  }
  if (headerLength > bytes.size() - offset)
    return llvm::createStringError("'" + path + "' is truncated");
  std::string header = bytes.substr(offset, headerLength);
  if (header.find("'fortran_order': False") == std::string::npos)
    return llvm::createStringError("'" + path + "' is not in C order");
  HostArray array;
  struct Kind {
    const char *npy, *dtype;
    size_t size;
  };
  size_t elementSize = 0;
  for (Kind kind : {Kind{"'<f4'", "f32", 4}, Kind{"'<f8'", "f64", 8},
                    Kind{"'<i8'", "i64", 8}, Kind{"'<i4'", "i32", 4}})
    if (header.find(kind.npy) != std::string::npos) {
      array.dtype = kind.dtype;
      elementSize = kind.size;
    }
  if (!elementSize)
    return llvm::createStringError("'" + path +
                                   "' has a dtype trainc does not read (f4, f8, "
                                   "i4, i8)");
  size_t open = header.find("'shape': (");
  size_t close = header.find(')', open);
  if (open == std::string::npos || close == std::string::npos)
    return llvm::createStringError("'" + path + "' has no shape");
  std::string dims = header.substr(open + 10, close - open - 10);
  for (size_t start = 0; start < dims.size();) {
    size_t comma = dims.find(',', start);
    llvm::StringRef dim =
        llvm::StringRef(dims)
            .substr(start, comma == std::string::npos ? llvm::StringRef::npos
                                                      : comma - start)
            .trim(' ');
    if (!dim.empty()) {
      int64_t value;
      if (dim.getAsInteger(10, value))
        return llvm::createStringError("'" + path +
                                       "' has a shape that is "
                                       "not integers: (" +
                                       dims + ")");
      array.shape.push_back(value);
    }
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  std::optional<uint64_t> needed = checkedBytes(array.shape, elementSize);
  if (!needed)
    return llvm::createStringError("'" + path +
                                   "' has a shape with a "
                                   "negative or too large dimension: (" +
                                   dims + ")");
  size_t data = offset + headerLength;
  if (bytes.size() - data != *needed)
    return llvm::createStringError(
        "'" + path + "' holds " + std::to_string(bytes.size() - data) +
        " data bytes, its shape needs " + std::to_string(*needed));
  array.bytes.assign(bytes.begin() + data, bytes.end());
  return array;
}

static llvm::Expected<HostArray> loadTensorProto(const std::string &path,
                                                 const std::string &bytes) {
  onnx::TensorProto tensor;
  if (!tensor.ParseFromString(bytes))
    return llvm::createStringError("'" + path + "' is not an ONNX TensorProto");
  HostArray array;
  array.shape.assign(tensor.dims().begin(), tensor.dims().end());
  auto take = [&](const char *dtype, size_t size, const void *typed,
                  size_t typedCount) -> llvm::Expected<HostArray> {
    array.dtype = dtype;
    std::optional<uint64_t> needed = checkedBytes(array.shape, size);
    if (!needed)
      return llvm::createStringError("'" + path +
                                     "' has a shape with a "
                                     "negative or too large dimension");
    if (tensor.has_raw_data())
      array.bytes.assign(tensor.raw_data().begin(), tensor.raw_data().end());
    else
      array.bytes.assign(static_cast<const char *>(typed),
                         static_cast<const char *>(typed) + typedCount * size);
    if (array.bytes.size() != *needed)
      return llvm::createStringError("'" + path + "' does not fill its shape");
    return array;
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    return take("f32", 4, tensor.float_data().data(), tensor.float_data_size());
  case onnx::TensorProto::DOUBLE:
    return take("f64", 8, tensor.double_data().data(), tensor.double_data_size());
  case onnx::TensorProto::INT64:
    return take("i64", 8, tensor.int64_data().data(), tensor.int64_data_size());
  default:
    return llvm::createStringError("'" + path +
                                   "' has a data type trainc does not read");
  }
}

llvm::Expected<HostArray> loadArray(const std::string &path) {
  auto size = regularFileSize(path, kMaxDataBytes);
  if (!size)
    return size.takeError();
  std::ifstream stream(path, std::ios::binary);
  std::string bytes(*size, '\0');
  if (!stream || !stream.read(bytes.data(), bytes.size()))
    return llvm::createStringError("cannot read '" + path + "'");
  return parseArray(path, bytes);
}

llvm::Expected<HostArray> parseArray(const std::string &path,
                                     const std::string &bytes) {
  if (llvm::StringRef(path).ends_with(".npy"))
    return loadNpy(path, bytes);
  if (llvm::StringRef(path).ends_with(".pb"))
    return loadTensorProto(path, bytes);
  return llvm::createStringError("'" + path +
                                 "': expected a .npy or ONNX .pb tensor file");
}

} // namespace trainc::cli
