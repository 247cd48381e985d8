//===- OnnxTestData.cpp - ONNX backend node tests through the interpreter -===//
//
// Before importing a node test's model, three adaptations make it a model
// trainc is meant to read, without changing what it computes:
//  - an opset below 13 is read as 13 when every op of the model has the
//    same definition at both (e.g. Conv-11, MaxPool-12); otherwise the
//    test is skipped;
//  - inputs in slots trainc needs as constants (Reshape shapes, axes,
//    Slice bounds, Clip bounds, ...) become initializers holding their
//    test value;
//  - dim 0 of the first input becomes symbolic, so the importer (which
//    takes dim 0 of every input of a static model as the batch) leaves the
//    other inputs' shapes alone.
//
//===----------------------------------------------------------------------===//
#include "OnnxTestData.h"

#include "trainc/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace trainc::test {
namespace {

llvm::Error failure(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// For the ops whose definition in force at opset 13 dates from an older
/// opset: that version. A model of opset v >= it means the same at 13.
const std::map<std::string, int64_t> &sinceVersionAt13() {
  static const std::map<std::string, int64_t> versions = {
      {"AveragePool", 11}, {"Conv", 11},
      {"MaxPool", 12},     {"GlobalAveragePool", 1},
      {"Not", 1},          {"ConstantOfShape", 9},
      {"And", 7},          {"GatherElements", 11},
      {"HardSigmoid", 6},  {"Range", 11},
      {"Einsum", 12},      {"ConvTranspose", 11}};
  return versions;
}

/// Input slots trainc needs to know at compile time, by op type.
const std::map<std::string, std::set<int>> &constantSlots() {
  static const std::map<std::string, std::set<int>> slots = {
      {"Reshape", {1}},         {"Expand", {1}},
      {"Slice", {1, 2, 3, 4}},  {"Squeeze", {1}},
      {"Unsqueeze", {1}},       {"ReduceSum", {1}},
      {"ReduceMean", {1}},      {"ReduceMax", {1}},
      {"Clip", {1, 2}},         {"Dropout", {1, 2}},
      {"ConstantOfShape", {0}}, {"Pad", {1, 2, 3}},
      {"Split", {1}},           {"Tile", {1}},
      {"Trilu", {1}},           {"Range", {0, 1, 2}},
      {"Mod", {0, 1}},          {"ScatterND", {0, 1, 2}},
      {"CumSum", {1}},          {"Resize", {1, 2, 3}}};
  return slots;
}

bool readProto(const std::string &path, google::protobuf::Message &message) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    return false;
  std::ostringstream contents;
  contents << stream.rdbuf();
  return message.ParseFromString(contents.str());
}

template <typename T> std::vector<double> rawValues(const std::string &raw) {
  std::vector<double> values(raw.size() / sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    T value;
    std::memcpy(&value, raw.data() + i * sizeof(T), sizeof(T));
    values[i] = static_cast<double>(value);
  }
  return values;
}

double fromBits(uint16_t bits, const llvm::fltSemantics &semantics) {
  return llvm::APFloat(semantics, llvm::APInt(16, bits)).convertToDouble();
}

/// The default-domain opset of a model; 0 when it imports none.
int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      return entry.version();
  return 0;
}

/// Reads an opset below 13 as 13 when that changes no op; returns "" or
/// why the model is outside trainc's opsets.
std::string adaptOpset(onnx::ModelProto &model, std::string &note) {
  int64_t opset = defaultOpset(model);
  if (opset == 0 || (opset >= 13 && opset <= 21))
    return "";
  if (opset < 13) {
    bool unchanged = true;
    for (const auto &node : model.graph().node()) {
      auto it = sinceVersionAt13().find(node.op_type());
      unchanged &= it != sinceVersionAt13().end() && it->second <= opset;
    }
    if (unchanged) {
      for (auto &entry : *model.mutable_opset_import())
        if (entry.domain().empty() || entry.domain() == "ai.onnx")
          entry.set_version(13);
      note = "opset " + std::to_string(opset) + " read as 13";
      return "";
    }
  }
  return "opset " + std::to_string(opset) + " is outside 13-21";
}

struct DataSet {
  std::vector<onnx::TensorProto> inputs, outputs;
};

std::vector<DataSet> readDataSets(const std::string &directory,
                                  std::string &error) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(directory))
    if (entry.is_directory() &&
        entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      names.push_back(entry.path().string());
  std::sort(names.begin(), names.end());
  std::vector<DataSet> sets;
  for (const std::string &name : names) {
    DataSet set;
    for (const char *kind : {"input", "output"}) {
      for (int i = 0;; ++i) {
        std::string path = name + "/" + kind + "_" + std::to_string(i) + ".pb";
        if (!std::filesystem::exists(path))
          break;
        onnx::TensorProto tensor;
        if (!readProto(path, tensor)) {
          error = "cannot read " + path;
          return {};
        }
        (std::string(kind) == "input" ? set.inputs : set.outputs)
            .push_back(tensor);
      }
    }
    sets.push_back(std::move(set));
  }
  if (sets.empty())
    error = "no test_data_set_* in " + directory;
  return sets;
}

