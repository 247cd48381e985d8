//===- OnnxExport.cpp - trainc_export_onnx --------------------------------===//
//
// The compiler embeds the model's ONNX inference graph (BatchNorm on
// running statistics, Dropout as Identity) with the trained initializers
// taken out. Exporting writes those bytes, then one more `graph` field
// holding the session's current values as TensorProtos. Protobuf merges a
// repeated embedded message field into the one before it, appending its
// repeated fields, so readers see one graph with every initializer — no
// protobuf library needed here, only its wire format.
//
//===----------------------------------------------------------------------===//
#include "lib/Runtime/FileWrite.h"
#include "lib/Runtime/Model.h"
#include "lib/Runtime/Session.h"

#include <nlohmann/json.hpp>

namespace trainc::rt {
namespace {

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

/// A length-delimited field (wire type 2).
void putBytesField(std::string &out, uint32_t field, const void *data,
                   size_t size) {
  putVarint(out, (uint64_t(field) << 3) | 2);
  putVarint(out, size);
  out.append(static_cast<const char *>(data), size);
}

/// onnx.TensorProto.DataType of a runtime dtype.
int onnxDataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 1;
  case DType::I8:
    return 3;
  case DType::I16:
    return 5;
  case DType::I32:
    return 6;
  case DType::I64:
    return 7;
  case DType::I1:
    return 9;
  case DType::F16:
    return 10;
  case DType::F64:
    return 11;
  case DType::BF16:
    return 16;
  }
  return 0;
}

/// TensorProto { dims = 1; data_type = 2; name = 8; raw_data = 9 }.
std::string tensorProto(const std::string &name, const OperandInfo &info,
                        const void *data) {
  std::string out;
  for (int64_t dim : info.shape) {
    putVarint(out, (1u << 3) | 0);
    putVarint(out, static_cast<uint64_t>(dim));
  }
  putVarint(out, (2u << 3) | 0);
  putVarint(out, onnxDataType(info.dtype));
  putBytesField(out, 8, name.data(), name.size());
  putBytesField(out, 9, data, info.bytes());
  return out;
}

} // namespace
} // namespace trainc::rt

using namespace trainc::rt;

extern "C" trainc_status trainc_export_onnx(const trainc_session *session,
                                            const char *path) {
  if (!isOpen(session))
    return fail(TRAINC_ERROR_INVALID_ARGUMENT, kNotOpen);
  if (!path)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "trainc_export_onnx: null session or path");
  if (trainc_model_onnx_size == 0)
    return fail(TRAINC_ERROR_INVALID_ARGUMENT,
                "this model library holds no ONNX model to export (it was "
                "not compiled from an ONNX file)");
  nlohmann::json manifest =
      nlohmann::json::parse(trainc_model_manifest, nullptr, false);
  if (manifest.is_discarded() || !manifest.contains("onnx_export"))
    return fail(TRAINC_ERROR_INTERNAL, "the manifest lists no exported "
                                       "initializers");
  std::string graph;
  for (const auto &name : manifest["onnx_export"]["initializers"]) {
    auto it = session->persistent.find(name.get<std::string>());
    if (it == session->persistent.end())
      return fail(TRAINC_ERROR_INTERNAL,
                  "the session has no tensor '" + name.get<std::string>() +
                      "' to export");
    std::string dense(it->second.first.bytes(), '\0');
    if (trainc_status status = session->readDense(it->first, dense.data()))
      return status;
    std::string tensor = tensorProto(it->first, it->second.first, dense.data());
    putBytesField(graph, 5, tensor.data(), tensor.size()); // initializer
  }
  std::string model(reinterpret_cast<const char *>(trainc_model_onnx),
                    trainc_model_onnx_size);
  putBytesField(model, 7, graph.data(), graph.size()); // ModelProto.graph
  std::string error = writeFileAtomically(path, model);
  if (!error.empty())
    return fail(TRAINC_ERROR_IO, "trainc_export_onnx: " + error);
  return TRAINC_OK;
}
