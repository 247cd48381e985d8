//===- ImportTests.cpp - the ONNX importer on good and malformed input ----===//
//
// Malformed input must give one clear error naming the file and the node,
// never a crash; good input must give verified IR with every initializer's
// role visible.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"

#include "dialects/graph/GraphOps.h"
#include "lib/Import/NodeImporter.h"
#include "trainc/Import.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <catch2/catch.hpp>

#include <cctype>
#include <fstream>
#include <sstream>

using Catch::Matchers::Contains;
using trainc::test::ModelBuilder;

namespace {

/// The import error for `bytes`, or "" if the import succeeds.
std::string importError(const std::string &bytes,
                        trainc::ImportOptions options = {}) {
  mlir::MLIRContext context;
  auto result = trainc::importOnnxBytes(context, bytes, "test.onnx", options);
  if (result)
    return "";
  return llvm::toString(result.takeError());
}

std::string readModel(const std::string &name) {
  std::ifstream stream(std::string(TRAINC_MODELS_DIR) + "/" + name,
                       std::ios::binary);
  std::ostringstream contents;
  contents << stream.rdbuf();
  return contents.str();
}

std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  module.print(stream);
  return text;
}

/// The `graph.role` of the @forward argument named `name`, or "".
std::string roleOf(mlir::ModuleOp module, llvm::StringRef name) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto argName =
        forward.getArgAttrOfType<mlir::StringAttr>(i, trainc::graph::kNameAttrName);
    if (argName && argName.getValue() == name)
      return forward
          .getArgAttrOfType<mlir::StringAttr>(i, trainc::graph::kRoleAttrName)
          .getValue()
          .str();
  }
  return "";
}

/// x[batch, 4] -> Relu -> y: the smallest valid model.
ModelBuilder reluModel() {
  ModelBuilder builder;
  builder.input("x", {-1, 4}).output("y");
  builder.node("Relu", "relu", {"x"}, {"y"});
  return builder;
}

} // namespace

TEST_CASE("a minimal model imports", "[import]") {
  REQUIRE(importError(reluModel().bytes()) == "");
}

TEST_CASE("a missing file is reported by name", "[import][malformed]") {
  mlir::MLIRContext context;
  auto result = trainc::importOnnxFile(context, "/nonexistent/model.onnx", {});
  REQUIRE(!static_cast<bool>(result));
  CHECK_THAT(llvm::toString(result.takeError()),
             Contains("/nonexistent/model.onnx: cannot open the file"));
}

TEST_CASE("an empty file is not a model", "[import][malformed]") {
  CHECK_THAT(importError(""), Contains("test.onnx: the file is empty"));
}

TEST_CASE("bytes that are not protobuf are rejected", "[import][malformed]") {
  CHECK_THAT(importError("this is not an ONNX model\xff\xff\xff"),
             Contains("test.onnx: not a valid ONNX model"));
}

TEST_CASE("every truncation of a real model fails cleanly",
          "[import][malformed]") {
  std::string bytes = readModel("cnn_bn_opset15.onnx");
  REQUIRE(bytes.size() > 1000);
  // Cut at many points, including inside the weights and the node list.
  for (size_t length : {size_t(1), size_t(16), bytes.size() / 10,
                        bytes.size() / 3, bytes.size() / 2,
                        bytes.size() * 9 / 10, bytes.size() - 1}) {
    INFO("truncated to " << length << " of " << bytes.size() << " bytes");
    std::string message = importError(bytes.substr(0, length));
    CHECK_THAT(message, Contains("test.onnx: "));
  }
}

TEST_CASE("a cycle names its nodes", "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).output("b");
  builder.node("Add", "add", {"x", "b"}, {"a"});
  builder.node("Relu", "relu", {"a"}, {"b"});
  std::string message = importError(builder.bytes());
  CHECK_THAT(message, Contains("the graph has a cycle through nodes"));
  CHECK_THAT(message, Contains("add"));
  CHECK_THAT(message, Contains("relu"));
}

TEST_CASE("a dangling input names the node and the value",
          "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).output("y");
  builder.node("Add", "add", {"x", "nowhere"}, {"y"});
  CHECK_THAT(importError(builder.bytes()),
             Contains("node 'add' (Add) reads 'nowhere', which no node, graph "
                      "input or initializer defines"));
}