/// Applies the adaptations of the file comment for one data set.
llvm::Error adaptModel(onnx::ModelProto &model, const DataSet &data,
                       ImportOptions &importOptions) {
  onnx::GraphProto &graph = *model.mutable_graph();
  if (static_cast<int>(data.inputs.size()) != graph.input_size())
    return failure("the data set has " + std::to_string(data.inputs.size()) +
                   " inputs, the graph " + std::to_string(graph.input_size()));
  std::set<std::string> constants;
  for (const auto &node : graph.node()) {
    auto slots = constantSlots().find(node.op_type());
    if (slots != constantSlots().end())
      for (int slot : slots->second)
        if (slot < node.input_size() && !node.input(slot).empty())
          constants.insert(node.input(slot));
  }
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (int i = 0; i < graph.input_size(); ++i) {
    if (!constants.count(graph.input(i).name())) {
      *inputs.Add() = graph.input(i);
      continue;
    }
    onnx::TensorProto *initializer = graph.add_initializer();
    *initializer = data.inputs[i];
    initializer->set_name(graph.input(i).name());
  }
  *graph.mutable_input() = inputs;

  for (auto &input : *graph.mutable_input()) {
    auto *shape = input.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0)
      continue;
    if (shape->dim(0).has_dim_value()) {
      importOptions.batchSize = shape->dim(0).dim_value();
      shape->mutable_dim(0)->set_dim_param("trainc_batch");
    }
    break;
  }

  return llvm::Error::success();
}

/// Imports `model` and runs @forward on `data`'s inputs (by name).
std::string runDataSet(const onnx::ModelProto &original, const DataSet &data,
                       const std::string &directory,
                       const NodeTestOptions &options) {
  onnx::ModelProto model = original;
  std::map<std::string, HostTensor> valuesByName;
  for (int i = 0; i < model.graph().input_size(); ++i) {
    if (i >= static_cast<int>(data.inputs.size()))
      break;
    auto value = hostTensorFromProto(
        data.inputs[i],
        model.graph().input(i).type().tensor_type().elem_type());
    if (!value)
      return "input " + std::to_string(i) + ": " +
             llvm::toString(value.takeError());
    valuesByName[model.graph().input(i).name()] = std::move(*value);
  }
  ImportOptions importOptions;
  if (llvm::Error error = adaptModel(model, data, importOptions))
    return llvm::toString(std::move(error));

  mlir::MLIRContext context;
  std::string bytes;
  model.SerializeToString(&bytes);
  auto imported = importOnnxBytes(context, bytes, directory, importOptions);
  if (!imported)
    return "import: " + llvm::toString(imported.takeError());
  auto forward = imported->module->lookupSymbol<mlir::func::FuncOp>("forward");
  std::vector<HostTensor> arguments;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<mlir::StringAttr>(i, "graph.name");
    auto it = name ? valuesByName.find(name.str()) : valuesByName.end();
    if (it == valuesByName.end())
      return "no test value for argument " + std::to_string(i);
    arguments.push_back(it->second);
  }
  auto results = interpret(forward, arguments);
  if (!results)
    return "interpret: " + llvm::toString(results.takeError());
  if (static_cast<int>(results->size()) != model.graph().output_size())
    return "got " + std::to_string(results->size()) + " results for " +
           std::to_string(model.graph().output_size()) + " outputs";
  for (int index = 0; index < model.graph().output_size(); ++index) {
    size_t r = index;
    if (options.ignoredOutputs.count(index))
      continue;
    if (index >= static_cast<int>(data.outputs.size()))
      return "no expected value for output " + std::to_string(index);
    auto expected = hostTensorFromProto(
        data.outputs[index],
        original.graph().output(index).type().tensor_type().elem_type());
    if (!expected)
      return "output " + std::to_string(index) + ": " +
             llvm::toString(expected.takeError());
    std::string difference =
        compareTensors((*results)[r], *expected, options.tolerance);
    if (!difference.empty())
      return "output " + std::to_string(index) + " (" +
             model.graph().output(r).name() + "): " + difference;
  }
  return "";
}

} // namespace

