//===- ExportOnnx.cpp - the trained model as an ONNX inference model ------===//
//
// The same graph as the ONNX file the model was compiled from, with the
// trained parameters and BatchNorm statistics as initializers, BatchNorm in
// inference mode (running statistics, one output) and Dropout replaced by
// Identity, so any ONNX runtime can deploy it. Written atomically.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"
#include "tools/trainc/ModelLibrary.h"

#include <onnx/onnx_pb.h>
#include <spdlog/spdlog.h>

#include <fstream>

namespace trainc::cli {

/// Drops a node's outputs after the first.
static void keepFirstOutput(onnx::NodeProto &node) {
  while (node.output_size() > 1)
    node.mutable_output()->RemoveLast();
}

int exportTrainedModel(const ModelApi &api, trainc_session *session,
                       const TrainCommandOptions &options) {
  if (llvm::StringRef(options.model).ends_with(".so")) {
    spdlog::error("--save needs the ONNX model: train from the .onnx file");
    return 1;
  }
  onnx::ModelProto model;
  {
    std::ifstream stream(options.model, std::ios::binary);
    if (!stream || !model.ParseFromIstream(&stream)) {
      spdlog::error("--save: cannot read '{}'", options.model);
      return 1;
    }
  }
  onnx::GraphProto &graph = *model.mutable_graph();
  int updated = 0;
  for (onnx::TensorProto &initializer : *graph.mutable_initializer()) {
    if (initializer.data_type() != onnx::TensorProto::FLOAT)
      continue;
    std::vector<int64_t> shape(initializer.dims().begin(), initializer.dims().end());
    size_t count = 1;
    for (int64_t d : shape)
      count *= d;
    std::vector<float> values(count);
    trainc_tensor tensor{TRAINC_FLOAT32, static_cast<int32_t>(shape.size()),
                         shape.data(), values.data()};
    if (api.getParameter(session, initializer.name().c_str(), &tensor) !=
        TRAINC_OK)
      continue; // not trained (e.g. an unused initializer)
    initializer.clear_float_data();
    initializer.set_raw_data(values.data(), count * sizeof(float));
    ++updated;
  }
  int64_t opset = 0;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (node.op_type() == "BatchNormalization") {
      keepFirstOutput(node);
      for (auto &attribute : *node.mutable_attribute())
        if (attribute.name() == "training_mode")
          attribute.set_i(0);
    } else if (node.op_type() == "Dropout") {
      // Identity(data): the ratio and training-mode inputs go.
      std::string input = node.input(0);
      node.clear_input();
      node.add_input(input);
      keepFirstOutput(node);
      node.clear_attribute();
      node.set_op_type("Identity");
    }
  }
  (void)opset;
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    spdlog::error("--save: cannot serialize the model");
    return 1;
  }
  std::string error = writeFileAtomically(options.save, bytes);
  if (!error.empty()) {
    spdlog::error("--save: {}", error);
    return 1;
  }
  spdlog::info("wrote {} ({} trained initializers)", options.save, updated);
  return 0;
}

} // namespace trainc::cli