TEST_CASE("a shape mismatch names the node", "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 3}).floatInitializer("w", {4, 5}).output("y");
  builder.node("MatMul", "project", {"x", "w"}, {"y"});
  std::string message = importError(builder.bytes());
  CHECK_THAT(message, Contains("test.onnx: node 'project' (MatMul)"));
  CHECK_THAT(message, Contains("contraction sizes differ"));
}

TEST_CASE("all unsupported ops are listed in one error",
          "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).output("c");
  builder.node("FooBar", "f1", {"x"}, {"a"});
  builder.node("FooBar", "f2", {"a"}, {"b"});
  builder.node("Baz", "z1", {"b"}, {"c"});
  std::string message = importError(builder.bytes());
  CHECK_THAT(message, Contains("unsupported ONNX ops:"));
  CHECK_THAT(message, Contains("Baz (node z1)"));
  CHECK_THAT(message, Contains("FooBar (nodes f1, f2)"));
}

TEST_CASE("opsets outside 13-21 are refused", "[import][malformed]") {
  for (int64_t opset : {11, 22}) {
    ModelBuilder builder(opset);
    builder.input("x", {2, 4}).output("y");
    builder.node("Relu", "relu", {"x"}, {"y"});
    CHECK_THAT(importError(builder.bytes()),
               Contains("opset " + std::to_string(opset) + " is not supported"));
  }
}

TEST_CASE("a value produced twice is an error", "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).output("y");
  builder.node("Relu", "r1", {"x"}, {"y"});
  builder.node("Neg", "r2", {"x"}, {"y"});
  CHECK_THAT(importError(builder.bytes()),
             Contains("value 'y' is produced by both 'r1' and 'r2'"));
}

TEST_CASE("a declared output shape that disagrees is an error",
          "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).output("y", {2, 5});
  builder.node("Relu", "relu", {"x"}, {"y"});
  CHECK_THAT(importError(builder.bytes()),
             Contains("graph output 'y' is declared as 2x5 but the graph "
                      "computes 2x4"));
}

TEST_CASE("an initializer whose data does not fill its shape is an error",
          "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).floatInitializer("w", {4, 3}).output("y");
  builder.model().mutable_graph()->mutable_initializer(0)->add_dims(2);
  builder.node("MatMul", "mm", {"x", "w"}, {"y"});
  std::string message = importError(builder.bytes());
  CHECK_THAT(message, Contains("initializer 'w'"));
}

TEST_CASE("external tensor data is refused from bytes (no directory to read)",
          "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).floatInitializer("w", {4, 3}).output("y");
  onnx::TensorProto &w =
      *builder.model().mutable_graph()->mutable_initializer(0);
  w.clear_raw_data();
  w.clear_float_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto *location = w.add_external_data();
  location->set_key("location");
  location->set_value("/etc/passwd");
  builder.node("MatMul", "mm", {"x", "w"}, {"y"});
  std::string message = importError(builder.bytes());
  CHECK_THAT(message, Contains("test.onnx: the model keeps tensors in external "
                               "files, which are read only when the model is "
                               "read from a file"));
}

TEST_CASE("a non-constant Reshape target is an error", "[import][malformed]") {
  ModelBuilder builder;
  builder.input("x", {2, 4}).input("s", {2}).output("y");
  builder.node("Reshape", "reshape", {"x", "s"}, {"y"});
  CHECK_THAT(importError(builder.bytes()),
             Contains("node 'reshape' (Reshape): Reshape shape (input 1) must "
                      "be an integer constant"));
}

TEST_CASE("an invalid --freeze pattern is reported", "[import][malformed]") {
  trainc::ImportOptions options;
  options.freezePattern = "fc1(";
  CHECK_THAT(importError(reluModel().bytes(), options),
             Contains("invalid --freeze pattern 'fc1('"));
}

TEST_CASE("initializer roles: parameters, BatchNorm state, frozen constants",
          "[import][roles]") {
  mlir::MLIRContext context;
  trainc::ImportOptions options;
  options.freezePattern = "^conv1\\.";
  auto imported = trainc::importOnnxBytes(
      context, readModel("cnn_bn_opset15.onnx"), "cnn_bn_opset15.onnx", options);
  REQUIRE(static_cast<bool>(imported));
  mlir::ModuleOp module = *imported->module;
  CHECK(roleOf(module, "image") == "input");
  CHECK(roleOf(module, "conv1.weight") == "constant");
  CHECK(roleOf(module, "conv2.weight") == "parameter");
  CHECK(roleOf(module, "bn1.running_mean") == "state");
  CHECK(roleOf(module, "bn1.running_var") == "state");
  CHECK(roleOf(module, "bn1.weight") == "parameter");
  // Weights stay out of the IR but are kept for codegen.
  REQUIRE(imported->weights.count("conv2.weight"));
  CHECK(imported->weights.at("conv2.weight").dtype == "f32");
  CHECK(printed(module).find("dense<") == std::string::npos);
}

