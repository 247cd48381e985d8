//===- OpFactsTests.cpp - the facts every graph op declares in ODS --------===//
//
// --trainc-amp places casts by the cast class each op declares in ODS
// (dialects/graph/CastClass.td). An op without one would stop the pass; an
// op with two would be placed by whichever trait is looked up first. Every
// op also has a cost (CostInterface.td), which --stats, --profile and
// rematerialization read.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

/// Every registered op of the graph dialect (loaded into `context`).
static std::vector<mlir::RegisteredOperationName>
graphOps(mlir::MLIRContext &context) {
  context.loadDialect<trainc::graph::GraphDialect>();
  std::vector<mlir::RegisteredOperationName> ops;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getStringRef().starts_with("graph."))
      ops.push_back(name);
  return ops;
}

TEST_CASE("every graph op declares exactly one cast class", "[amp]") {
  using namespace trainc::graph::OpTrait;
  mlir::MLIRContext context;
  auto ops = graphOps(context);
  for (mlir::RegisteredOperationName name : ops) {
    INFO(name.getStringRef().str());
    int classes = name.hasTrait<CastLow>() + name.hasTrait<CastFp32>() +
                  name.hasTrait<CastFollow>() +
                  name.hasTrait<CastActivations>() + name.hasTrait<CastFixed>();
    CHECK(classes == 1);
  }
  CHECK(ops.size() > 60);
}

TEST_CASE("products run low, statistics and updates in f32", "[amp]") {
  using namespace trainc::graph::OpTrait;
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  auto classOf = [&](llvm::StringRef op) {
    auto name = mlir::RegisteredOperationName::lookup(op, &context);
    REQUIRE(name);
    return name->hasTrait<CastLow>()           ? "low"
           : name->hasTrait<CastFp32>()        ? "fp32"
           : name->hasTrait<CastFollow>()      ? "follow"
           : name->hasTrait<CastActivations>() ? "activations"
                                               : "other";
  };
  for (llvm::StringRef op :
       {"graph.conv", "graph.matmul", "graph.gemm", "graph.conv_backward_input",
        "graph.conv_backward_weight"})
    CHECK(classOf(op) == std::string("low"));
  for (llvm::StringRef op :
       {"graph.softmax", "graph.log_softmax", "graph.softmax_cross_entropy",
        "graph.batch_norm_inference", "graph.exp", "graph.log", "graph.pow",
        "graph.erf", "graph.reduce_sum", "graph.sgd_update",
        "graph.adam_update"})
    CHECK(classOf(op) == std::string("fp32"));
  for (llvm::StringRef op : {"graph.relu", "graph.add", "graph.reshape",
                             "graph.transpose", "graph.max_pool"})
    CHECK(classOf(op) == std::string("follow"));
  for (llvm::StringRef op :
       {"graph.batch_norm_training", "graph.batch_norm_training_backward",
        "graph.layer_norm", "graph.layer_norm_backward"})
    CHECK(classOf(op) == std::string("activations"));
}

TEST_CASE("every graph op has a cost", "[cost]") {
  mlir::MLIRContext context;
  auto ops = graphOps(context);
  for (mlir::RegisteredOperationName name : ops) {
    INFO(name.getStringRef().str());
    CHECK(name.hasInterface<trainc::graph::CostOpInterface>());
  }
  CHECK(ops.size() > 60);
}

TEST_CASE("costs follow from shapes and attributes", "[cost]") {
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  mlir::Builder b(&context);
  auto f32 = [&](llvm::ArrayRef<int64_t> shape) -> mlir::Type {
    return mlir::RankedTensorType::get(shape, b.getF32Type());
  };
  auto bf16 = [&](llvm::ArrayRef<int64_t> shape) -> mlir::Type {
    return mlir::RankedTensorType::get(shape, b.getBF16Type());
  };
  auto cost = [&](llvm::StringRef op, llvm::ArrayRef<mlir::Type> operands,
                  llvm::ArrayRef<mlir::Type> results,
                  mlir::DictionaryAttr attributes = {}) {
    auto result = trainc::graph::estimateCost(mlir::OperationName(op, &context),
                                              operands, results, attributes);
    REQUIRE(result);
    return *result;
  };
  // [2, 3] x [3, 4]: 8 outputs of 3 multiply-adds; bytes of all three.
  trainc::graph::Cost matmul =
      cost("graph.matmul", {f32({2, 3}), f32({3, 4})}, {f32({2, 4})});
  CHECK(matmul.flops == 2 * 8 * 3);
  CHECK(matmul.bytes == 4 * (6 + 12 + 8));
  // gemm with trans_a reads K from a's rows.
  CHECK(cost("graph.gemm", {f32({5, 2}), f32({5, 4})}, {f32({2, 4})},
             b.getDictionaryAttr(
                 {b.getNamedAttr("trans_a", b.getBoolAttr(true))}))
            .flops == 2 * 8 * 5);
  // A 3x3 convolution of 8 to 16 channels on 2 images of 10x10 outputs,
  // and its gradients: the same multiply-adds, bf16 bytes half of f32's.
  mlir::Type x = f32({2, 8, 12, 12}), w = f32({16, 8, 3, 3}),
             y = f32({2, 16, 10, 10});
  double convFlops = 2.0 * 2 * 16 * 10 * 10 * 8 * 3 * 3;
  CHECK(cost("graph.conv", {x, w}, {y}).flops == convFlops);
  CHECK(cost("graph.conv_backward_input", {y, w}, {x}).flops == convFlops);
  CHECK(cost("graph.conv_backward_weight", {y, x}, {w}).flops == convFlops);
  CHECK(cost("graph.conv", {bf16({2, 8, 12, 12}), bf16({16, 8, 3, 3})},
             {bf16({2, 16, 10, 10})})
            .bytes == cost("graph.conv", {x, w}, {y}).bytes / 2);
  // Pooling visits each window tap once per output; data movement and
  // elementwise ops.
  CHECK(cost("graph.max_pool", {f32({1, 2, 4, 4})}, {f32({1, 2, 2, 2})},
             b.getDictionaryAttr({b.getNamedAttr(
                 "kernel_shape", b.getDenseI64ArrayAttr({2, 2}))}))
            .flops == 8 * 4);
  CHECK(cost("graph.transpose", {f32({3, 5})}, {f32({5, 3})}).flops == 0);
  CHECK(cost("graph.relu", {f32({3, 5})}, {f32({3, 5})}).flops == 15);
  CHECK(!trainc::graph::estimateCost(
      mlir::OperationName("runtime.copy", &context), {}, {}, {}));
}
