//===- CastClassTests.cpp - every graph op declares one cast class --------===//
//
// --trainc-amp places casts by the cast class each op declares in ODS
// (dialects/graph/CastClass.td). An op without one would stop the pass; an
// op with two would be placed by whichever trait is looked up first.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"

#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

TEST_CASE("every graph op declares exactly one cast class", "[amp]") {
  using namespace trainc::graph::OpTrait;
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  int ops = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (!name.getStringRef().starts_with("graph."))
      continue;
    ++ops;
    INFO(name.getStringRef().str());
    int classes = name.hasTrait<CastLow>() + name.hasTrait<CastFp32>() +
                  name.hasTrait<CastFollow>() + name.hasTrait<CastFixed>();
    CHECK(classes == 1);
  }
  CHECK(ops > 60);
}

TEST_CASE("products run low, statistics and updates in f32", "[amp]") {
  using namespace trainc::graph::OpTrait;
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  auto classOf = [&](llvm::StringRef op) {
    auto name = mlir::RegisteredOperationName::lookup(op, &context);
    REQUIRE(name);
    return name->hasTrait<CastLow>()      ? "low"
           : name->hasTrait<CastFp32>()   ? "fp32"
           : name->hasTrait<CastFollow>() ? "follow"
                                          : "other";
  };
  for (llvm::StringRef op :
       {"graph.conv", "graph.matmul", "graph.gemm", "graph.conv_backward_input",
        "graph.conv_backward_weight"})
    CHECK(classOf(op) == std::string("low"));
  for (llvm::StringRef op :
       {"graph.softmax", "graph.log_softmax", "graph.softmax_cross_entropy",
        "graph.batch_norm_training", "graph.layer_norm", "graph.exp",
        "graph.log", "graph.pow", "graph.erf", "graph.reduce_sum",
        "graph.sgd_update", "graph.adam_update"})
    CHECK(classOf(op) == std::string("fp32"));
  for (llvm::StringRef op : {"graph.relu", "graph.add", "graph.reshape",
                             "graph.transpose", "graph.max_pool"})
    CHECK(classOf(op) == std::string("follow"));
}