llvm::Expected<HostTensor> hostTensorFromProto(const onnx::TensorProto &proto,
                                               int32_t declaredType) {
  using onnx::TensorProto;
  if (proto.data_type() == TensorProto::UINT16 &&
      declaredType == TensorProto::BFLOAT16) {
    TensorProto bits = proto;
    bits.set_data_type(TensorProto::BFLOAT16);
    return hostTensorFromProto(bits);
  }
  HostTensor tensor;
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  if (proto.data_location() == TensorProto::EXTERNAL)
    return failure("external tensor data is not supported");
  const std::string &raw = proto.raw_data();
  bool hasRaw = proto.has_raw_data();
  auto ints = [&]() {
    return std::vector<double>(proto.int32_data().begin(),
                               proto.int32_data().end());
  };
  auto halves = [&](const llvm::fltSemantics &semantics) {
    std::vector<double> values;
    if (hasRaw) {
      for (double bits : rawValues<uint16_t>(raw))
        values.push_back(fromBits(static_cast<uint16_t>(bits), semantics));
    } else {
      for (int32_t bits : proto.int32_data())
        values.push_back(fromBits(static_cast<uint16_t>(bits), semantics));
    }
    return values;
  };
  switch (proto.data_type()) {
  case TensorProto::FLOAT:
    tensor.dtype = DType::F32;
    tensor.data = hasRaw ? rawValues<float>(raw)
                         : std::vector<double>(proto.float_data().begin(),
                                               proto.float_data().end());
    break;
  case TensorProto::DOUBLE:
    tensor.dtype = DType::F64;
    tensor.data = hasRaw ? rawValues<double>(raw)
                         : std::vector<double>(proto.double_data().begin(),
                                               proto.double_data().end());
    break;
  case TensorProto::FLOAT16:
    tensor.dtype = DType::F16;
    tensor.data = halves(llvm::APFloat::IEEEhalf());
    break;
  case TensorProto::BFLOAT16:
    tensor.dtype = DType::BF16;
    tensor.data = halves(llvm::APFloat::BFloat());
    break;
  case TensorProto::INT64:
    tensor.dtype = DType::I64;
    tensor.data = hasRaw ? rawValues<int64_t>(raw)
                         : std::vector<double>(proto.int64_data().begin(),
                                               proto.int64_data().end());
    break;
  case TensorProto::INT32:
    tensor.dtype = DType::I32;
    tensor.data = hasRaw ? rawValues<int32_t>(raw) : ints();
    break;
  case TensorProto::INT16:
    tensor.dtype = DType::I16;
    tensor.data = hasRaw ? rawValues<int16_t>(raw) : ints();
    break;
  case TensorProto::INT8:
    tensor.dtype = DType::I8;
    tensor.data = hasRaw ? rawValues<int8_t>(raw) : ints();
    break;
  case TensorProto::BOOL:
    tensor.dtype = DType::I1;
    tensor.data = hasRaw ? rawValues<uint8_t>(raw) : ints();
    break;
  default:
    return failure("tensor type " + std::to_string(proto.data_type()) +
                   " is not supported");
  }
  if (static_cast<int64_t>(tensor.data.size()) != tensor.numElements())
    return failure("the tensor holds " + std::to_string(tensor.data.size()) +
                   " values for " + std::to_string(tensor.numElements()) +
                   " elements");
  return tensor;
}

std::string compareTensors(const HostTensor &actual, const HostTensor &expected,
                           double tolerance) {
  auto shapeText = [](const std::vector<int64_t> &shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  };
  if (actual.dtype != expected.dtype)
    return "dtype " + dtypeName(actual.dtype).str() + ", expected " +
           dtypeName(expected.dtype).str();
  if (actual.shape != expected.shape)
    return "shape " + shapeText(actual.shape) + ", expected " +
           shapeText(expected.shape);
  for (size_t i = 0; i < actual.data.size(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    bool same = a == e || (std::isnan(a) && std::isnan(e)) ||
                std::fabs(a - e) <= tolerance * (1.0 + std::fabs(e));
    if (!same) {
      std::ostringstream message;
      message.precision(9);
      message << "element " << i << " is " << a << ", expected " << e;
      return message.str();
    }
  }
  return "";
}

NodeTestResult runNodeTest(const std::string &directory,
                           const NodeTestOptions &options) {
  NodeTestResult result;
  onnx::ModelProto model;
  if (!readProto(directory + "/model.onnx", model)) {
    result.message = "cannot read " + directory + "/model.onnx";
    return result;
  }
  if (options.patchModel)
    options.patchModel(model);
  std::string skip = adaptOpset(model, result.message);
  if (!skip.empty()) {
    result.outcome = Outcome::Skipped;
    result.message = skip;
    return result;
  }
  std::string error;
  std::vector<DataSet> sets = readDataSets(directory, error);
  if (!error.empty()) {
    result.message = error;
    return result;
  }
  for (size_t i = 0; i < sets.size(); ++i) {
    std::string difference = runDataSet(model, sets[i], directory, options);
    if (!difference.empty()) {
      result.message = "data set " + std::to_string(i) + ": " + difference;
      return result;
    }
  }
  result.outcome = Outcome::Passed;
  return result;
}

std::set<std::string> opTypesOf(const std::string &modelPath) {
  onnx::ModelProto model;
  std::set<std::string> types;
  if (!readProto(modelPath, model))
    return types;
  for (const auto &node : model.graph().node()) {
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    types.insert(defaultDomain ? node.op_type()
                               : node.domain() + "::" + node.op_type());
  }
  return types;
}

} // namespace trainc::test
