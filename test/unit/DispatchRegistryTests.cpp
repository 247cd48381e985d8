//===- DispatchRegistryTests.cpp - compiler and runtime agree on kernels --===//
//
// Every (kernel, backend) the dispatch registry can choose must exist in
// the runtime's kernel table, and the reference backend must cover every
// graph op, or a compiled model would fail at its first launch.
//
//===----------------------------------------------------------------------===//
#include "dialects/graph/GraphOps.h"
#include "dialects/kernel/BackendRegistry.h"
#include "lib/Conversion/GeneratedKernels.h"
#include "lib/Runtime/Launch.h"

#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

TEST_CASE("every backend rule has a runtime kernel", "[dispatch]") {
  for (const trainc::kernel::BackendRule &rule :
       trainc::kernel::backendRules()) {
    if (rule.kernel == "*")
      continue;
    INFO(rule.kernel.str() << " on " << rule.backend.str());
    // Generated kernels are compiled into the model, not looked up; the
    // CUDA target's library kernels (cuBLAS, cuDNN) are in
    // libtrainc_rt_cuda.a (cuda_target.py checks them).
    if (rule.backend != "generated" &&
        trainc::kernel::backendRunsOn(rule.backend, "cuda"))
      continue;
    if (rule.backend == "generated") {
      CHECK(trainc::conversion::hasGeneratedKernel(rule.kernel));
    } else if (rule.backend == "mpi") {
      // --trainc-bucket-all-reduces turns each graph.all_reduce into a
      // bucket's start and wait (libtrainc_rt_mpi.a, linked whole here).
      CHECK(rule.kernel == "graph.all_reduce");
      CHECK(trainc::rt::findKernel("comm.all_reduce_start", "mpi"));
      CHECK(trainc::rt::findKernel("comm.all_reduce_wait", "mpi"));
    } else
      CHECK(trainc::rt::findKernel(rule.kernel.str(), rule.backend.str()));
  }
}

TEST_CASE("every generated kernel can be dispatched", "[dispatch]") {
  for (llvm::StringRef kernel : trainc::conversion::generatedKernels()) {
    INFO(kernel.str());
    CHECK(llvm::is_contained(trainc::kernel::backendsFor(kernel), "generated"));
  }
}

TEST_CASE("the reference backend runs every graph op and runtime.copy",
          "[dispatch]") {
  mlir::MLIRContext context;
  context.loadDialect<trainc::graph::GraphDialect>();
  int ops = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    llvm::StringRef op = name.getStringRef();
    // Dropout never reaches the runtime: autodiff turns it into random_mask;
    // an all-reduce is communication, the mpi backend's alone.
    if (!op.starts_with("graph.") || op == "graph.dropout" ||
        op == "graph.all_reduce")
      continue;
    ++ops;
    INFO(op.str());
    CHECK(trainc::rt::findKernel(op.str(), "reference"));
  }
  CHECK(ops > 60);
  CHECK(trainc::rt::findKernel("runtime.copy", "reference"));
}