TEST_CASE("both BatchNorm training forms import as batch_norm_training",
          "[import][batchnorm]") {
  for (const char *file : {"cnn_bn_opset13.onnx", "cnn_bn_opset15.onnx"}) {
    INFO(file);
    mlir::MLIRContext context;
    auto imported =
        trainc::importOnnxBytes(context, readModel(file), file, {});
    REQUIRE(static_cast<bool>(imported));
    std::string text = printed(*imported->module);
    CHECK_THAT(text, Contains("graph.batch_norm_training"));
    CHECK(text.find("graph.batch_norm_inference") == std::string::npos);
  }
}

TEST_CASE("the batch binds to --batch and reshapes stay batch-relative",
          "[import][batch]") {
  mlir::MLIRContext context;
  trainc::ImportOptions options;
  options.batchSize = 8;
  auto imported =
      trainc::importOnnxBytes(context, readModel("mlp.onnx"), "mlp.onnx", options);
  REQUIRE(static_cast<bool>(imported));
  std::string text = printed(*imported->module);
  CHECK_THAT(text, Contains("tensor<8x1x28x28xf32>"));
  CHECK_THAT(text, Contains("shape = array<i64: 0, 784>"));
  CHECK_THAT(text, Contains("-> (tensor<8x10xf32>"));
}

TEST_CASE("transformer shape subgraphs fold into batch-relative reshapes",
          "[import][batch]") {
  for (int64_t batch : {3, 16}) {
    INFO("batch " << batch);
    mlir::MLIRContext context;
    trainc::ImportOptions options;
    options.batchSize = batch;
    auto imported = trainc::importOnnxBytes(
        context, readModel("transformer.onnx"), "transformer.onnx", options);
    REQUIRE(static_cast<bool>(imported));
    CHECK(imported->warnings.empty());
    std::string text = printed(*imported->module);
    // Shape/Gather/Concat chains are gone; heads and tokens are -1 entries.
    CHECK_THAT(text, Contains("shape = array<i64: 64, -1, 32>"));
    CHECK_THAT(text, Contains("shape = array<i64: -1, 128>"));
    CHECK_THAT(text, Contains("shape = array<i64: 64, -1, 128>"));
    CHECK(text.find("graph.constant dense<[") == std::string::npos);
  }
}

TEST_CASE("an opset-18 model with ReduceMean axes as an input imports",
          "[import][opset]") {
  mlir::MLIRContext context;
  auto imported = trainc::importOnnxBytes(context, readModel("opset18_mlp.onnx"),
                                          "opset18_mlp.onnx", {});
  REQUIRE(static_cast<bool>(imported));
  std::string text = printed(*imported->module);
  CHECK_THAT(text, Contains("graph.reduce_mean"));
  CHECK_THAT(text, Contains("axes = array<i64: 1>"));
  // The integer initializers were consumed at import time, not passed in.
  CHECK(roleOf(*imported->module, "mean.axes") == "");
}

TEST_CASE("docs/ONNX.md names every op the importer supports",
          "[import][docs]") {
  std::ifstream stream(std::string(TRAINC_MODELS_DIR) + "/../docs/ONNX.md");
  std::ostringstream contents;
  contents << stream.rdbuf();
  std::string text = contents.str();
  // The section "Supported operators", up to the next heading of its level.
  size_t begin = text.find("## Supported operators");
  REQUIRE(begin != std::string::npos);
  size_t end = text.find("\n## ", begin + 1);
  std::string section = text.substr(begin, end - begin);
  auto isWordChar = [](char c) { return std::isalnum(c) || c == '_'; };
  for (const auto &entry : trainc::import::handlerTable()) {
    std::string op = entry.getKey().str();
    if (size_t domain = op.rfind("::"); domain != std::string::npos)
      op = op.substr(domain + 2); // "ai.onnx.preview.training::Adam"
    bool named = false;
    for (size_t at = section.find(op); at != std::string::npos && !named;
         at = section.find(op, at + 1))
      named = (at == 0 || !isWordChar(section[at - 1])) &&
              (at + op.size() == section.size() ||
               !isWordChar(section[at + op.size()]));
    INFO(op);
    CHECK(named);
  }
}
