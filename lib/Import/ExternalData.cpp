//===- ExternalData.cpp - ONNX tensors whose bytes live in other files ----===//
//
// A model over protobuf's 2 GiB keeps its large tensors in files beside it
// (TensorProto.data_location = EXTERNAL, with `location`, `offset` and
// `length` in external_data). Before anything else reads the model, every
// such tensor, in the initializers and in Constant nodes, gets its bytes
// as raw_data, read from the model's directory only:
//  - `location` must be a relative path without `..` components, and the
//    file it names, symbolic links resolved, must lie inside the model's
//    directory (a model from an untrusted source cannot read other files);
//  - the file must be a regular file holding `offset + length` bytes;
//  - `length`, where given, must be the tensor's size from its dims and
//    type, so nothing is read or allocated beyond what the shape needs.
//
//===----------------------------------------------------------------------===//
#include "lib/Import/ImportState.h"
#include "trainc/Import.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fstream>

namespace trainc {
namespace {

using import::checkShape;
using import::elementBytes;
using import::onnxTypeName;
using onnx::TensorProto;

/// The file `location` names inside `directory`, or why it may not be read.
llvm::Expected<std::string> resolve(llvm::StringRef directory,
                                    llvm::StringRef location) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "location '" + location + "' " + why);
  };
  if (location.empty())
    return fail("is empty");
  if (llvm::sys::path::is_absolute(location))
    return fail("is an absolute path (external data must lie in the "
                "model's directory)");
  for (llvm::StringRef component : llvm::make_range(
           llvm::sys::path::begin(location), llvm::sys::path::end(location)))
    if (component == "..")
      return fail("leaves the model's directory ('..')");
  llvm::SmallString<256> joined(directory), real, realDirectory;
  llvm::sys::path::append(joined, location);
  if (llvm::sys::fs::real_path(directory, realDirectory) ||
      llvm::sys::fs::real_path(joined, real))
    return fail("cannot be opened");
  if (!realDirectory.ends_with("/"))
    realDirectory += "/";
  if (!llvm::StringRef(real).starts_with(realDirectory))
    return fail("leads out of the model's directory (a symbolic link)");
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(real, status) ||
      status.type() != llvm::sys::fs::file_type::regular_file)
    return fail("is not a regular file");
  return std::string(real);
}

/// Reads one external tensor's bytes into its raw_data.
llvm::Error load(TensorProto &tensor, llvm::StringRef directory) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "tensor '" + tensor.name() +
                                       "': external data " + why);
  };
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    const std::string &key = entry.key(), &value = entry.value();
    if (key == "location") {
      location = value;
      continue;
    }
    if (key != "offset" && key != "length")
      continue; // checksum, and keys of newer writers: not needed to read
    int64_t parsed;
    if (llvm::StringRef(value).getAsInteger(10, parsed) || parsed < 0)
      return fail("has " + key + " '" + value +
                  "' (a non-negative integer is needed)");
    (key == "offset" ? offset : length) = parsed;
  }
  size_t width = elementBytes(tensor.data_type());
  if (width == 0)
    return fail("of unsupported data type " + onnxTypeName(tensor.data_type()));
  std::vector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  if (std::string bad = checkShape(dims, width); !bad.empty())
    return fail("for a shape with " + bad);
  int64_t expected = width;
  for (int64_t dim : dims)
    expected *= dim; // checked by checkShape
  if (length >= 0 && length != expected)
    return fail("has length " + std::to_string(length) +
                " but the shape needs " + std::to_string(expected) + " bytes");
  auto path = resolve(directory, location);
  if (!path)
    return fail(llvm::toString(path.takeError()));
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(*path, size))
    return fail("file '" + location + "' cannot be read");
  if (static_cast<uint64_t>(offset) > size ||
      size - static_cast<uint64_t>(offset) < static_cast<uint64_t>(expected))
    return fail("needs bytes " + std::to_string(offset) + " to " +
                std::to_string(static_cast<uint64_t>(offset) + expected) +
                " of '" + location + "', which has " + std::to_string(size));
  std::ifstream stream(*path, std::ios::binary);
  std::string bytes(static_cast<size_t>(expected), '\0');
  if (!stream.seekg(offset) || !stream.read(bytes.data(), expected))
    return fail("file '" + location + "' cannot be read");
  tensor.set_raw_data(std::move(bytes));
  tensor.clear_external_data();
  tensor.set_data_location(TensorProto::DEFAULT);
  return llvm::Error::success();
}

} // namespace

llvm::Error loadExternalData(onnx::ModelProto &model,
                             llvm::StringRef directory) {
  onnx::GraphProto &graph = *model.mutable_graph();
  auto external = [](const TensorProto &tensor) {
    return tensor.data_location() == TensorProto::EXTERNAL;
  };
  bool any = false;
  for (const TensorProto &tensor : graph.initializer())
    any |= external(tensor);
  for (const auto &node : graph.node())
    for (const auto &attribute : node.attribute())
      any |= attribute.has_t() && external(attribute.t());
  if (!any)
    return llvm::Error::success();
  if (directory.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the model keeps tensors in external files, which are read only when "
        "the model is read from a file");
  for (TensorProto &tensor : *graph.mutable_initializer())
    if (external(tensor))
      if (llvm::Error error = load(tensor, directory))
        return error;
  for (auto &node : *graph.mutable_node())
    for (auto &attribute : *node.mutable_attribute())
      if (attribute.has_t() && external(attribute.t()))
        if (llvm::Error error = load(*attribute.mutable_t(), directory))
          return error;
  return llvm::Error::success();
}

} // namespace trainc
