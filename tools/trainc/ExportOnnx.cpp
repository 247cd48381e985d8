//===- ExportOnnx.cpp - the inference graph a model library exports -------===//
//
// At compile time: the ONNX file the model comes from, turned into an
// inference model (BatchNorm in inference mode with one output, Dropout as
// Identity) and stripped of the initializers the session trains, which
// trainc_export_onnx (lib/Runtime/OnnxExport.cpp) appends from the
// session's current values; the other tensors stored as external data are
// read in. The result is embedded in the .so.
//
//===----------------------------------------------------------------------===//
#include "tools/trainc/Commands.h"
#include "trainc/Import.h"

#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <fstream>

namespace trainc::cli {

/// Drops a node's outputs after the first.
static void keepFirstOutput(onnx::NodeProto &node) {
  while (node.output_size() > 1)
    node.mutable_output()->RemoveLast();
}

std::optional<std::string>
inferenceModelSkeleton(const std::string &onnxPath,
                       const std::set<std::string> &trained,
                       std::string &error) {
  onnx::ModelProto model;
  {
    std::ifstream stream(onnxPath, std::ios::binary);
    if (!stream || !model.ParseFromIstream(&stream)) {
      error = "cannot read '" + onnxPath + "'";
      return std::nullopt;
    }
  }
  onnx::GraphProto &graph = *model.mutable_graph();
  auto *initializers = graph.mutable_initializer();
  for (int i = initializers->size() - 1; i >= 0; --i)
    if (trained.count(initializers->Get(i).name()))
      initializers->DeleteSubrange(i, 1);
  // The exported model is self-contained: the untrained tensors stored
  // as external data (constants, frozen weights) are read in.
  llvm::SmallString<256> directory(onnxPath);
  llvm::sys::path::remove_filename(directory);
  if (llvm::Error failure =
          loadExternalData(model, directory.empty() ? "." : directory.str())) {
    error = "'" + onnxPath + "': " + llvm::toString(std::move(failure));
    return std::nullopt;
  }
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
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    error = "cannot serialize the inference model of '" + onnxPath + "'";
    return std::nullopt;
  }
  return bytes;
}

} // namespace trainc::cli
