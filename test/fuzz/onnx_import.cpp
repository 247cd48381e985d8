//===- onnx_import.cpp - fuzz target: ONNX bytes to the training graph ----===//
//
// A model that imports must go through the training pipeline (autodiff,
// loss, optimizer) or fail with a message: never crash, hang, leak or
// trip a sanitizer. The input is the bytes of an ONNX file; the first
// byte, when the input has more than one, picks the batch size (1-4).
// Mutations are structure-aware (LLVMFuzzerCustomMutator below).
//
//===----------------------------------------------------------------------===//
#include "pipelines/TrainingPipeline.h"
#include "trainc/Import.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// Values a dim or an integer attribute is set to: the edges of what a
/// model may hold.
int64_t edgeValue(std::mt19937_64 &rng) {
  static const int64_t values[] = {0,
                                   1,
                                   2,
                                   3,
                                   -1,
                                   -2,
                                   7,
                                   64,
                                   1 << 20,
                                   int64_t(1) << 31,
                                   int64_t(1) << 62,
                                   INT64_MAX,
                                   INT64_MIN};
  return values[rng() % (sizeof(values) / sizeof(values[0]))];
}

/// One structural change to a parsed model: a dim, an attribute's value
/// or type, an op type, an input's wiring, a node dropped or duplicated,
/// an initializer's type or data. Byte flips mostly test protobuf's
/// parser; these reach the importer and the training pipeline.
void mutateModel(onnx::ModelProto &model, std::mt19937_64 &rng) {
  onnx::GraphProto &graph = *model.mutable_graph();
  auto pick = [&](int n) { return n ? static_cast<int>(rng() % n) : -1; };
  switch (rng() % 8) {
  case 0: { // a graph input's dim
    int i = pick(graph.input_size());
    if (i < 0)
      break;
    auto *shape = graph.mutable_input(i)
                      ->mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape();
    int d = pick(shape->dim_size());
    if (d >= 0)
      shape->mutable_dim(d)->set_dim_value(edgeValue(rng));
    break;
  }
  case 1: { // an initializer's dim
    int i = pick(graph.initializer_size());
    if (i < 0)
      break;
    auto *tensor = graph.mutable_initializer(i);
    int d = pick(tensor->dims_size());
    if (d >= 0)
      tensor->set_dims(d, edgeValue(rng));
    break;
  }
  case 2: { // an attribute's value or type
    int n = pick(graph.node_size());
    if (n < 0 || graph.node(n).attribute_size() == 0)
      break;
    auto *attr = graph.mutable_node(n)->mutable_attribute(
        pick(graph.node(n).attribute_size()));
    switch (rng() % 4) {
    case 0:
      attr->set_i(edgeValue(rng));
      break;
    case 1:
      attr->set_f(rng() % 2 ? NAN : -1e30f);
      break;
    case 2:
      if (attr->ints_size())
        attr->set_ints(pick(attr->ints_size()), edgeValue(rng));
      else
        attr->add_ints(edgeValue(rng));
      break;
    default:
      attr->set_type(
          static_cast<onnx::AttributeProto::AttributeType>(rng() % 14));
    }
    break;
  }
  case 3: { // an op type
    static const char *types[] = {"Add",
                                  "MatMul",
                                  "Gemm",
                                  "Conv",
                                  "Relu",
                                  "Reshape",
                                  "MaxPool",
                                  "Softmax",
                                  "Transpose",
                                  "Concat",
                                  "Gather",
                                  "Slice",
                                  "Expand",
                                  "Where",
                                  "BatchNormalization",
                                  "LayerNormalization",
                                  "Flatten",
                                  "Squeeze",
                                  "Unsqueeze",
                                  "ReduceMean",
                                  "Dropout",
                                  "Cast"};
    int n = pick(graph.node_size());
    if (n >= 0)
      graph.mutable_node(n)->set_op_type(
          types[rng() % (sizeof(types) / sizeof(types[0]))]);
    break;
  }
  case 4: { // an input wired to another value
    int n = pick(graph.node_size()), m = pick(graph.node_size());
    if (n < 0 || graph.node(n).input_size() == 0)
      break;
    std::string value;
    if (graph.node(m).output_size() && (rng() % 2 || !graph.input_size()))
      value = graph.node(m).output(0);
    else if (graph.input_size())
      value = graph.input(pick(graph.input_size())).name();
    graph.mutable_node(n)->set_input(pick(graph.node(n).input_size()), value);
    break;
  }
  case 5: { // a node dropped
    int n = pick(graph.node_size());
    if (n >= 0)
      graph.mutable_node()->DeleteSubrange(n, 1);
    break;
  }
  case 6: { // a node duplicated
    int n = pick(graph.node_size());
    if (n >= 0)
      *graph.add_node() = graph.node(n);
    break;
  }
  default: { // an initializer's type or data
    int i = pick(graph.initializer_size());
    if (i < 0)
      break;
    auto *tensor = graph.mutable_initializer(i);
    if (rng() % 2)
      tensor->set_data_type(static_cast<int32_t>(rng() % 17));
    else if (tensor->has_raw_data())
      tensor->mutable_raw_data()->resize(rng() %
                                         (tensor->raw_data().size() + 9));
  }
  }
}

} // namespace

/// Structure-aware mutation: most of the time the input (after its batch
/// byte) is parsed as a ModelProto and changed by mutateModel; otherwise,
/// or where it does not parse, libFuzzer's byte mutations.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937_64 rng(seed);
  onnx::ModelProto model;
  if (size > 1 && rng() % 4 != 0 &&
      model.ParseFromArray(data + 1, static_cast<int>(size - 1))) {
    mutateModel(model, rng);
    std::string bytes;
    if (model.SerializeToString(&bytes) && bytes.size() + 1 <= maxSize) {
      data[0] = static_cast<uint8_t>(rng());
      std::memcpy(data + 1, bytes.data(), bytes.size());
      return bytes.size() + 1;
    }
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context;
  // Errors are expected; what matters is that they are errors.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  trainc::ImportOptions options;
  if (size > 1)
    options.batchSize = 1 + data[0] % 4, ++data, --size;
  std::string bytes(reinterpret_cast<const char *>(data), size);
  auto imported = trainc::importOnnxBytes(context, bytes, "fuzz.onnx", options);
  if (!imported) {
    llvm::consumeError(imported.takeError());
    return 0;
  }
  mlir::PassManager pm(&context);
  trainc::TrainingPipelineOptions training;
  trainc::buildTrainingPipeline(pm, training);
  (void)pm.run(*imported->module);
  return 0;
}
